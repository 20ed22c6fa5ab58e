#!/usr/bin/env bash
# One device call that checks a combined tree when little device time is left: the public
# heatmap call's speed (gpu_spatial.py --api-only, 2^28 points, 0/50/90/100 % hot), then groups
# of cuda tests in the order given, each group's pytest arguments on a line of TESTS, until
# DEADLINE_S seconds of wall time (a group never starts with less than 15 s left; the results
# say which ran). SUITE_GROUPS=G1,G2,G3,W first runs those gpu_suite.py groups (API rows, CUB
# beside); LUMA=1 keeps gpu_spatial's luma rows; SRC=dir: the package tested (default src).
# Usage on the device machine, from the repository root:
#   TESTS=$'tests/test_a.py\ntests/test_b.py -k "x or y"' DEADLINE_S=300 bash benchmarks/device_verify.sh
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/${SRC:-src}:$PWD/benchmarks PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
t0=$(date +%s)
left() { echo $(( ${DEADLINE_S:-300} - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
if [ -n "${SUITE_GROUPS:-}" ]; then
  nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC benchmarks/cub_anchor.cu -o /tmp/libcub_anchor.so > "$OUT/build.log" 2>&1
  timeout "${SUITE_S:-200}" python3 benchmarks/gpu_suite.py --cub /tmp/libcub_anchor.so --only "$SUITE_GROUPS" \
    --no-anchors --out "$OUT/gpu_suite.md" > "$OUT/gpu_suite.log" 2>&1
  rc=$?
  echo "[$(( $(date +%s) - t0 )) s] gpu_suite $SUITE_GROUPS exit $rc"
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  timeout "${BENCH_S:-80}" python3 benchmarks/gpu_spatial.py --api-only $([ -n "${LUMA:-}" ] || echo --skip-luma) --skip-weights \
    --out "$OUT" > "$OUT/gpu_spatial.log" 2>&1
  rc=$?
  echo "[$(( $(date +%s) - t0 )) s] gpu_spatial --api-only exit $rc"
fi
i=0
while IFS= read -r line; do
  [ -n "$line" ] || continue
  i=$((i + 1)); l=$(left)
  if [ "$l" -lt 15 ]; then echo "not run (no time left): $line"; continue; fi
  eval "timeout $l python3 -m pytest -q -p no:cacheprovider $line" > "$OUT/pytest-$i.log" 2>&1
  rc=$?
  echo "[$(( $(date +%s) - t0 )) s] exit $rc $line: $(tail -1 "$OUT/pytest-$i.log")"
  grep -E "^FAILED|^ERROR" "$OUT/pytest-$i.log" | head -5
done <<< "${TESTS:-tests/test_cuda.py}"
[ -f "$OUT/gpu_spatial.log" ] && { echo "=== heatmap API"; grep -E "^device read|^hot|G points|luma|GB/s" "$OUT/gpu_spatial.log" | head -30; }
[ -n "${SUITE_GROUPS:-}" ] && { echo "=== gpu_suite"; grep -E "^(G[0-9]|W f32|floor|read)" "$OUT/gpu_suite.log"; }
(cd "$OUT" && tar czf logs.tgz --exclude logs.tgz . 2>/dev/null; find . -type f ! -name logs.tgz ! -name '*.md' -delete)
