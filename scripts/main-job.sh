#!/usr/bin/env bash
# The main job: builds everything in release mode and runs the local reproduction of the
# paper experiments, then writes results/report.md with every table (beside the published
# numbers) and plot:
#   - `dps-bench sweep` of the default experiments of bench/experiments.toml, then of its
#     published tables at P = 1..8 on emulated clusters (slurm/cluster.sh; needs root);
#   - the linear-algebra floors against OpenBLAS/LAPACK and Intel MKL with 2 threads, beside the
#     machine's measured peak (bench/linalg.sh);
#   - the 5x5 median against OpenCV (bench/median-vs-opencv.sh);
#   - the runtime's examples on 1, 2 and 4 ranks;
#   - a quick calibration (the platform file), the P3L farm tuning, the simulator's accuracy
#     and LU's dynamic allocation simulated at P = 8;
#   - at the end, the time each section took.
#
#   scripts/main-job.sh          # the quick version: every table, smaller sizes and fewer
#                                # runs (about 10 minutes of experiments on 2 cores)
#   scripts/main-job.sh --full   # the long version: the published sizes (`dps-bench sweep`
#                                # without --quick, linalg.sh's and median-vs-opencv.sh's own
#                                # sizes with 3 rounds, sim-accuracy's every point)
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
case "${1:-}" in
  "") ;;
  --full) full=1 ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "main job: unknown option ${1}; usage: scripts/main-job.sh [--full]" >&2; exit 2 ;;
esac

# Each section's wall time, for the table at the end of the report.
sections=()
section_start=0
begin() { section_start=$(date +%s%N); }
end() { sections+=("$1|$((($(date +%s%N) - section_start) / 1000000))"); }

begin
scripts/setup.sh
# The same build as bench/linalg.sh and bench/median-vs-opencv.sh (one set of features: a
# build of a few packages alone would compile the workspace's crates a second time).
cargo build --release --workspace --bins --examples --quiet
end "setup and build"
mkdir -p results
run() { timeout -k 5 600 scripts/mpirun "$@"; }
EXPERIMENTS=${EXPERIMENTS:-"table1-overlap matmul-speedup lu-speedup lu-variants transport service overlap tsp-tsplib tsp-random100 life-fig9 life-efficiency life-short life-kernel life-table2 skeleton-migration skeleton-mixed skeleton-blobs radiocontrol-fig96 radiocontrol-floor filter-fig7-14 filter-throughput lu-dynamic-allocation"}
if ((full)); then
  sweep_size=() linalg_size=(REPS=3) median_size=(ROUNDS=3 REPS=3) simaccuracy_size=()
  radio_data=results/radiocontrol/data radio_watches=300 flood_tokens=1000000
else
  # Quick: each experiment's `quick` table (bench/experiments.toml); the linear algebra at
  # its full sizes (LU's floor applies from n = 8192) in 3 rounds, so that a floor's ratio is
  # a median (of 2 rounds it is their mean: one disturbed LU round gave 0.88 among pairs of
  # 0.95-0.97 on 2026-11-28); the median on 4096² (not 8192²), 2 rounds; one block size per
  # app and 2 rounds per point in sim-accuracy.
  sweep_size=(--quick) linalg_size=(REPS=3) median_size=(SIZE=4096 ROUNDS=2 REPS=3)
  simaccuracy_size=(--quick --launches 2)
  radio_data=results/radiocontrol/data-quick radio_watches=100 flood_tokens=200000
fi
# Tables of an earlier job must not stand in for a failed step of this one.
rm -f results/linalg/summary.md results/median-vs-opencv/table.md

# The radiocontrol-fig96 data set (151 MB, ~12 s; 50 MB for the quick version; deterministic,
# so kept between runs, and made again when the generator's source changes).
begin
generator=$(cat apps/radiocontrol/src/generate.rs apps/radiocontrol/src/data.rs | sha256sum | cut -c1-16)
if [[ ! -f $radio_data/radio.json || "$(cat "$radio_data/.generator" 2>/dev/null)" != "$generator" ]]; then
  rm -rf "$radio_data"
  target/release/dps-radiocontrol generate --watches "$radio_watches" --stations 16 --hours 2 --seed 1 \
    --dir "$radio_data" > /dev/null
  echo "$generator" > "$radio_data/.generator"
fi
end "radiocontrol data set"

# shellcheck disable=SC2086  # the experiment names are words
# A failed run is recorded in its table and makes the sweep exit 1 (listing the failures):
# the rest of the job still runs, and the job ends with the same status.
begin
sweep_status=0
target/release/dps-bench sweep "${sweep_size[@]}" --report results/report.md $EXPERIMENTS || sweep_status=$?
end "sweep ($(wc -w <<< "$EXPERIMENTS") experiments; each one's time is under its table)"
# The published tables at P = 1..8 on emulated clusters (slurm/cluster.sh, one per experiment,
# stood up and taken down by the sweep; skipped with a line in their tables where this
# machine cannot emulate one: no root, namespaces or cgroups). Their platforms: docs/cluster-tables.md.
CLUSTER_EXPERIMENTS=${CLUSTER_EXPERIMENTS:-"table1-cluster matmul-speedup-cluster lu-speedup-cluster lu-dynamic-cluster filter-cluster radiocontrol-cluster skeleton-cluster"}
begin
# shellcheck disable=SC2086  # the experiment names are words
target/release/dps-bench sweep "${sweep_size[@]}" --report results/cluster-report.md $CLUSTER_EXPERIMENTS \
  || sweep_status=$?
{
  echo
  echo "## The published tables on an emulated cluster"
  echo
  tail -n +2 results/cluster-report.md
} >> results/report.md
end "sweep on emulated clusters ($(wc -w <<< "$CLUSTER_EXPERIMENTS") experiments)"
begin
env "${linalg_size[@]}" bench/linalg.sh > results/linalg.log 2>&1 \
  || echo "main job: bench/linalg.sh failed, see results/linalg.log" >&2
