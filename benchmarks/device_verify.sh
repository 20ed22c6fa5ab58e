#!/usr/bin/env bash
# One device call that checks a combined tree when little device time is left: the public
# heatmap call's speed (gpu_spatial.py --api-only, 2^28 points, 0/50/90/100 % hot), then groups
# of cuda tests in the order given, each group's pytest arguments on a line of TESTS, until
# DEADLINE_S seconds of wall time (a group never starts with less than 15 s left; the results
# say which ran). Usage on the device machine, from the repository root:
#   TESTS=$'tests/test_a.py\ntests/test_b.py -k "x or y"' DEADLINE_S=300 bash benchmarks/device_verify.sh
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
t0=$(date +%s)
left() { echo $(( ${DEADLINE_S:-300} - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
if [ -z "${SKIP_BENCH:-}" ]; then
  timeout "${BENCH_S:-80}" python3 benchmarks/gpu_spatial.py --api-only --skip-luma --skip-weights \
    --out "$OUT" > "$OUT/gpu_spatial.log" 2>&1
  echo "[$(( $(date +%s) - t0 )) s] gpu_spatial --api-only exit $?"
fi
i=0
while IFS= read -r line; do
  [ -n "$line" ] || continue
  i=$((i + 1)); l=$(left)
  if [ "$l" -lt 15 ]; then echo "not run (no time left): $line"; continue; fi
  eval "timeout $l python3 -m pytest -q -p no:cacheprovider $line" > "$OUT/pytest-$i.log" 2>&1
  echo "[$(( $(date +%s) - t0 )) s] exit $? $line: $(tail -1 "$OUT/pytest-$i.log")"
  grep -E "^FAILED|^ERROR" "$OUT/pytest-$i.log" | head -5
done <<< "${TESTS:-tests/test_cuda.py}"
echo "=== heatmap API"; grep -E "^device read|^hot|G points" "$OUT/gpu_spatial.log" | head -20
(cd "$OUT" && tar czf logs.tgz --exclude logs.tgz . 2>/dev/null; find . -type f ! -name logs.tgz ! -name '*.md' -delete)
