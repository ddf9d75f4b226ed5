#!/usr/bin/env bash
# The main job: builds everything in release mode and runs the local reproduction of the
# paper experiments at a size that fits a 2-core laptop (a few minutes), then writes
# results/report.md with every table (beside the published numbers) and plot:
#   - the runtime's examples on 1, 2 and 4 ranks;
#   - `dps-bench sweep` of the default experiments of bench/experiments.toml;
#   - the linear-algebra floors against OpenBLAS/LAPACK and Intel MKL with 2 threads, beside the
#     machine's measured peak (bench/linalg.sh);
#   - the 5x5 median against OpenCV (bench/median-vs-opencv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --workspace --bins --examples --quiet
mkdir -p results
run() { timeout -k 5 600 scripts/mpirun "$@"; }
EXPERIMENTS=${EXPERIMENTS:-"table1-overlap matmul-speedup lu-speedup lu-variants transport overlap tsp-tsplib tsp-random100 life-fig9 life-efficiency life-short skeleton-migration skeleton-mixed radiocontrol-fig96 radiocontrol-floor filter-fig7-14 filter-throughput lu-dynamic-allocation"}

# The radiocontrol-fig96 data set (151 MB, ~12 s; deterministic, so kept between runs, and
# made again when the generator's source changes).
radio_data=results/radiocontrol/data
generator=$(cat apps/radiocontrol/src/generate.rs apps/radiocontrol/src/data.rs | sha256sum | cut -c1-16)
if [[ ! -f $radio_data/radio.json || "$(cat "$radio_data/.generator" 2>/dev/null)" != "$generator" ]]; then
  rm -rf "$radio_data"
  target/release/dps-radiocontrol generate --watches 300 --stations 16 --hours 2 --seed 1 \
    --dir "$radio_data" > /dev/null
  echo "$generator" > "$radio_data/.generator"
fi

# shellcheck disable=SC2086  # the experiment names are words
# A failed run is recorded in its table and makes the sweep exit 1 (listing the failures):
# the rest of the job still runs, and the job ends with the same status.
sweep_status=0
target/release/dps-bench sweep --report results/report.md $EXPERIMENTS || sweep_status=$?
REPS=3 bench/linalg.sh > results/linalg.log 2>&1 || echo "main job: bench/linalg.sh failed, see results/linalg.log" >&2
ROUNDS=3 REPS=3 bench/median-vs-opencv.sh > results/median-vs-opencv.log 2>&1 \
  || echo "main job: bench/median-vs-opencv.sh failed, see results/median-vs-opencv.log" >&2

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
  echo
  echo "## Runtime examples"
  echo '```'
  for n in 1 2 4; do echo "$n ranks: $(run -n "$n" target/release/examples/uppercase --map 'all*2')"; done
  for n in 1 2 4; do run -n "$n" target/release/examples/flood --tokens 1000000 --window 256; done
  echo '```'
  echo "(4 ranks on 2 cores are oversubscribed: correctness, not speed.)"
} >> results/report.md
# Issue 14 groundwork (bench/README.md): a quick calibration on 2 ranks (the platform file),
# then the P3L farm plan against a measured farm, batch (case A) and a fast stream (case B).
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
  echo "(Model: seed 002's P3L farm on the platform file's link; simulator: the same farm in Runtime::simulate, PDEXEC, the busy loop charged exactly.)"
} >> results/report.md
# Issue 14: the simulator's predictions (DE, PDEXEC) against real runs on 1 and 2 ranks.
{
  echo
  echo "## Simulator accuracy: predictions against real runs on 1 and 2 ranks"
  echo
  target/release/dps-bench sim-accuracy --platform results/platform.toml || echo "(sim-accuracy failed)"
} >> results/report.md
# Issue 14 point 4: LU's dynamic efficiency and thread removal simulated at P = 8 (needs the
# platform file above, so it runs after the calibration, not in $EXPERIMENTS).
{
  echo
  target/release/dps-bench sweep lu-dynamic-allocation-sim || echo "(lu-dynamic-allocation-sim failed)"
} >> results/report.md
echo "main job: wrote results/report.md"
if ((sweep_status != 0)); then
  echo "main job: some sweep runs failed (listed above, and marked in results/report.md)" >&2
  exit "$sweep_status"
fi