end "linear algebra against OpenBLAS and MKL (bench/linalg.sh)"
begin
env "${median_size[@]}" bench/median-vs-opencv.sh > results/median-vs-opencv.log 2>&1 \
  || echo "main job: bench/median-vs-opencv.sh failed, see results/median-vs-opencv.log" >&2
end "5x5 median against OpenCV (bench/median-vs-opencv.sh)"

{
  echo
  echo "## Linear algebra against OpenBLAS/LAPACK and Intel MKL with 2 threads (same run)"
  echo
  cat results/linalg/summary.md 2>/dev/null || echo "(failed: see results/linalg.log)"
  echo
  echo "## The 5x5 median against OpenCV's medianBlur (same run)"
  echo
  cat results/median-vs-opencv/cpu.txt results/median-vs-opencv/table.md 2>/dev/null \
    || echo "(failed: see results/median-vs-opencv.log)"
} >> results/report.md
begin
{
  echo
  echo "## Runtime examples"
  echo '```'
  for n in 1 2 4; do echo "$n ranks: $(run -n "$n" target/release/examples/uppercase --map 'all*2')"; done
  for n in 1 2 4; do run -n "$n" target/release/examples/flood --tokens "$flood_tokens" --window 256; done
  echo '```'
  echo "(4 ranks on 2 cores are oversubscribed: correctness, not speed.)"
} >> results/report.md
end "runtime examples"
# A quick calibration on 2 ranks (the platform file), then the P3L farm plan against a
# measured farm, batch (case A) and a fast stream (case B).
begin
{
  echo
  echo "## Platform calibration (quick, 2 ranks) and P3L farm tuning"
  echo
  target/release/dps-bench calibrate --quick --out results/platform.toml || echo "(calibrate failed)"
  for farm in "--item-us 200 --payload 8192" "--item-us 20 --payload 1048576 --te-us 50"; do
    echo
    echo "\`dps-bench tune-farm $farm\`:"
    echo
    # shellcheck disable=SC2086  # the options are words
    target/release/dps-bench tune-farm --platform results/platform.toml --seconds 0.1 --max-grain 16 $farm \
      || echo "(tune-farm failed)"
  done
  echo
  echo "(Model: the P3L paper's farm on the platform file's link; simulator: the same farm in Runtime::simulate, PDEXEC, the busy loop charged exactly.)"
} >> results/report.md
end "calibration and farm tuning"
# The simulator's predictions (DE, PDEXEC) against real runs on 1 and 2 ranks.
begin
{
  echo
  echo "## Simulator accuracy: predictions against real runs on 1 and 2 ranks"
  echo
  target/release/dps-bench sim-accuracy "${simaccuracy_size[@]}" --platform results/platform.toml \
    || echo "(sim-accuracy failed)"
} >> results/report.md
end "simulator accuracy"
# LU's dynamic efficiency and thread removal simulated at P = 8 (needs the platform file
# above, so it runs after the calibration, not in $EXPERIMENTS).
begin
{
  echo
  target/release/dps-bench sweep "${sweep_size[@]}" lu-dynamic-allocation-sim || echo "(lu-dynamic-allocation-sim failed)"
} >> results/report.md
end "lu-dynamic-allocation-sim"

# Issue 31: the layered scheduler of malleable task graphs (the scheduling paper) against CPA, MCPA
# and static allocation, and its lookahead set for LU n = 2592 on 8 virtual nodes.
begin
{
  echo
  echo "## Scheduling malleable task graphs: layered against CPA, MCPA and static, and the lookahead switch"
  echo
  target/release/dps-bench schedule --compare --platform results/platform.toml || echo "(schedule --compare failed)"
  echo
  echo '```'
  target/release/dps-bench schedule --lu 2592 --block 324 --procs 8 --platform results/platform.toml \
    --lookahead lose:1,lose:2,gain:1 | sed -n '/^TIME/,$p' || echo "(schedule --lookahead failed)"
  echo '```'
} >> results/report.md
end "malleable task graph scheduling"

# The time each section took; the experiments are every section after the build.
{
  echo
  echo "## Time per section ($( ((full)) && echo "--full" || echo "quick, the default"))"
  echo
  echo "| section | seconds |"
  echo "| --- | ---: |"
  total=0 experiments=0
  for s in "${sections[@]}"; do
    name=${s%|*} ms=${s##*|}
    printf '| %s | %d.%d |\n' "$name" $((ms / 1000)) $((ms % 1000 / 100))
    total=$((total + ms))
    [[ $name == "setup and build" ]] || experiments=$((experiments + ms))
  done
  printf '| **experiments** (every section after the build) | **%d.%d** |\n' $((experiments / 1000)) $((experiments % 1000 / 100))
  printf '| **total** | **%d.%d** |\n' $((total / 1000)) $((total % 1000 / 100))
} >> results/report.md
echo "main job: wrote results/report.md"
if ((sweep_status != 0)); then
  echo "main job: some sweep runs failed (listed above, and marked in results/report.md)" >&2
  exit "$sweep_status"
fi
