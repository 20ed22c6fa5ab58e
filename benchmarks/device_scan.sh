#!/usr/bin/env bash
# One device call for the float scans (hotbin.cumsum on CuPy float32/float64; scan.cu lane
# kernels): the cuda scan tests, the public call on 2^28 float32/float64 on this tree and on
# the package before the change (BEFORE, a copy of src/), gpu_suite's scan group (CUB beside),
# the lane kernels alone for each tile shape, compute-sanitizer memcheck and racecheck on the
# float scan paths (2^18 values). A short summary last; logs under $OUT. From the repository root:
#   BEFORE=before17m/src bash benchmarks/device_scan.sh
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
date -u | tee -a "$OUT/device.txt"
nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC benchmarks/cub_anchor.cu -o /tmp/libcub_anchor.so > "$OUT/build.log" 2>&1 &
i=0
for t in "tests/test_cuda_scan.py" "tests/test_cuda.py -k 'cumsum or scan'" "tests/test_cuda_limits.py -k 'cumsum or scan'"; do
  i=$((i + 1))
  eval "timeout ${TEST_S:-150} python3 -m pytest -q -p no:cacheprovider $t" > "$OUT/pytest-$i.log" 2>&1
  stamp "pytest $t: exit $? $(tail -1 "$OUT/pytest-$i.log")"
  grep -E "^FAILED|^ERROR|Error" "$OUT/pytest-$i.log" | head -5
done
wait
timeout 120 python3 benchmarks/scan_block_sweep.py --api > "$OUT/bench.log" 2>&1; stamp "api exit $?"
if [ -n "${BEFORE:-}" ]; then
  PYTHONPATH=$PWD/$BEFORE:$PWD/benchmarks timeout 120 python3 benchmarks/scan_block_sweep.py --api \
    | sed 's/^API/BEFORE API/' >> "$OUT/bench.log" 2>&1; stamp "api (before) exit $?"
fi
timeout 150 python3 benchmarks/scan_block_sweep.py --tiles >> "$OUT/bench.log" 2>&1; stamp "tiles exit $?"
timeout "${SUITE_S:-120}" python3 benchmarks/gpu_suite.py --cub /tmp/libcub_anchor.so --only scan --no-anchors \
  --out "$OUT/gpu_suite.md" > "$OUT/gpu_suite.log" 2>&1; stamp "gpu_suite scan exit $?"
cat > /tmp/san_scan.py <<'PY'
import cupy as cp, numpy as np, hotbin
from hotbin import scan_order
rng = np.random.default_rng(1)
for dt in (np.float32, np.float64):
    for shape, axis, skip in (((1 << 18) + 7,), None, 0), (((1 << 18) + 7,), None, 1), ((5, 4100), 1, 0), ((3, 9001), 1, 0), ((300, 3), 0, 0):
        a = (rng.standard_normal(shape) * 100).astype(dt)
        d = cp.asarray(a)
        got = hotbin.cumsum(d[skip:] if skip else d, axis=axis).get()
        ref = hotbin.cumsum(a[skip:] if skip else a, axis=axis, backend="cpu")
        assert got.tobytes() == ref.tobytes(), (dt, shape, axis, skip)
print("sanitize driver ok")
PY
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 /tmp/san_scan.py > "$OUT/san-$tool.log" 2>&1
  stamp "compute-sanitizer $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/san-$tool.log" | head -2 | tr '\n' ' ')"
done
echo "=== summary"
cat "$OUT/device.txt"
grep -E "API|TILE|SCAN_BLOCK" "$OUT/bench.log"
grep -E "^scan" "$OUT/gpu_suite.log"
grep -E "^\| scan" "$OUT/gpu_suite.md" 2>/dev/null | head -4
