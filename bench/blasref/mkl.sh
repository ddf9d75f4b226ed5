#!/usr/bin/env bash
# Installs Intel MKL from PyPI (package `mkl`, about 1 GB with its OpenMP runtime) into a
# virtual environment at $DPS_MKL_DIR (default ~/.cache/dps/mkl), once, and prints the path
# of its libmkl_rt. A second run takes a moment. Exit 1, with one line on stderr, where it
# cannot be installed (no python3 venv, no PyPI).
set -euo pipefail
dir=${DPS_MKL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dps/mkl}
# `|| true`: before the first install there is no lib directory, and under pipefail
# the failing find would end the script silently.
find_lib() { { find "$dir/lib" -maxdepth 1 -name 'libmkl_rt.so.*' 2>/dev/null || true; } | sort | tail -n 1; }
lib=$(find_lib)
if [[ -z $lib ]]; then
  echo "mkl.sh: installing Intel MKL from PyPI into $dir (once)" >&2
  if ! { python3 -m venv "$dir" && "$dir/bin/pip" install --quiet mkl; } >&2; then
    echo "mkl.sh: cannot install MKL from PyPI into $dir" >&2
    exit 1
  fi
  lib=$(find_lib)
  [[ -n $lib ]] || { echo "mkl.sh: the mkl package installed no libmkl_rt in $dir/lib" >&2; exit 1; }
fi
echo "$lib"
