#!/usr/bin/env bash
# One device call for issue #17 item 2, the host's work of one public call on a CuPy array:
# gpu_host_call.py on the package before the change (BEFORE, a copy of it) and on this tree, in
# turn, ROUNDS times (this tree also with quick.SPARE off), then groups of cuda tests, each
# group's pytest arguments on a line of TESTS, until DEADLINE_S seconds of wall time
# (benchmarks/device_verify.sh; its logs in $OUT/tests/logs.tgz). Usage on the device machine, from the repository root:
#   BEFORE=old17j/src bash benchmarks/device_issue17j.sh
# (AFTER=src: the package measured and tested as "after"  ROUNDS=2  BENCH_S=150: each run's limit
#  DEADLINE_S=420  TESTS=...)
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
t0=$(date +%s)
left() { echo $(( ${DEADLINE_S:-420} - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
nproc >> "$OUT/device.txt"; grep -m1 "model name" /proc/cpuinfo >> "$OUT/device.txt"
mkdir -p /tmp/r
PYTHONPATH=$PWD/${AFTER:-src} python3 -c "import hotbin; print('tested:', hotbin.__file__)" | tee -a "$OUT/device.txt"
bench() {  # label, package dir, more arguments
  local label=$1 pkg=$2; shift 2
  PYTHONPATH=$PWD/$pkg:$PWD/benchmarks timeout "${BENCH_S:-150}" python3 benchmarks/gpu_host_call.py \
    --label "$label" --out "/tmp/r/$label.json" "$@" >> "$OUT/bench.log" 2>&1
  echo "[$(( $(date +%s) - t0 )) s] $label exit $?"
}
for r in $(seq 1 "${ROUNDS:-2}"); do
  pb=(); pa=()  # the first round writes cProfiles of 10000 small calls
  if [ "$r" = 1 ]; then pb=(--profile /tmp/r/before.prof.txt); pa=(--profile /tmp/r/after.prof.txt); fi
  [ -n "${BEFORE:-}" ] && bench "before$r" "$BEFORE" "${pb[@]}"
  bench "after$r" "${AFTER:-src}" --spare both "${pa[@]}"
done
# the tests: device_verify.sh's groups on the "after" package, in the time left
SKIP_BENCH=1 SRC=${AFTER:-src} OUT=$OUT/tests DEADLINE_S=$(left) TESTS=${TESTS:-tests/test_cuda_quick.py} \
  bash benchmarks/device_verify.sh | grep -v "^NVIDIA"
tar czf "$OUT/data.tgz" -C /tmp/r . 2>/dev/null
echo "=== rows (pre-launch / host us; GB/s: API one call, API queued, primitive, kernel)"
grep -E "^(f32|u8|u16) " "$OUT/bench.log" | sed 's/  */ /g'
echo "=== small calls"; grep -E "^small +(hotbin|cupy)" "$OUT/bench.log" | sed 's/  */ /g'
echo "=== steps (us per call)"; grep -E "^step " "$OUT/bench.log" | sed 's/  */ /g' | head -80
echo "=== probes"; grep -E "^(edges of|spin probe)" "$OUT/bench.log"
grep -E "Error|Traceback|assert" "$OUT/bench.log" | head -5
