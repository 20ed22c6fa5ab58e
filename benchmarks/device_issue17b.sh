#!/usr/bin/env bash
# One device call for issue #17 items 3, 5 and 6: the host cost of a small call with a cProfile
# (gpu_suite.py --only small), the wgpu per-call figures against the cuda backend on the H200's
# Vulkan adapter (wgpu_suite.py), where host data runs faster on the GPU (gpu_offload.py),
# then the tests (TESTS, default: every cuda- and wgpu-marked test, then
# tests/test_backend_select.py). Needs .whl (wgpu and its pure dependencies) and .gl (the Vulkan loader
# and libglvnd) carried, as DEVICE.md says. Usage on the device machine, from the repository
# root:  bash benchmarks/device_issue17b.sh
# (SKIP_OFFLOAD=1 SKIP_SMALL=1 SKIP_WGPU=1 SKIP_TESTS=1  WGPU_ARGS=--sweep  OFFLOAD_ARGS=...)
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
. benchmarks/device_wheels.sh
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
nproc | sed 's/^/cpus: /' | tee -a "$OUT/device.txt"
if [ -z "${SKIP_SMALL:-}" ]; then
  timeout "${SMALL_S:-120}" python3 benchmarks/gpu_suite.py --only small --profile "$OUT/small-profile.txt" \
    --out /tmp/gpu_small.md > "$OUT/small.log" 2>&1
  echo "small exit $?"
fi
if [ -z "${SKIP_WGPU:-}" ]; then
  timeout "${WGPU_S:-240}" python3 benchmarks/wgpu_suite.py ${WGPU_ARGS:-} --out /tmp/wgpu-out > "$OUT/wgpu.log" 2>&1
  echo "wgpu exit $?"
fi
if [ -z "${SKIP_OFFLOAD:-}" ]; then
  timeout "${OFFLOAD_S:-240}" python3 benchmarks/gpu_offload.py --out "$OUT" ${OFFLOAD_ARGS:-} > "$OUT/offload.log" 2>&1
  echo "offload exit $?"
fi
if [ -z "${SKIP_TESTS:-}" ]; then
  if [ -n "${TESTS:-}" ]; then
    timeout "${TEST_S:-300}" python3 -m pytest -q -p no:cacheprovider $TESTS > "$OUT/pytest.log" 2>&1
  else
    timeout "${TEST_S:-300}" python3 -m pytest -q -p no:cacheprovider -m "cuda or wgpu" tests > "$OUT/pytest.log" 2>&1
    echo "pytest (cuda or wgpu) exit $?" >> "$OUT/pytest.log"
    timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_backend_select.py >> "$OUT/pytest.log" 2>&1
  fi
  echo "pytest exit $?"; grep -E "^FAILED|^ERROR|passed|failed|exit" "$OUT/pytest.log" | head -20
fi
echo "=== summary"
grep -E "^small " "$OUT/small.log" 2>/dev/null
[ -f "$OUT/offload.log" ] && grep -E "faster at every|^## " "$OUT/offload.log"
[ -f "$OUT/wgpu.log" ] && sed -n '/^| input | wgpu kernel/,/^$/p;/^| input | kernel |/,/^$/p' "$OUT/wgpu.log"
# $OUT holds 8 files at most (what the device tool brings back): device.txt, small.log,
# small-profile.txt, wgpu.log, offload.log, gpu_offload.md/.json, pytest.log
