#!/usr/bin/env bash
# Installs every system package the project needs on Debian 12 (idempotent: about a
# second when everything is already there). WITH_SLURM=1 adds Slurm and munge.
set -euo pipefail
# libhwloc-dev and libudev-dev: hwlocality links hwloc statically, and static hwloc needs libudev.
# strace: dps-filter's tests make a rename fail with it (tests/replace.rs).
# iproute2 (ip, tc): the emulated cluster's namespaces, links and shaping (slurm/cluster.sh).
# python3-venv: Intel MKL and OpenCV come from PyPI into virtual environments (bench/).
PKGS=(openmpi-bin libopenmpi-dev libopenblas-dev libhwloc-dev libudev-dev libclang1-14 libclang-common-14-dev
      build-essential pkg-config fonts-dejavu-core strace iproute2 python3-venv)
[[ "${WITH_SLURM:-0}" == 1 ]] && PKGS+=(slurmctld slurmd slurm-client munge)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) == 0 ]] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Intel MKL, the dense apps' BLAS where it is installed (dense/src/library.rs): once from
# PyPI; without it (no network, or DPS_BLAS=openblas) they run on OpenBLAS.
if [[ ${DPS_BLAS:-auto} != openblas ]] && ! "$(dirname "$0")/../bench/blasref/mkl.sh" > /dev/null; then
  echo "setup: Intel MKL could not be installed: the dense apps will call OpenBLAS" >&2
fi
