#!/usr/bin/env bash
# One device call: the GPU test suite, then the GPU benchmarks (DEVICE.md: one scripted call per change).
# Usage on the device machine, from the repository root:  bash benchmarks/device_all.sh
# Writes logs and result tables under $OUT (default: ./device-out).
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
. benchmarks/device_wheels.sh  # carried dask / wgpu wheels, when present: their tests run too
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
# 1. every test that runs on the cuda backend (the backend matrix's [cuda] cases and the cuda files)
timeout "${TEST_S:-300}" python3 -m pytest -q -p no:cacheprovider -k "cuda" tests 2>&1 | tee "$OUT/pytest-cuda.log" | tail -15
# 2. 2-D binning (G4) and the fused luma histogram (G6)
timeout "${SPATIAL_S:-150}" python3 benchmarks/gpu_spatial.py --out "$OUT" 2>&1 | tee "$OUT/gpu_spatial.log" | tail -30
# 3. 1-D histograms and scans (G1, G2, G3, G5) against CUB, cupy and torch
if [ -n "${SUITE:-}" ]; then
  nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC benchmarks/cub_anchor.cu -o /tmp/libcub_anchor.so &&
  timeout "${SUITE_S:-200}" python3 benchmarks/gpu_suite.py --cub /tmp/libcub_anchor.so --out "$OUT/gpu_suite.md" 2>&1 | tail -30
fi
