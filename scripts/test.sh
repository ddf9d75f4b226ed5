#!/usr/bin/env bash
# The test command: installs what is missing, checks formatting and lints, then runs every
# test: unit and doc tests, and the MPI integration tests on 1, 2 and 4 ranks (each launched
# through scripts/mpirun under a timeout, so a hang fails its test instead of stalling).
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_SLURM=1 scripts/setup.sh   # Slurm and munge for the Slurm integration test
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
cargo fmt --all -- --check
# The minimum Rust version Cargo.toml declares (rust-version) must build the workspace.
msrv=$(sed -n 's/^rust-version = "\([0-9.]*\)".*/\1/p' Cargo.toml)
rustup toolchain list | grep -q "^$msrv-" || rustup toolchain install "$msrv" --profile minimal
cargo "+$msrv" check --workspace --all-targets --quiet
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
