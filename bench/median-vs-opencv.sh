#!/usr/bin/env bash
# The 5×5 median against OpenCV's cv2.medianBlur(img, 5) (issue 26), side by side in one
# invocation: rounds of OpenCV with 2 threads, dps-filter median on 2 ranks (the defaults:
# bound by --bind auto where each rank has a core of its own, then --bind none), OpenCV with 1 thread,
# dps-filter's serial kernel on one core, alternating; each process times its own
# --reps runs after a warm-up and reports their median; the table gives the median over
# rounds, in Mpix/s, and the ratios dps/OpenCV. Results in results/median-vs-opencv/.
#
# First it checks that both compute the same thing on a small image with unaligned tiles
# (OpenCV's medianBlur clamps to the edge for ksize 5, as dps-filter does): the image is
# stored, filtered on 2 ranks (--verify against the serial reference) and read back, and
# compared with OpenCV's output pixel for pixel; a difference stops the script.
#
# OpenCV comes from PyPI (opencv-python-headless, installed once into $DPS_OPENCV_DIR,
# default ~/.cache/dps/opencv, by bench/medianref/opencv.sh); where it cannot be installed,
# one line says so and only the dps-filter columns are measured. Both time a uniformly
# random 8-bit image (sorting networks take the same time on any content).
#   SIZE=8192 ROUNDS=5 REPS=5 bench/median-vs-opencv.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${SIZE:-8192} ROUNDS=${ROUNDS:-5} REPS=${REPS:-5}
out=results/median-vs-opencv; mkdir -p "$out"
bin=target/release/dps-filter
# The main job's build (dps-filter alone would compile the workspace's crates a second time,
# with other features).
cargo build --release --quiet --workspace --bins --examples
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /CPU: /' | tee "$out/cpu.txt"
echo "vector extensions: $(grep -o 'avx[^ ]*' /proc/cpuinfo | sort -u | tr '\n' ' ')" | tee -a "$out/cpu.txt"

py=""
if py=$(bench/medianref/opencv.sh); then
  "$py" -c 'import cv2; print("OpenCV", cv2.__version__)' | tee -a "$out/cpu.txt"
else
  py=""
  echo "OpenCV: not installed, its columns are empty" | tee -a "$out/cpu.txt"
fi

# The same result: a 601×523 image, tiles of 128 (unaligned edges), 2 ranks, 5 disks.
if [[ -n $py ]]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  "$py" -c 'import cv2, numpy as np, sys
cv2.imwrite(sys.argv[1], np.random.default_rng(26).integers(0, 256, (523, 601), dtype=np.uint8))' "$tmp/in.png"
  mkdir "$tmp/store"  # outputs go beside the store: dps-filter refuses to write inside one
  "$bin" store "$tmp/in.png" --tiles 128 --disks 5 --dir "$tmp/store" >/dev/null
  scripts/mpirun -n 2 "$bin" median --dir "$tmp/store" --verify >/dev/null
  "$bin" load "$tmp/store" --name image-median -o "$tmp/out.png" >/dev/null
  "$py" - "$tmp/in.png" "$tmp/out.png" <<'PY'
import sys, cv2, numpy as np
img = cv2.imread(sys.argv[1], cv2.IMREAD_UNCHANGED)
ours = cv2.imread(sys.argv[2], cv2.IMREAD_UNCHANGED)
ref = cv2.medianBlur(img, 5)
diff = np.argwhere(ours != ref)
if ours.shape != ref.shape or len(diff):
    sys.exit(f"same result: NO, {len(diff)} of {ref.size} pixels differ, first (y, x) {diff[:1].tolist()}")
print(f"same result: yes, dps-filter median (2 ranks) equals cv2.medianBlur(img, 5) on {img.shape[1]}x{img.shape[0]}")
PY
fi

