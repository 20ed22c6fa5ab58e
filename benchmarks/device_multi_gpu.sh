#!/usr/bin/env bash
# One device call on nvidia-h200-x2: the multi-GPU heatmap (issue #7) on one Dask worker per GPU.
# Carry .whl-dask (wheels: dask, distributed, dask-cuda and their pure deps; how to fetch them:
# benchmarks/device_wheels.sh). Writes under $OUT.
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
. benchmarks/device_wheels.sh
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import dask, distributed, dask_cuda; print('dask', dask.__version__, 'distributed', distributed.__version__, 'dask_cuda', dask_cuda.__version__)" 2>&1 | tail -2
timeout "${MGPU_S:-420}" python3 benchmarks/multi_gpu.py --out "$OUT" ${MGPU_ARGS:-} 2>&1 | tee "$OUT/multi_gpu.log" | grep -v "^\s*$" | tail -40
