#!/usr/bin/env bash
# One device call for issue #17 (the 1-D rule on edges, small calls): gpu_suite groups E (values on
# edges), G2 and small (host µs per call, with a cProfile), then the cuda tests, compute-sanitizer
# memcheck and an nvcc compile check of every kernel (in the background). Usage on the device
# machine, from the repository root:  bash benchmarks/device_issue17.sh
# (GROUPS_=E,G2,small  SWEEP=--sweep  TESTS="tests/test_cuda*.py"  SKIP_SUITE=1  SKIP_TESTS=1)
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC benchmarks/cub_anchor.cu -o /tmp/libcub_anchor.so > "$OUT/build.log" 2>&1
echo "cub build exit $?" >> "$OUT/build.log"
(timeout 300 nice python3 .ci/compile_kernels.py >> "$OUT/build.log" 2>&1; echo "compile_kernels exit $?" >> "$OUT/build.log") &
ck=$!
if [ -z "${SKIP_SUITE:-}" ]; then
  timeout "${SUITE_S:-240}" python3 benchmarks/gpu_suite.py --cub /tmp/libcub_anchor.so --only "${GROUPS_:-E,G2,small}" \
    ${SWEEP---sweep} --profile "$OUT/small-profile.txt" --out "$OUT/gpu_suite.md" > "$OUT/gpu_suite.log" 2>&1
  echo "suite exit $?"; grep -E "^small|^E |^G2 " "$OUT/gpu_suite.log"
fi
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout "${TEST_S:-240}" python3 -m pytest -q -p no:cacheprovider ${TESTS:-tests/test_cuda*.py} > "$OUT/pytest.log" 2>&1
  echo "pytest exit $?"; grep -E "^FAILED|^ERROR" "$OUT/pytest.log" | head -10; tail -2 "$OUT/pytest.log"
  timeout "${SAN_S:-120}" compute-sanitizer --tool memcheck --error-exitcode 9 python3 benchmarks/sanitize_kernels.py \
    > "$OUT/sanitize-memcheck.log" 2>&1
  echo "compute-sanitizer memcheck: exit $? $(tail -2 "$OUT/sanitize-memcheck.log" | tr '\n' ' ')"
fi
wait $ck; grep -E "^(ok|FAIL)|exit" "$OUT/build.log"