# One OpenCV process: warm-up, REPS timed calls, one JSON line with their median.
opencv() {
  [[ -n $py ]] || return 0
  "$py" - "$1" "$SIZE" "$REPS" <<'PY'
import json, statistics, sys, time
import cv2, numpy as np
threads, n, reps = map(int, sys.argv[1:])
cv2.setNumThreads(threads)
img = np.random.default_rng(1).integers(0, 256, (n, n), dtype=np.uint8)
cv2.medianBlur(img, 5)
times, cpu = [], []
for _ in range(reps):
    t, c = time.perf_counter(), time.process_time()
    cv2.medianBlur(img, 5)
    times.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
s = statistics.median(times)
# cpu_per_wall: the cores the call kept busy (medianBlur's sorting-network path for ksize 5
# ran on one thread whatever setNumThreads said, in OpenCV 5.0.0 here).
print(json.dumps({"app": "opencv", "variant": f"medianBlur-{threads}", "threads": threads,
                  "width": n, "height": n, "seconds": s, "mpix_per_s": n * n / s / 1e6,
                  "cpu_per_wall": sum(cpu) / sum(times)}))
PY
}
# One dps-filter process: `dps LAUNCHER... -- EXTRA-ARGS...`.
dps() {
  local launch=() ; while [[ $1 != -- ]]; do launch+=("$1"); shift; done; shift
  timeout -k 5 300 "${launch[@]}" "$bin" median "$@" --random "$SIZE" "$SIZE" --reps "$REPS" --warmup 1 --json
}

: > "$out/runs.jsonl"
for round in $(seq "$ROUNDS"); do
  opencv 2 >> "$out/runs.jsonl"
  dps scripts/mpirun -n 2 -- >> "$out/runs.jsonl"
  dps scripts/mpirun -n 2 -- --bind none >> "$out/runs.jsonl"
  opencv 1 >> "$out/runs.jsonl"
  dps -- --variant serial >> "$out/runs.jsonl"
  echo "round $round of $ROUNDS done" >&2
done

python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/runs.jsonl") if l.strip().startswith("{")]
def unbound(r):
    return r.get("binding") == "none"  # --bind none; the default is "cores …" or "none (auto: …)"
def series(pred):
    return [r["mpix_per_s"] for r in rows if pred(r)]
def rate(pred):
    v = series(pred)
    return (statistics.median(v), min(v), max(v), len(v)) if v else None
preds = {
    "dps-filter median, 2 ranks": lambda r: r.get("app") == "filter" and r.get("ranks") == 2 and not unbound(r),
    "dps-filter median, 2 ranks, --bind none": lambda r: r.get("app") == "filter" and r.get("ranks") == 2 and unbound(r),
    "OpenCV medianBlur, 2 threads": lambda r: r.get("variant") == "medianBlur-2",
    "dps-filter serial kernel, 1 core": lambda r: r.get("app") == "filter" and r.get("variant") == "serial",
    "OpenCV medianBlur, 1 thread": lambda r: r.get("variant") == "medianBlur-1",
}
cols = {name: rate(p) for name, p in preds.items()}
lines = ["| run | Mpix/s (median) | min | max | processes |", "| --- | ---: | ---: | ---: | ---: |"]
for name, v in cols.items():
    lines.append(f"| {name} | " + (" | ".join([f"{v[0]:.0f}", f"{v[1]:.0f}", f"{v[2]:.0f}", str(v[3])]) if v else "not measured | | |") + " |")
def ratio(a, b):
    # The ratio of the medians, and the median of the rounds' ratios (each round's runs
    # were minutes apart at most: the pairs see the same machine).
    if not (cols[a] and cols[b]):
        return "n/a"
    pairs = [x / y for x, y in zip(series(preds[a]), series(preds[b]))]
    return f"{cols[a][0] / cols[b][0]:.2f} (median of the rounds' ratios {statistics.median(pairs):.2f}, {min(pairs):.2f}-{max(pairs):.2f})"
lines.append("")
lines.append(f"ratio dps 2 ranks / OpenCV 2 threads: {ratio('dps-filter median, 2 ranks', 'OpenCV medianBlur, 2 threads')} (floor 1.0)")
lines.append(f"ratio dps 2 ranks unbound / OpenCV 2 threads: {ratio('dps-filter median, 2 ranks, --bind none', 'OpenCV medianBlur, 2 threads')}")
lines.append(f"ratio dps serial / OpenCV 1 thread:   {ratio('dps-filter serial kernel, 1 core', 'OpenCV medianBlur, 1 thread')}")
busy = [r["cpu_per_wall"] for r in rows if r.get("variant") == "medianBlur-2"]
if busy:
    lines.append(f"OpenCV with 2 threads kept {statistics.median(busy):.2f} cores busy (CPU time / wall time, median)")
text = "\n".join(lines)
print(text)
open(f"{out}/table.md", "w").write(text + "\n")
PY
