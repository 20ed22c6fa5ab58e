#!/usr/bin/env bash
# One device call for a change: the cuda tests (dask's too, from carried wheels), then
# compute-sanitizer (memcheck, racecheck, synccheck) on benchmarks/sanitize_kernels.py.
# Usage on the device machine, from the repository root: bash benchmarks/device_tests.sh
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
. benchmarks/device_wheels.sh
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
timeout "${TEST_S:-330}" python3 -m pytest -q -p no:cacheprovider -k "cuda or distributed or dask" tests \
  --deselect tests/test_install.py 2>&1 | tee "$OUT/pytest-cuda.log" | tail -25
for tool in memcheck racecheck synccheck; do
  timeout "${SAN_S:-60}" compute-sanitizer --tool $tool --error-exitcode 9 python3 benchmarks/sanitize_kernels.py \
    > "$OUT/sanitize-$tool.log" 2>&1
  echo "compute-sanitizer $tool: exit $? $(tail -2 "$OUT/sanitize-$tool.log" | tr '\n' ' ')"
done
