set -u
mkdir -p "$OUT"
. benchmarks/device_wheels.sh
python3 -m pip install -q --no-index --no-deps --target "$site" .whl-serve/*.whl 2>&1 | tail -2
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 290 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_agg.py tests/test_heatmap.py tests/test_deterministic.py -k "cuda or Cuda or agg" > "$OUT/pytest.log" 2>&1
echo "pytest exit $?"; grep -E "passed|failed" "$OUT/pytest.log" | tail -3; grep -E "^FAILED|^ERROR" "$OUT/pytest.log" | head -8
[ -n "${SKIP_SERVE:-}" ] || timeout 200 python3 benchmarks/serve_bench.py --gpu --repeat 5 --out "$OUT/serve-gpu.md" > "$OUT/serve.log" 2>&1
echo "serve exit $?"; tail -28 "$OUT/serve.log"
