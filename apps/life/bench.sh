#!/usr/bin/env bash
# Game of Life benchmarks, written as markdown to results/life/bench.md (JSON lines beside it):
#   kernel:  the bit kernel on one core (`--variant serial`), cell updates per second
#   fig9:    the DPS paper's Figure 9, speedup of `overlap` over `simple` on 1 and 2 ranks,
#            one generation of each schedule in turn in the same job (`--variant compare`)
#   eff:     2 ranks at 16384², parallel efficiency against the serial kernel (floor 0.85), two
#            ways: timed on rank 0 in the same job, in blocks alternating with the parallel
#            generations (`--compare-serial`), and as separate jobs alternating $EFF_REPS times
#            (`--variant serial`, then 2 ranks), ratio of the medians
#   table2:  the DPS paper's Table 2, region-service calls from a client rank while the
#            simulation runs on 2 ranks (5620² world; blocks 40x40, 400x400, 400x2400)
# The machine is shared: runs are short, and every ratio comes from one job.
# Sizes can be lowered for a quick run: SIZES="1024 4096" BIG=4096 apps/life/bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=${SIZES:-"1024 4096 16384"} BIG=${BIG:-16384} VIEW_GENS=${VIEW_GENS:-1000} EFF_REPS=${EFF_REPS:-3}
out=results/life; mkdir -p "$out"
bin=target/release/dps-life
cargo build --release --quiet -p dps-life
run() { timeout -k 5 600 scripts/mpirun "$@"; }
# Generations per size: about 1/3 s of work per schedule at 3e10 cell updates/s.
gens() { echo $(( 10000000000 / ($1 * $1) < 20 ? 20 : 10000000000 / ($1 * $1) )); }

"$bin" --variant serial --random "$BIG" "$BIG" --generations 20 --warmup 2 --json > "$out/kernel.jsonl"
: > "$out/fig9.jsonl"
for ranks in 1 2; do
  for n in $SIZES; do
    run -n "$ranks" "$bin" --variant compare --random "$n" "$n" --generations "$(gens "$n")" --warmup 5 \
      --json >> "$out/fig9.jsonl"
  done
done
run -n 2 "$bin" --variant overlap --random "$BIG" "$BIG" --generations 30 --warmup 2 --compare-serial --verify \
  --json > "$out/eff.jsonl"
: > "$out/eff_jobs.jsonl"
for _ in $(seq "$EFF_REPS"); do
  "$bin" --variant serial --random "$BIG" "$BIG" --generations 30 --warmup 2 --json >> "$out/eff_jobs.jsonl"
  run -n 2 "$bin" --variant overlap --random "$BIG" "$BIG" --generations 30 --warmup 2 --json >> "$out/eff_jobs.jsonl"
done
: > "$out/table2.jsonl"
for block in 40x40 400x400 400x2400; do
  run -n 3 "$bin" --variant overlap --random 5620 5620 --generations "$VIEW_GENS" --view "$block" \
    --view-period-ms 1 --json >> "$out/table2.jsonl"
done

python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def rows(name): return [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()]
k = rows("kernel")[0]
L = [f"### Bit kernel, one core\n",
     f"{k['width']}x{k['height']}, {k['generations']} generations: **{k['cups']:.3g} cell updates/s** "
     f"(floor 2e10; a tuned C bit-parallel kernel: about 2.7e10)\n",
     "### Figure 9: speedup of `overlap` over `simple`\n",
     "Median time per generation, one generation of each schedule in turn in one job; one band per rank.\n",
     "| world | ranks | generations | simple (µs) | overlap (µs) | speedup |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
for r in rows("fig9"):
    L.append(f"| {r['width']}² | {r['ranks']} | {r['generations']} | {r['simple_iteration_median_s']*1e6:.1f} "
             f"| {r['overlap_iteration_median_s']*1e6:.1f} | {r['speedup']:.3f} |")
e = rows("eff")[0]
L += ["", "### Parallel efficiency, 2 ranks\n",
      f"In one job, {e['width']}², {e['generations']} generations: overlap on 2 ranks, median {e['parallel_iteration_median_s']*1e3:.2f} ms "
      f"per generation; the serial kernel on rank 0, in blocks alternating with the parallel generations, {e['serial_iteration_median_s']*1e3:.2f} ms "
      f"({e['serial_cups']:.3g} cups): **efficiency {e['efficiency']:.3f}** (floor 0.85), verified: {e['verified']}\n",
      ]
jobs = rows("eff_jobs")
ser = statistics.median(r["cups"] for r in jobs if r["variant"] == "serial")
par = statistics.median(r["cups"] for r in jobs if r["variant"] == "overlap")
L += [f"Separate jobs, alternating {len(jobs) // 2} times: serial kernel {ser:.3g} cups, 2 ranks {par:.3g} cups (medians): "
      f"**efficiency {par / ser / 2:.3f}**\n",
      "### Table 2: iteration time with and without region-service calls\n",
      "5620² world on 2 band ranks, client on a third rank calling every 1 ms (paper: 5620² on 4 machines, "
      "1000 ms per iteration without calls)\n",
      "| block | calls | call median (ms) | of which reading (ms) | iteration without calls (ms) | with calls (ms) | slowdown |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
for r in rows("table2"):
    wo, wi = r["iteration_without_calls_s"] * 1e3, r["iteration_with_calls_s"] * 1e3
    L.append(f"| {r['view_block']} | {r['view_calls']} | {r['view_call_median_s']*1e3:.3f} | {r['view_read_median_s']*1e3:.3f} "
             f"| {wo:.3f} | {wi:.3f} | {wi/wo:.3f} |")
open(f"{out}/bench.md", "w").write("\n".join(L) + "\n")
print("\n".join(L))
PY
