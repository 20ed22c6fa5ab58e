#!/usr/bin/env bash
# One device call for issue #17's uint16 many-bin and weighted rows (hist1d.cu hist_shift, hist_sum,
# max_abs_bits): gpu_suite groups G3 (uint16 2^28, 4096 / 65536 bins) and W (weighted float32 2^28,
# float64 and deterministic sums), CUB in the same process; the same groups on the tree before the
# change (BEFORE, a copy of the package); Nsight Compute on the new kernels and on the ones they
# replace; compute-sanitizer memcheck on the new kernels; the cuda tests of the changed files; an
# nvcc compile check of every kernel. Usage on the device machine, from the repository root:
#   bash benchmarks/device_issue17e.sh
# (GROUPS_=G3,W  SWEEP=--sweep  BEFORE=before17e/src: the package before the change
#  SKIP_NCU=1  SKIP_TESTS=1  TESTS=...  TEST_K=...: pytest -k  SUITE_S, BEFORE_S, TEST_S, SAN_S, NCU_S: limits)
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC benchmarks/cub_anchor.cu -o /tmp/libcub_anchor.so > "$OUT/build.log" 2>&1
echo "cub build exit $?" >> "$OUT/build.log"
(timeout 300 nice python3 .ci/compile_kernels.py >> "$OUT/build.log" 2>&1; echo "compile_kernels exit $?" >> "$OUT/build.log") &
timeout "${SUITE_S:-200}" python3 benchmarks/gpu_suite.py --cub /tmp/libcub_anchor.so --only "${GROUPS_:-G3,W}" \
  ${SWEEP---sweep} --no-anchors --out "$OUT/gpu_suite.md" > "$OUT/gpu_suite.log" 2>&1
echo "suite exit $? ($(( $(date +%s) - t0 )) s)"
if [ -n "${BEFORE:-}" ]; then  # the same groups on the package before the change (no sweep)
  PYTHONPATH=$PWD/$BEFORE:$PWD/benchmarks timeout "${BEFORE_S:-120}" python3 benchmarks/gpu_suite.py \
    --cub /tmp/libcub_anchor.so --only "${GROUPS_:-G3,W}" --no-anchors --out /tmp/before.md \
    > "$OUT/gpu_suite_before.log" 2>&1
  echo "suite (before) exit $? ($(( $(date +%s) - t0 )) s)"
fi
cat > /tmp/ncu_17e.py <<'PY'
# one launch of each (after a warm-up): u16 2^28 uniform 4096 / 65536 bins, weighted f32 2^28
# uniform float64 and deterministic
import cupy as cp, numpy as np, hotbin
from gpu_suite import hash_u32
u = hash_u32(1 << 27, 2).view(cp.uint16)
f = (hash_u32(1 << 28, 3) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -24)
w = (hash_u32(1 << 28, 11) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -23) - np.float32(0.25)
calls = [lambda: hotbin.histogram(u, 4096, (0, 65536)), lambda: hotbin.histogram(u, 65536, (0, 65536)),
         lambda: hotbin.histogram(f, 256, (0.0, 1.0), weights=w),
         lambda: hotbin.histogram(f, 256, (0.0, 1.0), weights=w, deterministic=True)]
for c in calls:  # warm-up: compiled and planned
    c()
cp.cuda.Device().synchronize()
cp.cuda.profiler.start()
for c in calls:
    c()
cp.cuda.Device().synchronize()
cp.cuda.profiler.stop()
PY
if [ -z "${SKIP_NCU:-}" ]; then
  sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section InstructionStats"
  timeout "${NCU_S:-150}" ncu --clock-control none --profile-from-start off \
    --kernel-name regex:'hist_shift|hist_sum|max_abs_bits|hist_count|fold_lut' $sections \
    python3 /tmp/ncu_17e.py > "$OUT/ncu.txt" 2>&1
  echo "ncu exit $? ($(( $(date +%s) - t0 )) s)"
  if [ -n "${BEFORE:-}" ]; then
    PYTHONPATH=$PWD/$BEFORE:$PWD/benchmarks timeout "${NCU_S:-150}" ncu --clock-control none --profile-from-start off \
      --kernel-name regex:'hist_count|hist_sum|fold_lut|cupy|reduce' $sections \
      python3 /tmp/ncu_17e.py > "$OUT/ncu_before.txt" 2>&1
    echo "ncu (before) exit $? ($(( $(date +%s) - t0 )) s)"
  fi
fi
if [ -z "${SKIP_TESTS:-}" ]; then
  cat > /tmp/san_17e.py <<'PY'
