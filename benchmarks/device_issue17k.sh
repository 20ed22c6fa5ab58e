#!/usr/bin/env bash
# One device call for issue #17's deterministic row (hist_sum's seen word, max_abs_sample,
# plan.weighted's guessed scale): gpu_suite group W on this tree and on the package before the
# change (BEFORE, a copy of src/), compute-sanitizer memcheck on the changed kernels, the cuda
# tests of the changed paths, an nvcc compile check of hist1d.cu. From the repository root:
#   BEFORE=before17k/src bash benchmarks/device_issue17k.sh
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC benchmarks/cub_anchor.cu -o /tmp/libcub_anchor.so > "$OUT/build.log" 2>&1
timeout "${SUITE_S:-150}" python3 benchmarks/gpu_suite.py --cub /tmp/libcub_anchor.so --only W --no-anchors \
  --out "$OUT/gpu_suite.md" > "$OUT/gpu_suite.log" 2>&1
echo "suite exit $? ($(( $(date +%s) - t0 )) s)"
if [ -n "${BEFORE:-}" ]; then
  PYTHONPATH=$PWD/$BEFORE:$PWD/benchmarks timeout "${BEFORE_S:-120}" python3 benchmarks/gpu_suite.py \
    --cub /tmp/libcub_anchor.so --only W --no-anchors --out /tmp/before.md > "$OUT/gpu_suite_before.log" 2>&1
  echo "suite (before) exit $? ($(( $(date +%s) - t0 )) s)"
fi
cat > /tmp/prof17k.py <<'PY'
# where one deterministic call's host time goes: 2^28 float32 values and weights, 20 calls
import cProfile, pstats, time, cupy as cp, numpy as np, hotbin
from gpu_suite import hash_u32
x = (hash_u32(1 << 28, 3) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -24)
w = (hash_u32(1 << 28, 11) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -23) - np.float32(0.25)
call = lambda: hotbin.histogram(x, 256, (0.0, 1.0), weights=w, deterministic=True)
call(); cp.cuda.Device().synchronize()
for _ in range(3):
    t = time.perf_counter(); call(); cp.cuda.Device().synchronize(); print(f"one call {1e3 * (time.perf_counter() - t):.3f} ms")
p = cProfile.Profile(); p.enable()
for _ in range(20):
    call()
p.disable()
pstats.Stats(p).sort_stats("cumulative").print_stats(35)
PY
timeout 60 python3 /tmp/prof17k.py > "$OUT/profile.log" 2>&1
echo "profile exit $? ($(( $(date +%s) - t0 )) s)"
cat > /tmp/san17k.py <<'PY'
import cupy as cp, numpy as np, hotbin
rng = np.random.default_rng(1)
for wdt in (np.float32, np.float64):
    n = (1 << 22) + 5
    v = cp.asarray(rng.random(n, dtype=np.float32))
    w = cp.asarray(rng.random(n).astype(wdt))
    w[1] = 1e5  # a miss: the sums run twice
    a = hotbin.histogram(v, 64, (0, 1), weights=w, deterministic=True)[0]
    b = hotbin.histogram(v.get(), 64, (0, 1), weights=w.get(), deterministic=True, backend="cpu")[0]
    assert np.array_equal(a.get(), b)
print("sanitized calls ok")
PY
timeout "${SAN_S:-120}" compute-sanitizer --tool memcheck --error-exitcode 9 python3 /tmp/san17k.py \
  2>&1 | tail -40 > "$OUT/sanitizer.log"
echo "memcheck exit ${PIPESTATUS[0]} ($(( $(date +%s) - t0 )) s): $(grep -E 'ERROR SUMMARY|ok' "$OUT/sanitizer.log" | tr '\n' ' ')"
timeout "${TEST_S:-200}" python3 -m pytest -q -p no:cacheprovider tests/test_deterministic.py \
  tests/test_cuda.py -k "guessed or combine or deterministic or max_abs or weight or sums or bincount" \
  > "$OUT/pytest-1.log" 2>&1
rc=$?
echo "[$(( $(date +%s) - t0 )) s] pytest 1 exit $rc: $(tail -1 "$OUT/pytest-1.log")"
timeout "${TEST2_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/test_cuda_limits.py tests/test_cuda_offload.py \
  tests/test_cuda_agg.py tests/test_cuda_quick.py -k "determin or weight or fixed or quick" > "$OUT/pytest-2.log" 2>&1
rc=$?
echo "[$(( $(date +%s) - t0 )) s] pytest 2 exit $rc: $(tail -1 "$OUT/pytest-2.log")"
grep -hE "^FAILED|^ERROR" "$OUT"/pytest-*.log | head -10
echo "=== W group (new)"; grep -E "^W f32" "$OUT/gpu_suite.log"
echo "=== W group (before)"; grep -E "^W f32" "$OUT/gpu_suite_before.log" 2>/dev/null
