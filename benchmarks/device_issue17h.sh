#!/usr/bin/env bash
# One device call for issue #17, the heatmap row (2^28 float32 points into 1024 x 1024 through
# hotbin.heatmap(..., backend="cuda"), 0/50/90/100 % in one cell): the cuda spatial tests, G4 of
# benchmarks/gpu_spatial.py (the public call and the primitive, one call and queued, per-kernel
# times, the other scatter, direct, the anchors), the same rows on the package before the change
# (BEFORE=dir holding hotbin/), Nsight Compute on the tiled pipeline's kernels, compute-sanitizer
# memcheck and racecheck on the tiled strategy's smoke cases, a cProfile of the host's work per
# public call. Usage on the device machine, from the repository root:
#   bash benchmarks/device_issue17h.sh
# (TESTS=...: pytest arguments (default: the cuda spatial tests, tiled strategy first)
#  TEST_S, BENCH_S, NCU_S, SAN_S: time limits of the steps  TOTAL_S: of the whole script (a step
#  gets what is left at most; none starts with less than 10 s)  SKIP_TESTS=1 SKIP_NCU=1 SKIP_SAN=1
#  BENCH_ARGS: extra gpu_spatial.py arguments (default --skip-luma --skip-weights)  K_EXPR: pytest -k
#  instead of the default selection  SMOKE: the strategies compute-sanitizer runs (tiled tiled-block))
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
# the limit of a step: its own ($1) or what is left of TOTAL_S, whichever is less
limit() { local left=$(( ${TOTAL_S:-270} - ($(date +%s) - t0) )); echo $(( left < $1 ? left : $1 )); }
enough() { [ "$(limit 10)" -ge 10 ]; }

if [ -z "${SKIP_TESTS:-}" ]; then
  # the tiled strategy (scatter_warps where it applies) on every case of the spatial and
  # aggregation tests, the new tests, both scatters when regions overflow; each test stamped
  K="axis or warp or overflow or one_cell_more or (tiled and not block and (edges or subnormal or rules or mixed"
  K="$K or hot or one_cell or chunks or weighted or empty or weight_dtype or category or centered))"
  K=${K_EXPR:-$K}  # a shorter selection
  if [ -n "${TESTS:-}" ]; then args=($TESTS); else
    args=(tests/test_cuda_spatial_rule.py tests/test_cuda_spatial.py tests/test_cuda_agg.py -k "$K"); fi
  timeout "$(limit ${TEST_S:-100})" python3 -m pytest -v -p no:cacheprovider --durations=15 "${args[@]}" 2>&1 \
    | while IFS= read -r l; do echo "$(( $(date +%s) - t0 )) $l"; done > "$OUT/pytest.log"
  stamp "pytest: $(grep -cE ' PASSED' "$OUT/pytest.log") passed, $(grep -cE ' FAILED| ERROR' "$OUT/pytest.log") failed"
  grep -E " FAILED| ERROR" "$OUT/pytest.log" | head -10; tail -1 "$OUT/pytest.log"
fi

timeout "$(limit ${BENCH_S:-120})" python3 benchmarks/gpu_spatial.py ${BENCH_ARGS:---skip-luma --skip-weights} \
  --out "$OUT" > "$OUT/gpu_spatial.log" 2>&1
stamp "gpu_spatial exit $?"

if [ -n "${BEFORE:-}" ] && enough; then  # the same rows on the package before
  PYTHONPATH=$PWD/$BEFORE:$PWD/benchmarks timeout "$(limit ${BENCH_S:-120})" python3 benchmarks/gpu_spatial.py --api-only \
    --out /tmp > "$OUT/gpu_spatial_before.log" 2>&1
  stamp "gpu_spatial (before) exit $?"
fi

cat > /tmp/host_profile.py <<'PY'
# the host's work in one public call (2^20 points: the device's part is short), by function
import cProfile, pstats, sys
import cupy as cp, hotbin
from gpu_spatial import API_KW, points
x, y = points(1 << 20, 0.0)
for _ in range(20):
    hotbin.heatmap(x, y, **API_KW)
cp.cuda.Device().synchronize()
pr = cProfile.Profile()
pr.enable()
for _ in range(200):
    hotbin.heatmap(x, y, **API_KW)
cp.cuda.Device().synchronize()
pr.disable()
print("===== hotbin.heatmap, 200 calls of 2^20 points")
pstats.Stats(pr, stream=sys.stdout).sort_stats("cumulative").print_stats(35)
PY
enough && timeout "$(limit 40)" python3 /tmp/host_profile.py > "$OUT/host_profile.txt" 2>&1
stamp "host profile exit $?"

if [ -z "${SKIP_NCU:-}" ] && enough; then
  # one primitive call each: warp scatter at 0 % and 100 % hot, the block scatter at 0 % (NCU_BLOCK=0: not)
  cat > /tmp/ncu_spatial.py <<'PY'
import os
import cupy as cp
from hotbin import binning
from hotbin.backend.cuda import spatial as cs, tuning
from gpu_spatial import points
rx, ry = binning.cell_rule(1024, 0.0, 1.0, "w"), binning.cell_rule(1024, 0.0, 1.0, "h")
for hot in (0.0, 1.0):
    x, y = points(1 << 28, hot)
    cs.histogram2d(x, y, rx, ry)
    if hot == 0.0 and os.environ.get("NCU_BLOCK", "1") == "1":
        with tuning.forced(scatter="block"):
            cs.histogram2d(x, y, rx, ry)
    del x, y
cp.cuda.Device().synchronize()
PY
  timeout "$(limit ${NCU_S:-80})" ncu --clock-control none --kernel-name regex:"scatter_|accumulate_tiles" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section InstructionStats python3 /tmp/ncu_spatial.py > "$OUT/ncu.txt" 2>&1
  stamp "ncu exit $?"
fi

if [ -z "${SKIP_SAN:-}" ]; then
  for tool in ${SAN_TOOLS:-memcheck racecheck}; do
    enough || break
    timeout "$(limit ${SAN_S:-60})" compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 benchmarks/gpu_spatial.py --smoke ${SMOKE:-tiled tiled-block} > "$OUT/sanitize-$tool.log" 2>&1
    stamp "compute-sanitizer $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|smoke ok' "$OUT/sanitize-$tool.log" | tr '\n' ' ')"
  done
fi

echo "=== ncu"
grep -E "  [a-z_]+<|Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Ipc A|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall|L1/TEX Hit|Mem Busy|Max Bandwidth" \
  "$OUT/ncu.txt" 2>/dev/null | sed 's/  */ /g' | cut -c1-120 | head -90
echo "=== host profile (top)"
grep -E "heatmap|histogram2d|_run|launch|aggregate|executor|restore|zeros|get\b|validate|cell_rule" "$OUT/host_profile.txt" | head -25
echo "=== before (package in ${BEFORE:-none})"
grep -E "^hot" "$OUT/gpu_spatial_before.log" 2>/dev/null
echo "=== after"
grep -E "^device read|passes|scatter=block|^hot" "$OUT/gpu_spatial.log"
# what comes back from the device: at most 8 files, so the logs travel as one archive
(cd "$OUT" && tar czf logs.tgz --exclude logs.tgz . 2>/dev/null; find . -type f ! -name logs.tgz ! -name '*.md' -delete)
