#!/usr/bin/env bash
# Installs opencv-python-headless (and numpy) from PyPI into a virtual environment at
# $DPS_OPENCV_DIR (default ~/.cache/dps/opencv), once, and prints the path of its python.
# A second run takes a moment. Exit 1, with one line on stderr, where it cannot be
# installed (no python3 venv, no PyPI).
set -euo pipefail
dir=${DPS_OPENCV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dps/opencv}
py=$dir/bin/python
if ! "$py" -c 'import cv2, numpy' 2>/dev/null; then
  echo "opencv.sh: installing opencv-python-headless from PyPI into $dir (once)" >&2
  if ! { python3 -m venv "$dir" && "$dir/bin/pip" install --quiet opencv-python-headless numpy; } >&2 \
     || ! "$py" -c 'import cv2, numpy' 2>/dev/null; then
    echo "opencv.sh: cannot install opencv-python-headless from PyPI into $dir" >&2
    exit 1
  fi
fi
echo "$py"
