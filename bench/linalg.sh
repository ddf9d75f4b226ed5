#!/usr/bin/env bash
# Linear-algebra benchmarks, each DPS run side by side with its references in the same
# invocation (alternating, medians), written to results/linalg/:
#   matmul: dps-matmul (2 ranks, on the library DPS_BLAS chooses: MKL where installed) against
#           dgemm with 2 threads of OpenBLAS (DPS_BLAS=openblas) and of Intel MKL, each n of $MM_N
#   lu:     dps-lu stream and merge-split (2 ranks) against dgetrf with 2 threads (OpenBLAS,
#           MKL), n = $LU_N; every LU run, like blasref's, makes one untimed call first
#   gemm:   dps-bench calibrate's gemm rate at 256^3 (one thread, one rank) against MKL's
#   peak:   the machine's measured double-precision peak (dps-bench peak), beside every rate
# (The DPS paper's Table 1, pipelined against phased, is the sweep's experiment table1-overlap.)
# MKL comes from PyPI (`mkl`, about 1 GB, installed once into $DPS_MKL_DIR, default
# ~/.cache/dps/mkl) and is called through bench/blasref/blasref.c; where it cannot be
# installed, its columns say so and the rest runs.
# The DPS runs use the default blocks (the cost model's, dps_dense::grain); MM_BLOCK=2048 or
# LU_BLOCK=512 pins one. Each row shows the block, and the first call against the median.
# Sizes can be lowered for a quick run: MM_N=1024 LU_N=4096 bench/linalg.sh (the main job's
# runs REPS=3 at these sizes; the LU floor applies from n = 8192). Every run, DPS or
# reference, reports the median of CALLS timed calls after an untimed one (default 5 for
# matmul, whose calls take 0.1-0.8 s, and 3 for LU): a single 0.1 s call moved the n = 2048
# ratio by 10 % from one main job to the next.
set -euo pipefail
cd "$(dirname "$0")/.."
MM_N=${MM_N:-"4096 2048"} MM_BLOCK=${MM_BLOCK:-} LU_N=${LU_N:-8192} LU_BLOCK=${LU_BLOCK:-} REPS=${REPS:-3}
MM_CALLS=${MM_CALLS:-5} LU_CALLS=${LU_CALLS:-3}
mm_block=(${MM_BLOCK:+--block "$MM_BLOCK"}) lu_block=(${LU_BLOCK:+--block "$LU_BLOCK"})
out=results/linalg; mkdir -p "$out"
bin=target/release
# The main job's build (a build of these packages alone would compile the workspace's crates
# a second time, with other features).
cargo build --release --quiet --workspace --bins --examples
# The DPS jobs with node-shared memory on huge pages, as MKL's threads have their private
# memory (scripts/with-huge-shm: as root, a private /dev/shm mounted huge=advise).
run() { timeout -k 5 900 scripts/with-huge-shm scripts/mpirun "$@"; }

"$bin/dps-bench" topology | grep '^BLAS:' | tee "$out/blas.txt"
"$bin/dps-bench" peak --json > "$out/peak.json"
mkl=""
if mkl_lib=$(bench/blasref/mkl.sh); then
  mkl=$bin/blasref-mkl
  gcc -O2 -o "$mkl" bench/blasref/blasref.c "$mkl_lib" -Wl,-rpath,"$(dirname "$mkl_lib")"
  echo "MKL: $mkl_lib" >> "$out/blas.txt"
else
  echo "MKL: not installed, its columns are empty" | tee -a "$out/blas.txt"
fi
# One reference call of an MKL routine with 2 (or 1) threads, as a JSON line.
mkl_ref() { [[ -n $mkl ]] && MKL_NUM_THREADS=$1 OMP_NUM_THREADS=$1 "$mkl" "${@:2}" || true; }

: > "$out/matmul.jsonl"; : > "$out/mkl.jsonl"
for _ in $(seq "$REPS"); do
  for n in $MM_N; do
    DPS_BLAS=openblas "$bin/dps-matmul" --variant serial --n "$n" --blas-threads 2 --warmup 1 --reps "$MM_CALLS" --json >> "$out/matmul.jsonl"
    mkl_ref 2 dgemm "$n" "$MM_CALLS" >> "$out/mkl.jsonl"
    run -n 2 "$bin/dps-matmul" --variant pipelined --n "$n" "${mm_block[@]}" --warmup 1 --reps "$MM_CALLS" --json >> "$out/matmul.jsonl"
  done
done
: > "$out/lu.jsonl"
for _ in $(seq "$REPS"); do
  DPS_BLAS=openblas "$bin/dps-lu" --variant serial --n "$LU_N" --blas-threads 2 --warmup 1 --reps "$LU_CALLS" --json >> "$out/lu.jsonl"
  mkl_ref 2 dgetrf "$LU_N" "$LU_CALLS" >> "$out/mkl.jsonl"
  run -n 2 "$bin/dps-lu" --variant stream --n "$LU_N" "${lu_block[@]}" --warmup 1 --reps "$LU_CALLS" --json >> "$out/lu.jsonl"
  run -n 2 "$bin/dps-lu" --variant merge-split --n "$LU_N" "${lu_block[@]}" --warmup 1 --reps "$LU_CALLS" --json >> "$out/lu.jsonl"
