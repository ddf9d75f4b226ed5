#!/usr/bin/env bash
# Game of Life benchmarks, written as markdown to results/life/bench.md (JSON lines beside it):
#   kernel:  the bit kernel on one core (`--variant serial`), cell updates per second
#   fig9:    the DPS paper's Figure 9, speedup of `overlap` over `simple` on 1 and 2 ranks,
#            one generation of each schedule in turn in the same job (`--variant compare`,
#            `--depth 1`: one exchange per generation, as in the paper)
#   eff:     2 ranks at 16384², parallel efficiency against the serial kernel (floor 0.85), for
#            the paper's schedule (1 generation per step, 1 step per call) and the defaults (8
#            generations per exchange and pass, 8 steps per call), two ways: timed on rank 0
#            in the same job, alternating with the parallel calls (`--compare-serial`), and as
#            separate jobs alternating $EFF_REPS times (`--variant serial`, then 2 ranks),
#            ratio of the medians
#   table2:  the DPS paper's Table 2, region-service calls from a client rank while the
#            simulation runs on 2 ranks (5620² world, one generation per call as in the paper;
#            blocks 40x40, 400x400, 400x2400)
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

: > "$out/kernel.jsonl"
for depth in 1 8; do
  "$bin" --variant serial --depth "$depth" --random "$BIG" "$BIG" --generations 48 --warmup 8 --json >> "$out/kernel.jsonl"
done
: > "$out/fig9.jsonl"
for ranks in 1 2; do
  for n in $SIZES; do
    run -n "$ranks" "$bin" --variant compare --depth 1 --random "$n" "$n" --generations "$(gens "$n")" --warmup 5 \
      --json >> "$out/fig9.jsonl"
  done
done
: > "$out/eff.jsonl"
for schedule in "1 1" "8 8"; do
  read -r depth steps <<< "$schedule"
  opts=(--depth "$depth" --steps-per-call "$steps" --random "$BIG" "$BIG" --generations 512 --warmup 8 --json)
  run -n 2 "$bin" --variant overlap "${opts[@]}" --compare-serial --verify >> "$out/eff.jsonl"
  jobs="$out/eff_jobs_${depth}_${steps}.jsonl"; : > "$jobs"
  for _ in $(seq "$EFF_REPS"); do
    "$bin" --variant serial "${opts[@]}" >> "$jobs"
    run -n 2 "$bin" --variant overlap "${opts[@]}" >> "$jobs"
  done
done
: > "$out/table2.jsonl"
for block in 40x40 400x400 400x2400; do
  run -n 3 "$bin" --variant overlap --depth 1 --steps-per-call 1 --random 5620 5620 --generations "$VIEW_GENS" --view "$block" \
    --view-period-ms 1 --json >> "$out/table2.jsonl"
done

python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def rows(name): return [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()]
L = ["### Bit kernel, one core\n",
     "Floor 2e10 cell updates/s; a tuned C bit-parallel kernel: about 2.7e10.\n",
     "| world | generations | generations per pass | cell updates/s |", "| --- | ---: | ---: | ---: |"]
for k in rows("kernel"):
    L.append(f"| {k['width']}² | {k['generations']} | {k['depth']} | **{k['cups']:.3g}** |")
L += ["",
     "### Figure 9: speedup of `overlap` over `simple`\n",
     "Median time per generation, one generation of each schedule in turn in one job; one band per rank.\n",
     "| world | ranks | generations | simple (µs) | overlap (µs) | speedup |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
for r in rows("fig9"):
    L.append(f"| {r['width']}² | {r['ranks']} | {r['generations']} | {r['simple_iteration_median_s']*1e6:.1f} "
             f"| {r['overlap_iteration_median_s']*1e6:.1f} | {r['speedup']:.3f} |")
L += ["", "### Parallel efficiency, 2 ranks (floor 0.85)\n",
      "Overlap on 2 ranks against the serial kernel stepping as many generations per pass. In one job: the serial "
      "kernel on rank 0 alternating with the parallel calls in blocks of at least 64 generations (medians of "
      "per-generation times). "
      "Separate jobs: serial and 2-rank jobs alternating, ratio of the median cell updates/s.\n",
      "| world | generations per step | steps per call | parallel (ms/gen) | serial (ms/gen) | efficiency, one job "
      "| verified | serial jobs (cups) | 2-rank jobs (cups) | efficiency, separate jobs |",
      "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
for e in rows("eff"):
    same = rows(f"eff_jobs_{e['depth']}_{e['steps_per_call']}")
    ser = statistics.median(r["cups"] for r in same if r["variant"] == "serial")
    par = statistics.median(r["cups"] for r in same if r["variant"] == "overlap")
    L.append(f"| {e['width']}² | {e['depth']} | {e['steps_per_call']} | {e['parallel_iteration_median_s']*1e3:.2f} | {e['serial_iteration_median_s']*1e3:.2f} "
             f"| **{e['efficiency']:.3f}** | {e['verified']} | {ser:.3g} | {par:.3g} | **{par / ser / 2:.3f}** |")
L += ["",
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
