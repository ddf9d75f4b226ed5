#!/usr/bin/env bash
# The main job: builds everything in release mode and runs the local reproduction at a size
# that fits a laptop: the runtime's examples on 1, 2 and 4 ranks, the transport benchmark
# (DPS against raw MPI), the overlap benchmark, and the linear-algebra benchmarks (block
# matmul and LU against OpenBLAS, the DPS paper's Table 1). Writes results/report.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --workspace --bins --examples --quiet

out=results
mkdir -p "$out"
report="$out/report.md"
run() { timeout -k 5 600 scripts/mpirun "$@"; }

{
  echo "# DPS main job ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(hostname))"
  echo
  echo "## Tutorial: uppercase"
  echo '```'
  for n in 1 2 4; do echo "$n ranks: $(run -n "$n" target/release/examples/uppercase --map 'all*2')"; done
  echo '```'
  echo
  echo "## Flood: 10^6 small tokens, window 256"
  echo '```'
  for n in 1 2 4; do run -n "$n" target/release/examples/flood --tokens 1000000 --window 256; done
  echo '```'
  echo "(4 ranks on 2 cores are oversubscribed: correctness, not speed.)"
  echo
  echo "## Transport: DPS against raw MPI, 2 ranks"
  echo
  target/release/dps-bench transport --json | tee "$out/transport.jsonl" | target/release/dps-bench table
  echo
  echo "## Overlap: pipelined graph against communication-then-computation, 2 ranks"
  echo
  target/release/dps-bench overlap --json | tee "$out/overlap.jsonl" | target/release/dps-bench table
  echo
  echo "## Linear algebra: DPS against OpenBLAS/LAPACK, and the DPS paper's Table 1"
  echo
  REPS=1 bench/linalg.sh 2>&1
} > "$report.tmp"
mv "$report.tmp" "$report"
cat "$report"
echo "main job: wrote $report"
