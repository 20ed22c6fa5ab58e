#!/usr/bin/env bash
# One device call for issue #17 item 2 on the 1-D counting kernel (hist1d.cu hist_count): gpu_suite
# groups G1 (uint8 2^31), G2 (float32 2^28) and E (float32 values on edges) with their sweeps, CUB
# in the same process; Nsight Compute on the float32 and uint8 launches; the cuda tests;
# compute-sanitizer memcheck on benchmarks/sanitize_kernels.py and on the tests of the new paths;
# an nvcc compile check of every kernel. Usage on the device machine, from the repository root:
#   bash benchmarks/device_issue17c.sh
# (GROUPS_=G1,G2,E  SWEEP=--sweep  SKIP_NCU=1  SKIP_TESTS=1  PROFILE=1: a cProfile of the host's work
#  per call  TESTS=...  SUITE_S, TEST_S, SAN_S, NCU_S: time limits  NCU_N: launches profiled
#  HOST_ONLY=1: no CUB, no kernel compile check, no sanitizer: nothing else runs on the host while
#  the host's µs per call are timed  BEFORE=dir: the suite also runs on the package in dir/hotbin
#  DEADLINE: epoch seconds by which the tests stop, instead of TEST_S)
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
cub=""
if [ -z "${HOST_ONLY:-}" ]; then
  nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC benchmarks/cub_anchor.cu -o /tmp/libcub_anchor.so > "$OUT/build.log" 2>&1
  echo "cub build exit $?" >> "$OUT/build.log"; cub="--cub /tmp/libcub_anchor.so"
  (timeout 300 nice python3 .ci/compile_kernels.py >> "$OUT/build.log" 2>&1; echo "compile_kernels exit $?" >> "$OUT/build.log") &
fi
timeout "${SUITE_S:-240}" python3 benchmarks/gpu_suite.py $cub --only "${GROUPS_:-G1,G2,E}" \
  ${SWEEP---sweep} --no-anchors --out "${SUITE_MD:-$OUT/gpu_suite.md}" > "$OUT/gpu_suite.log" 2>&1
echo "suite exit $?"
if [ -n "${BEFORE:-}" ]; then  # the same suite on the package before a change (no CUB rows needed)
  PYTHONPATH=$PWD/$BEFORE:$PWD/benchmarks timeout "${SUITE_S:-240}" python3 benchmarks/gpu_suite.py \
    --only "${GROUPS_:-G1,G2,E}" --no-anchors --out /tmp/before.md > "$OUT/gpu_suite_before.log" 2>&1
  echo "suite (before) exit $?"
fi
if [ -n "${PROFILE:-}" ]; then
  # the host's work per call (what the device waits for in a call from idle), by function
  cat > /tmp/profile_hist1d.py <<'PY'
import cProfile, pstats, sys
import cupy as cp, numpy as np, hotbin
from hotbin.backend import cuda as cb
from hotbin.binning import histogram_rule
from gpu_suite import hash_u32
u = hash_u32(1 << 18, 1).view(cp.uint8)
f = (hash_u32(1 << 20, 3) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -24)
ru, rf = histogram_rule(u[:1], 256, (0, 256)), histogram_rule(f[:1], 256, (0.0, 1.0))
calls = {"cb.histogram uint8": lambda: cb.histogram(u, ru), "hotbin.histogram uint8": lambda: hotbin.histogram(u, 256, (0, 256)),
         "cb.histogram float32": lambda: cb.histogram(f, rf), "hotbin.histogram float32": lambda: hotbin.histogram(f, 256, (0.0, 1.0))}
for name, fn in calls.items():
    for _ in range(200):
        fn()
    cp.cuda.Device().synchronize()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(500):
        fn()
    pr.disable()
    cp.cuda.Device().synchronize()
    print(f"===== {name}: 500 calls")
    pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(18)
PY
  timeout 120 python3 /tmp/profile_hist1d.py > "$OUT/profile.txt" 2>&1
  echo "profile exit $?"
fi
if [ -z "${SKIP_NCU:-}" ]; then
  # one launch of each: float32 2^28 uniform over 256 bins, uint8 2^31 uniform
  cat > /tmp/ncu_hist1d.py <<'PY'
import cupy as cp, numpy as np, hotbin
from gpu_suite import hash_u32
f = (hash_u32(1 << 28, 3) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -24)
u = hash_u32(1 << 29, 1).view(cp.uint8)
for _ in range(2):
    hotbin.histogram(f, 256, (0.0, 1.0))
    hotbin.histogram(u, 256, (0, 256))
cp.cuda.Device().synchronize()
PY
  timeout "${NCU_S:-120}" ncu --clock-control none --kernel-name regex:hist_count --launch-skip 2 \
    --launch-count "${NCU_N:-2}" --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section InstructionStats python3 /tmp/ncu_hist1d.py > "$OUT/ncu.txt" 2>&1
  echo "ncu exit $?"
fi
if [ -z "${SKIP_TESTS:-}" ] && [ -z "${HOST_ONLY:-}" ]; then
  (timeout "${SAN_S:-120}" compute-sanitizer --tool memcheck --error-exitcode 9 python3 benchmarks/sanitize_kernels.py
   timeout "${SAN_S:-120}" compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
     tests/test_cuda.py -k "nearest_rule_hostile or value_table_in_the_flush") > "$OUT/sanitize-memcheck.log" 2>&1
  echo "compute-sanitizer memcheck: exit $? $(grep -E 'ERROR SUMMARY|passed|failed' "$OUT/sanitize-memcheck.log" | tr '\n' ' ')"
fi
if [ -z "${SKIP_TESTS:-}" ]; then
  # each finished test with the seconds since the start (a run cut by the limit still says where
  # the time went)
  start=$(date +%s)
  limit=${TEST_S:-240}
  if [ -n "${DEADLINE:-}" ]; then limit=$(( DEADLINE - $(date +%s) )); fi  # what is left of the call
  timeout "$limit" python3 -m pytest -v -p no:cacheprovider --durations=25 ${TESTS:-tests/test_cuda*.py} 2>&1 \
    | while IFS= read -r l; do echo "$(( $(date +%s) - start )) $l"; done > "$OUT/pytest.log"
  echo "pytest: $(grep -cE ' PASSED' "$OUT/pytest.log") passed, $(grep -cE ' FAILED| ERROR' "$OUT/pytest.log") failed"
  grep -E " FAILED| ERROR" "$OUT/pytest.log" | head -10; tail -1 "$OUT/pytest.log"
fi
wait; grep -E "^(ok|FAIL)|exit" "$OUT/build.log" 2>/dev/null
echo "=== ncu"
grep -E "hist_count|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Ipc A|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Block Limit Reg|Block Limit Shared" "$OUT/ncu.txt" 2>/dev/null | sed 's/  */ /g' | cut -c1-110
echo "=== suite"
grep -E "^floor|^G1|^G2|^E |host|^small" "$OUT/gpu_suite.log"
if [ -n "${BEFORE:-}" ]; then echo "=== suite (before)"; grep -E "^G1|^G2|^E |host|^small" "$OUT/gpu_suite_before.log"; fi
