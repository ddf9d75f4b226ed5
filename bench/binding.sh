#!/usr/bin/env bash
# Binding on or off: 2-rank LU 8192 (stream) and Life 16384² (--compare-serial), alternating
# unbound and bound jobs (REPS pairs, default 4), medians and ranges written to
# results/binding/summary.md (raw records in results/binding/runs.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p dps-lu -p dps-life
out=results/binding; mkdir -p "$out"; : > "$out/runs.jsonl"
run() { timeout -k 5 300 scripts/mpirun -n 2 "$@"; }
for _ in $(seq "${REPS:-4}"); do
  for bind in none cores; do
    run target/release/dps-lu --n 8192 --variant stream --bind "$bind" --json | tail -n 1 >> "$out/runs.jsonl"
    run target/release/dps-life --random 16384 16384 --generations 256 --compare-serial --bind "$bind" --json \
      | tail -n 1 >> "$out/runs.jsonl"
  done
done
python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1] + "/runs.jsonl")]
print("| app | rate | binding none: median (range) | binding cores: median (range) |")
print("| --- | --- | ---: | ---: |")
for app, key, scale, unit in [("lu", "gflops", 1, "GFLOP/s"), ("life", "cups", 1e9, "10⁹ cell updates/s"),
                              ("life", "efficiency", 1, "efficiency against the serial kernel")]:
    cells = []
    for bound in (False, True):
        xs = [r[key] / scale for r in runs if r["app"] == app and (r["binding"] != "none") == bound]
        cells.append(f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})")
    print(f"| {app} | {unit} | {cells[0]} | {cells[1]} |")
PY
