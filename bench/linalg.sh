#!/usr/bin/env bash
# Linear-algebra benchmarks, each DPS run side by side with its OpenBLAS/LAPACK reference in
# the same invocation (alternating, medians), written to results/linalg/:
#   matmul: dps-matmul (2 ranks) against dgemm with 2 OpenBLAS threads, each n of $MM_N
#   lu:     dps-lu stream and merge-split (2 ranks) against dgetrf with 2 threads, n = $LU_N
#   table1: the DPS paper's Table 1 (pipelined against phased), n = 1024, blocks 256..32
# The DPS runs use the default blocks (the cost model's, dps_dense::grain); MM_BLOCK=2048 or
# LU_BLOCK=512 pins one. Each row shows the block, and the first call against the median.
# Sizes can be lowered for a quick run: MM_N=1024 LU_N=4096 bench/linalg.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MM_N=${MM_N:-"4096 2048"} MM_BLOCK=${MM_BLOCK:-} LU_N=${LU_N:-8192} LU_BLOCK=${LU_BLOCK:-} REPS=${REPS:-3}
mm_block=(${MM_BLOCK:+--block "$MM_BLOCK"}) lu_block=(${LU_BLOCK:+--block "$LU_BLOCK"})
out=results/linalg; mkdir -p "$out"
bin=target/release
cargo build --release --quiet -p dps-matmul -p dps-lu -p dps-bench
run() { timeout -k 5 900 scripts/mpirun "$@"; }
table() { "$bin/dps-bench" table; }

: > "$out/matmul.jsonl"
for _ in $(seq "$REPS"); do
  for n in $MM_N; do
    "$bin/dps-matmul" --variant serial --n "$n" --blas-threads 2 --warmup 1 --json >> "$out/matmul.jsonl"
    run -n 2 "$bin/dps-matmul" --variant pipelined --n "$n" "${mm_block[@]}" --warmup 1 --json >> "$out/matmul.jsonl"
  done
done
: > "$out/lu.jsonl"
for _ in $(seq "$REPS"); do
  "$bin/dps-lu" --variant serial --n "$LU_N" --blas-threads 2 --json >> "$out/lu.jsonl"
  run -n 2 "$bin/dps-lu" --variant stream --n "$LU_N" "${lu_block[@]}" --json >> "$out/lu.jsonl"
  run -n 2 "$bin/dps-lu" --variant merge-split --n "$LU_N" "${lu_block[@]}" --json >> "$out/lu.jsonl"
done
: > "$out/table1.jsonl"
for ranks in 1 2; do
  for block in 256 128 64 32; do
    run -n "$ranks" "$bin/dps-matmul" --variant compare --n 1024 --block "$block" --reps 5 --warmup 1 --json >> "$out/table1.jsonl"
  done
done

python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def rows(name): return [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()]
def med(rs, **kw): return statistics.median(r["gflops"] for r in rs if all(r[k] == v for k, v in kw.items()))
mm, lu = rows("matmul"), rows("lu")
def first(rs, **kw):
    # The first call over the median call, per run, median over the runs (matmul's first call
    # is its warm-up run).
    return statistics.median(r["first_call_s"] / r["seconds"] for r in rs if all(r[k] == v for k, v in kw.items()))
def block(rs, **kw):
    # matmul: rows x columns of a block of C; LU: the panel width.
    return sorted({f'{r["block"]}x{r["block_cols"]}' if "block_cols" in r else str(r["block"])
                   for r in rs if all(r[k] == v for k, v in kw.items())})
lines = ["| benchmark | block | DPS GFLOP/s | reference GFLOP/s | ratio | floor | first call / median |",
         "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
for n in sorted({r["n"] for r in mm}, reverse=True):
    ref, dps = med(mm, variant="serial", n=n), med(mm, variant="pipelined", n=n)
    lines.append(f"| matmul n={n}, 2 ranks vs dgemm 2 threads | {block(mm, variant='pipelined', n=n)} | {dps:.1f} | {ref:.1f} | {dps/ref:.2f} | 0.90 | {first(mm, variant='pipelined', n=n):.2f} |")
ref, st, ms = med(lu, variant="serial"), med(lu, variant="stream"), med(lu, variant="merge-split")
lines.append(f"| LU stream n={lu[0]['n']}, 2 ranks vs dgetrf 2 threads | {block(lu, variant='stream')} | {st:.1f} | {ref:.1f} | {st/ref:.2f} | 0.80 | {first(lu, variant='stream'):.2f} |")
lines.append(f"| LU merge-split, same | {block(lu, variant='merge-split')} | {ms:.1f} | {ref:.1f} | {ms/ref:.2f} | (stream faster: {st > ms}) | {first(lu, variant='merge-split'):.2f} |")
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo
echo "DPS paper Table 1 (n = 1024; published on 1 node: 6.7% at ratio 0.22 (256) ... 25.2% at 2.09 (32)):"
table < "$out/table1.jsonl"