# every new kernel on small inputs, checked against NumPy (compute-sanitizer memcheck around it)
import cupy as cp, numpy as np, hotbin
from hotbin.backend import cuda as cb
from hotbin.backend.cuda import tuning
rng = np.random.default_rng(5)
v = rng.integers(0, 65536, 100003).astype(np.uint16)
s = rng.integers(-32768, 32768, 100003).astype(np.int16)
for ov in ({}, {"copies": 1}, {"layout": "shift16"}, {"layout": "shift16", "copies": 1}, {"unroll": 8}):
    with tuning.forced(**ov):
        for a, bins, r in ((v, 4096, (0, 65536)), (v, 65536, (0, 65536)), (v, 2048, (32768, 65536)), (s, 4096, (-32768, 32768))):
            for x in (a, a[1:-3]):
                h, _ = hotbin.histogram(cp.asarray(x), bins, r)
                assert np.array_equal(h.get(), np.histogram(x, bins, r)[0]), (ov, bins, r)
x = rng.normal(0, 2, 100003).astype(np.float32)
w = rng.normal(size=x.size).astype(np.float32)
for ov in ({}, {"copies": 1}, {"copies": 32, "blocks_per_sm": 1}, {"layout": "global"}):
    with tuning.forced(**ov):
        for xx, ww in ((x, w), (x[1:], w[1:]), (x[1:], w[:-1]), (x.astype(np.float64), w)):
            for det in (False, True):
                h, _ = hotbin.histogram(cp.asarray(xx), 256, (-3, 3), weights=cp.asarray(ww), deterministic=det)
                ref = np.histogram(xx, 256, (-3, 3), weights=ww.astype(np.float64))[0]
                assert np.allclose(h.get(), ref, rtol=1e-6, atol=1e-6), (ov, det)
for a in (w, w[1:], w.astype(np.float64)[3:]):
    assert cb.sums.max_abs(cp.asarray(a)) == float(np.max(np.abs(a)))
print("sanitized script: ok")
PY
  timeout "${SAN_S:-150}" compute-sanitizer --tool memcheck --error-exitcode 9 python3 /tmp/san_17e.py \
    > "$OUT/sanitize-memcheck.log" 2>&1
  echo "compute-sanitizer memcheck: exit $? $(grep -E 'ERROR SUMMARY|ok' "$OUT/sanitize-memcheck.log" | tr '\n' ' ') ($(( $(date +%s) - t0 )) s)"
  start=$(date +%s)
  left=$(( ${CALL_S:-570} - (start - t0) )); [ "$left" -lt 30 ] && left=30  # what the call has left
  timeout "${TEST_S:-$left}" python3 -m pytest -v -p no:cacheprovider --durations=15 ${TEST_K:+-k "$TEST_K"} \
    ${TESTS:-tests/test_cuda.py tests/test_cuda_quick.py tests/test_cuda_planning.py} 2>&1 \
    | while IFS= read -r l; do echo "$(( $(date +%s) - start )) $l"; done > "$OUT/pytest.log"
  echo "pytest: $(grep -cE ' PASSED' "$OUT/pytest.log") passed, $(grep -cE ' FAILED| ERROR' "$OUT/pytest.log") failed ($(( $(date +%s) - t0 )) s)"
  grep -E " FAILED| ERROR" "$OUT/pytest.log" | head -10; tail -1 "$OUT/pytest.log"
fi
wait; grep -E "^(ok|FAIL)|exit" "$OUT/build.log"
echo "=== ncu (kernel, duration, DRAM %, registers, achieved occupancy %)"
for f in "$OUT/ncu.txt" "$OUT/ncu_before.txt"; do
  [ -f "$f" ] && echo "--- $f" && awk '/^  [a-z_]+.*\(/{split($0, a, "("); k=substr(a[1], 1, 60)} /Duration/{d=$NF" "$(NF-1)} /DRAM Throughput/{m=$NF}
    /Registers Per Thread/{r=$NF} /Achieved Occupancy/{print k " | " d " | " m " | " r " | " $NF}' "$f" | sed 's/  */ /g' | grep -v cupy_
done
echo "=== suite"
grep -E "^floor|^G3|^W|max" "$OUT/gpu_suite.log" | sed 's/  */ /g'
if [ -n "${BEFORE:-}" ]; then echo "=== suite (before)"; grep -E "^floor|^G3|^W |max" "$OUT/gpu_suite_before.log" | sed 's/  */ /g'; fi
echo "=== tests"; grep -E " FAILED| ERROR" "$OUT/pytest.log" | head -10; tail -1 "$OUT/pytest.log"
grep -E "ERROR SUMMARY|sanitized" "$OUT/sanitize-memcheck.log" | head -3