done
# calibrate's gemm table (one thread; one rank: the kernels, not the links) at 256^3 against
# MKL's, alternating.
: > "$out/calibrate.jsonl"
for _ in $(seq "$REPS"); do
  "$bin/dps-bench" calibrate --quick --ranks 1 --json --out "$out/platform.toml" >> "$out/calibrate.jsonl"
  mkl_ref 1 dgemm 256 200 | sed 's/"op":"dgemm"/"op":"dgemm1"/' >> "$out/mkl.jsonl"
done

python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def rows(name): return [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()]
mm, lu, mkl = rows("matmul"), rows("lu"), rows("mkl")
peak = json.load(open(f"{out}/peak.json"))
machine_peak, core_peak = peak["all_cores_gflops"], peak["core_gflops"]
def gemm256(r):
    g = next(k for k in r["kernels"] if k["name"] == "gemm")
    p = next(p for p in g["points"] if p["dims"] == [256, 256, 256])
    return p["work"] / p["seconds"] / 1e9
fmt = lambda x, spec=".1f": "n/a" if x is None else format(x, spec)
def paired(a, b):
    # The median of the per-round ratios: runs of one round are adjacent in time, so each
    # ratio pairs runs under the same load (the medians of each side alone need not).
    pairs = [x / y for x, y in zip(a, b)]
    return statistics.median(pairs) if pairs else None
def rates(rs, **kw): return [r["gflops"] for r in rs if all(r.get(k) == v for k, v in kw.items())]
def first(rs, **kw):
    # The first call over the median call, per run, median over the runs (matmul's first call
    # is its warm-up run).
    return statistics.median(r["first_call_s"] / r["seconds"] for r in rs if all(r[k] == v for k, v in kw.items()))
def block(rs, **kw):
    # matmul: rows x columns of a block of C (the master's strip first where it is taller);
    # LU: the panel width.
    def one(r):
        if "block_cols" not in r:
            return str(r["block"])
        first = r.get("block_first_rows", r["block"])
        rows = f'{first}/{r["block"]}' if first != r["block"] else str(r["block"])
        return f'{rows}x{r["block_cols"]}'
    return ", ".join(sorted({one(r) for r in rs if all(r[k] == v for k, v in kw.items())}))
def describe(r): return f"{r['blas_library']} {r['blas_version']}, core {r['blas_core']} (chosen by {r['blas_core_chosen_by']})"
dps, openblas = (next(r for r in mm if r["variant"] == v) for v in ("pipelined", "serial"))
lines = [f"BLAS of the DPS runs: {describe(dps)}; the OpenBLAS reference: {describe(openblas)}; CPU vectors {dps['cpu_vectors']}; "
         f"measured peak {machine_peak:.1f} GFLOP/s on {peak['cores']} cores ({core_peak:.1f} on one, {peak['vectors']} FMA); "
         f"transparent huge pages {dps.get('huge_pages', 'n/a')} (the DPS programs and the MKL driver ask for them for their matrices); "
         f"node-shared memory (dps-matmul's lent strips) huge pages {dps.get('shared_memory_huge_pages') or 'n/a'}",
         "Rates: medians of the runs; ratios: medians of the per-round ratios (runs of a round are adjacent).", "",
         "| benchmark | block | DPS GFLOP/s | OpenBLAS GFLOP/s | MKL GFLOP/s | DPS / MKL | floor | DPS / OpenBLAS | DPS / peak | first call / median |",
         "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
def row(name, blk, dps, ref, best, floor, first_call, peak_of):
    med = lambda xs: statistics.median(xs) if xs else None
    lines.append(f"| {name} | {blk} | {fmt(med(dps))} | {fmt(med(ref))} | {fmt(med(best))} | {fmt(paired(dps, best), '.2f')} | {floor} | "
                 f"{fmt(paired(dps, ref), '.2f')} | {fmt(med(dps) / peak_of, '.2f')} | {first_call} |")
for n in sorted({r["n"] for r in mm}, reverse=True):
    row(f"matmul n={n}, 2 ranks vs dgemm 2 threads", block(mm, variant='pipelined', n=n), rates(mm, variant="pipelined", n=n),
        rates(mm, variant="serial", n=n), rates(mkl, op="dgemm", n=n), "0.90" if n >= 4096 else "0.85",
        f"{first(mm, variant='pipelined', n=n):.2f}", machine_peak)
n = lu[0]["n"]
st, ms = rates(lu, variant="stream"), rates(lu, variant="merge-split")
ref, best = rates(lu, variant="serial"), rates(mkl, op="dgetrf", n=n)
row(f"LU stream n={n}, 2 ranks vs dgetrf 2 threads", block(lu, variant='stream'), st, ref, best, "0.95" if n >= 8192 else "",
    f"{first(lu, variant='stream'):.2f}", machine_peak)
row("LU merge-split, same", block(lu, variant='merge-split'), ms, ref, best, "",
    f"{first(lu, variant='merge-split'):.2f}", machine_peak)
row("calibrate's gemm 256³, 1 thread vs dgemm 1 thread", "", [gemm256(r) for r in rows("calibrate")], [],
    rates(mkl, op="dgemm1", n=256), "0.90", "", core_peak)
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
