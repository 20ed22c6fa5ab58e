#!/usr/bin/env bash
# Everything hotbin runs on the GPU machine, in one script: one device call per change, the
# tests and the benchmarks in it, a short summary last (/work/shared/DEVICE.md). From the
# repository root on the device machine:
#
#   bash benchmarks/device.sh CASE [CASE ...]
#
# Cases, run in the order given:
#   tests      the GPU tests: each line of TESTS is one pytest call (default: every test whose
#              name says cuda, distributed or dask; with wgpu importable also -m wgpu and
#              tests/test_backend_select.py), run while time is left; an nvcc compile check of
#              every kernel (.ci/compile_kernels.py) beside them
#   sanitize   compute-sanitizer: memcheck, racecheck and synccheck on sanitize_kernels.py,
#              memcheck on its guess / hist16 / scan cases (racecheck on scan too), memcheck and
#              racecheck on gpu_spatial.py --smoke (SMOKE strategies); SAN_TESTS: pytest
#              arguments also run under memcheck
#   suite      gpu_suite.py (1-D counts, sums, scans against CUB, cupy, torch; SUITE_GROUPS) and
#              gpu_spatial.py (heatmaps against global atomics and cupy, luma; SPATIAL_ARGS)
#   all        tests, sanitize, suite
#   heatmap    gpu_spatial.py alone            agg       gpu_agg.py (heatmap aggregations)
#   scan       the scan tests, probes/scan_block_sweep.py (--api, --tiles), gpu_suite's scan
#              group, compute-sanitizer on the float scans
#   host       probes/gpu_host_call.py (ROUNDS, the host's µs per call) and gpu_host.py (host data)
#   profile    probes/gpu_det_call.py and probes/gpu_heatmap_call.py: where a call's time goes
#   offload    probes/gpu_offload.py (where NumPy data is faster on the GPU)
#   batched    probes/gpu_batched.py (axis=-1 histograms)
#   wgpu       wgpu_suite.py on the H200's Vulkan adapter (carry .whl and .gl: DEVICE.md)
#   ncu        Nsight Compute on probes/gpu_launches.py, NCU=hist1d,weighted,spatial
#   cpu        the CPU suites on the device host's Xeon (PIN=0,1: a 2-core machine; WHEELS: anchors)
#   multi-gpu  multi_gpu.py (nvidia-h200-x2; carry .whl-dask)
#   serve      serve_bench.py --gpu (carry .whl-serve: starlette, uvicorn)
#   script     any other script: SCRIPT="probes/gpu_host_tune.py ARGS" runs benchmarks/$SCRIPT
#
# Settings (environment): OUT (default device-out); TOTAL_S, the seconds the whole script may
# take (default 560: no step starts with less than 15 s left, each step gets what is left at
# most); BEFORE=dir, a copy of src/ before a change: suite, heatmap, scan, host and ncu also run
# on it; SRC=dir, the package tested by `tests` (default src); SUITE_GROUPS, SUITE_ARGS (e.g. --sweep,
# --no-anchors, --profile FILE), SPATIAL_ARGS (e.g. --api-only --skip-luma --skip-weights),
# AGG_ARGS, WGPU_ARGS (--sweep, --heatmap), OFFLOAD_ARGS, MGPU_ARGS, ROUNDS; cpu: PIN, WHEELS,
# PARTS= (empty: no cpu_call_parts), SUITE= (empty: no cpu_suite), HEATMAP=1, START=1.
# Carried wheels (.whl, .whl-dask, .whl-serve) go into a temporary site folder; .gl/*.deb (the
# Vulkan loader and libglvnd) are unpacked when present. What comes back: summary.txt, the
# result tables (*.md) and every log in logs.tgz (the device tool returns 8 files at most).
set -u
[ $# -gt 0 ] || { sed -n '2,43p' "$0"; exit 2; }
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
ROOT=$PWD
t0=$(date +%s)
SUMMARY=$OUT/summary.txt
say() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$SUMMARY"; }
# the limit of a step: its own ($1) or what is left of TOTAL_S, whichever is less
limit() { local left=$(( ${TOTAL_S:-560} - ($(date +%s) - t0) )); echo $(( left < $1 ? left : $1 )); }
enough() { [ "$(limit 15)" -ge 15 ]; }

# --- the machine: carried wheels, the Vulkan loader, the CUB anchor ---------------------
site=$(mktemp -d)
wheels=()
for w in .whl-dask/*.whl .whl/*.whl .whl-serve/*.whl; do
  [ -f "$w" ] || continue
  # keep the image's own CUDA Python packages (CuPy was built against them)
  case $(basename "$w") in cuda_pathfinder-*) python3 -c "import cuda.pathfinder" 2>/dev/null && continue;; esac
  wheels+=("$w")
done
[ ${#wheels[@]} -gt 0 ] && python3 -m pip install -q --no-index --no-deps --target "$site" "${wheels[@]}" 2>&1 | tail -3
if ls .gl/*.deb >/dev/null 2>&1; then
  # wgpu on the NVIDIA Vulkan ICD needs the loader (libvulkan1) and libglvnd (libglvnd0 libglx0
  # libgl1 libegl1): the ICD, libGLX_nvidia.so.0, is loaded through libglvnd
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
export PYTHONPATH="$site:$ROOT/${SRC:-src}:$ROOT/benchmarks"
before=(env "PYTHONPATH=$site:$ROOT/${BEFORE:-}:$ROOT/benchmarks")  # a command on the package before: "${before[@]}" cmd
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee -a "$SUMMARY"
{ date -u; nproc | sed 's/^/cpus: /'; grep -m1 "model name" /proc/cpuinfo; git log -1 --format='git HEAD %h %s (the working tree may differ)' 2>/dev/null; } \
  | tee -a "$SUMMARY"
cub() {  # the CUB anchor for gpu_suite.py, built once
  [ -f /tmp/libcub_anchor.so ] || nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC benchmarks/anchors/cub_anchor.cu \
    -o /tmp/libcub_anchor.so > "$OUT/build-cub.log" 2>&1
  [ -f /tmp/libcub_anchor.so ] && echo "--cub /tmp/libcub_anchor.so"
}
# pytest with every line stamped by the seconds since the start (a run cut by its limit still
# says where the time went); $1: the log's name, then pytest's arguments as one string
pytest_run() {
  local log=$OUT/$1 l; shift
  l=$(limit "${TEST_S:-600}")
  if [ "$l" -lt 15 ]; then say "not run (no time left): pytest $*"; return; fi
  eval "timeout $l python3 -m pytest -v -p no:cacheprovider --durations=15 $*" 2>&1 \
    | while IFS= read -r line; do echo "$(( $(date +%s) - t0 )) $line"; done > "$log"
  say "pytest $*: $(grep -cE ' PASSED' "$log") passed, $(grep -cE ' FAILED| ERROR' "$log") failed; $(tail -1 "$log" | cut -d' ' -f2-)"
  grep -E " FAILED| ERROR" "$log" | head -10 | tee -a "$SUMMARY"
}
sanitize() {  # $1 tool, $2 log name, then the command
  local tool=$1 log=$OUT/$2; shift 2
  enough || { say "not run (no time left): compute-sanitizer $tool $*"; return; }
  timeout "$(limit ${SAN_S:-150})" compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$log" 2>&1
  say "compute-sanitizer $tool $*: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard|all checks|all answers|smoke ok' "$log" | tail -2 | tr '\n' ' ')"
}
step() {  # $1 log name, $2 own limit, then the command; its exit status into the summary
  local log=$OUT/$1 own=$2; shift 2
  enough || { say "not run (no time left): $*"; return; }
  timeout "$(limit "$own")" "$@" > "$log" 2>&1
  say "$* -> exit $?"
}

# --- the cases ---------------------------------------------------------------------------
case_tests() {
  (timeout 300 nice python3 .ci/compile_kernels.py > "$OUT/build-kernels.log" 2>&1
   echo "compile_kernels exit $?" >> "$OUT/build-kernels.log") &
  local default='-k "cuda or distributed or dask" tests --deselect tests/test_install.py'
  if python3 -c "import wgpu" 2>/dev/null; then
    default="$default"$'\n''-m wgpu tests'$'\n''tests/test_backend_select.py'
  fi
  local i=0 line
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    i=$((i + 1)); pytest_run "pytest-$i.log" "$line"
  done <<< "${TESTS:-$default}"
  wait; grep -hE "^(ok|FAIL)|exit" "$OUT/build-kernels.log" | tail -3 | tee -a "$SUMMARY"
}
case_sanitize() {
  local tool
  for tool in memcheck racecheck synccheck; do sanitize $tool "san-$tool.log" python3 benchmarks/sanitize_kernels.py; done
  for c in guess hist16 scan; do sanitize memcheck "san-memcheck-$c.log" python3 benchmarks/sanitize_kernels.py $c; done
  sanitize racecheck san-racecheck-scan.log python3 benchmarks/sanitize_kernels.py scan
  for tool in memcheck racecheck; do
    sanitize $tool "san-$tool-spatial.log" python3 benchmarks/gpu_spatial.py --smoke ${SMOKE:-tiled tiled-block}
  done
  [ -n "${SAN_TESTS:-}" ] && eval "sanitize memcheck san-memcheck-tests.log python3 -m pytest -q -p no:cacheprovider $SAN_TESTS"
}
case_suite() {
  local c; c=$(cub)
  local only=${SUITE_GROUPS:+--only $SUITE_GROUPS}  # default: gpu_suite.py's own groups
  step gpu_suite.log 300 python3 benchmarks/gpu_suite.py $c $only ${SUITE_ARGS:-} --out "$OUT/gpu_suite.md"
  if [ -n "${BEFORE:-}" ]; then
    step gpu_suite_before.log 240 "${before[@]}" python3 benchmarks/gpu_suite.py $c $only --no-anchors \
      --out "$OUT/gpu_suite_before.md"
  fi
  echo "=== gpu_suite" >> "$SUMMARY"
  grep -E "^(floor|read|G[0-9]|E |W |scan|small)" "$OUT/gpu_suite.log" | sed 's/  */ /g' | tee -a "$SUMMARY"
  [ -n "${BEFORE:-}" ] && { echo "=== gpu_suite (before)"; grep -E "^(G[0-9]|E |W |scan|small)" "$OUT/gpu_suite_before.log"; } \
    | sed 's/  */ /g' | tee -a "$SUMMARY"
  [ -n "${SKIP_SPATIAL:-}" ] || case_heatmap
}
case_heatmap() {
  step gpu_spatial.log 240 python3 benchmarks/gpu_spatial.py ${SPATIAL_ARGS:-} --out "$OUT"
  [ -n "${BEFORE:-}" ] && step gpu_spatial_before.log 150 "${before[@]}" python3 benchmarks/gpu_spatial.py --api-only --out /tmp
  echo "=== gpu_spatial" >> "$SUMMARY"
  grep -E "^device read|passes|scatter=block|^hot|G points|luma|GB/s" "$OUT/gpu_spatial.log" | head -40 | tee -a "$SUMMARY"
  [ -f "$OUT/gpu_spatial_before.log" ] && { echo "=== gpu_spatial (before)"; grep -E "^hot" "$OUT/gpu_spatial_before.log"; } \
    | tee -a "$SUMMARY"
}
case_agg() {
  step gpu_agg.log 300 python3 benchmarks/gpu_agg.py ${AGG_ARGS:-} --out "$OUT"
  tail -25 "$OUT/gpu_agg.log" | tee -a "$SUMMARY"
}
case_scan() {
  local c; c=$(cub)
  pytest_run pytest-scan-1.log "tests/test_cuda_scan.py"
  pytest_run pytest-scan-2.log "tests/test_cuda.py -k 'cumsum or scan'"
  pytest_run pytest-scan-3.log "tests/test_cuda_limits.py -k 'cumsum or scan'"
  step scan-api.log 120 python3 benchmarks/probes/scan_block_sweep.py --api
  [ -n "${BEFORE:-}" ] && step scan-api-before.log 120 "${before[@]}" python3 benchmarks/probes/scan_block_sweep.py --api
  step scan-tiles.log 150 python3 benchmarks/probes/scan_block_sweep.py --tiles
  step gpu_suite_scan.log 120 python3 benchmarks/gpu_suite.py $c --only scan --no-anchors --out "$OUT/gpu_suite_scan.md"
  for tool in memcheck racecheck; do sanitize $tool "san-$tool-scan.log" python3 benchmarks/sanitize_kernels.py scan; done
  echo "=== scan" >> "$SUMMARY"
  { grep -hE "API|TILE|SCAN_BLOCK" "$OUT/scan-api.log" "$OUT/scan-tiles.log"
    [ -f "$OUT/scan-api-before.log" ] && grep -E "API" "$OUT/scan-api-before.log" | sed 's/^/BEFORE /'
    grep -E "^scan" "$OUT/gpu_suite_scan.log"; } | tee -a "$SUMMARY"
}
case_host() {
  mkdir -p /tmp/host
  local r pb pa
  for r in $(seq 1 "${ROUNDS:-2}"); do  # the first round writes cProfiles of 10000 small calls
    pb=(); pa=()
    if [ "$r" = 1 ]; then pb=(--profile /tmp/host/before.prof.txt); pa=(--profile /tmp/host/after.prof.txt); fi
    [ -n "${BEFORE:-}" ] && step "host-before$r.log" 150 "${before[@]}" python3 benchmarks/probes/gpu_host_call.py \
      --label "before$r" --out "/tmp/host/before$r.json" "${pb[@]}"
    step "host-after$r.log" 150 python3 benchmarks/probes/gpu_host_call.py --label "after$r" \
      --out "/tmp/host/after$r.json" --spare both "${pa[@]}"
  done
  tar czf "$OUT/host-data.tgz" -C /tmp/host . 2>/dev/null
  step gpu_host.log 300 python3 benchmarks/gpu_host.py --out "$OUT"
  echo "=== host (pre-launch / host us; GB/s: API one call, API queued, primitive, kernel)" >> "$SUMMARY"
  grep -hE "^(f32|u8|u16) |^small +(hotbin|cupy)" "$OUT"/host-*.log | sed 's/  */ /g' | tee -a "$SUMMARY"
  tail -20 "$OUT/gpu_host.log" | tee -a "$SUMMARY"
}
case_profile() {
  step det-call.log 150 python3 benchmarks/probes/gpu_det_call.py
  step heatmap-call.log 150 python3 benchmarks/probes/gpu_heatmap_call.py
  head -30 "$OUT/det-call.log" "$OUT/heatmap-call.log" | tee -a "$SUMMARY"
}
case_offload() {
  step offload.log 300 python3 benchmarks/probes/gpu_offload.py --out "$OUT" ${OFFLOAD_ARGS:-}
  grep -E "faster at every|^## " "$OUT/offload.log" | tee -a "$SUMMARY"
}
case_batched() {
  step batched.log 200 python3 benchmarks/probes/gpu_batched.py --out "$OUT/gpu_batched.md"
  tail -20 "$OUT/batched.log" | tee -a "$SUMMARY"
}
case_wgpu() {
  step wgpu.log 300 python3 benchmarks/wgpu_suite.py ${WGPU_ARGS:-} --out "$OUT/wgpu"
  sed -n '/^| input | wgpu kernel/,/^$/p;/^| input | kernel |/,/^$/p' "$OUT/wgpu.log" | tee -a "$SUMMARY"
  tail -5 "$OUT/wgpu.log" | tee -a "$SUMMARY"
}
case_ncu() {
  local sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats"
  local full="$sections --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section InstructionStats"
  local c args
  for c in $(echo "${NCU:-hist1d,weighted,spatial}" | tr ',' ' '); do
    case $c in
      hist1d) args="--kernel-name regex:${NCU_KERNELS:-hist_count} --launch-skip 2 --launch-count ${NCU_N:-2} $full";;
      weighted) args="--profile-from-start off --kernel-name regex:${NCU_KERNELS:-hist_shift|hist_sum|max_abs_bits|hist_count|fold_lut} $full";;
      spatial) args="--kernel-name regex:${NCU_KERNELS:-scatter_|accumulate_tiles} $sections --section SchedulerStats --section InstructionStats";;
      *) say "ncu: no case $c"; continue;;
    esac
    step "ncu-$c.txt" "${NCU_S:-150}" ncu --clock-control none $args python3 benchmarks/probes/gpu_launches.py --case "$c"
    [ -n "${BEFORE:-}" ] && step "ncu-$c-before.txt" "${NCU_S:-150}" "${before[@]}" ncu --clock-control none $args \
      python3 benchmarks/probes/gpu_launches.py --case "$c"
  done
  echo "=== ncu" >> "$SUMMARY"
  grep -E "\)x\(|Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Ipc A|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" \
    "$OUT"/ncu-*.txt 2>/dev/null | sed 's/  */ /g' | cut -c1-120 | head -120 | tee -a "$SUMMARY"
}
case_cpu() {
  local pin=${PIN:+taskset -c $PIN} csite="" tree
  if [ -n "${WHEELS:-}" ]; then csite=$(mktemp -d); python3 -m pip install -q --no-index --no-deps --target "$csite" "$WHEELS"/*.whl; fi
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L2|L3|MHz" | tee "$OUT/lscpu.txt" | tee -a "$SUMMARY"
  [ -n "${PIN:-}" ] && lscpu -e=CPU,CORE,SOCKET,NODE | awk -v p=",$PIN," 'NR==1 || index(p, ","$1",")' | tee -a "$OUT/lscpu.txt"
  if [ -n "${PARTS-1}" ]; then
    for tree in src ${BEFORE:+$BEFORE}; do
      echo "== $tree"; PYTHONPATH=$ROOT/$tree${csite:+:$csite}:$ROOT/benchmarks timeout "$(limit ${PARTS_S:-200})" $pin \
        python3 benchmarks/probes/cpu_call_parts.py --rounds 5 ${PARTS_ARGS:-}
    done > "$OUT/cpu-parts.log" 2>&1; say "cpu_call_parts exit $?"
  fi
  [ -n "${HEATMAP:-}" ] && PYTHONPATH=$ROOT/src${csite:+:$csite}:$ROOT/benchmarks timeout "$(limit ${HEATMAP_S:-300})" $pin \
    python3 benchmarks/heatmap_cpu.py --out "$OUT/heatmap-cpu.md" > "$OUT/heatmap-cpu.log" 2>&1 && say "heatmap_cpu done"
  [ -n "${SUITE-1}" ] && PYTHONPATH=$ROOT/src${csite:+:$csite}:$ROOT/benchmarks timeout "$(limit ${SUITE_S:-240})" $pin \
    python3 benchmarks/cpu_suite.py --out "$OUT/cpu-suite.md" > "$OUT/cpu-suite.log" 2>&1 && say "cpu_suite done"
  [ -n "${START:-}" ] && PYTHONPATH=$ROOT/src:$ROOT/benchmarks timeout "$(limit ${START_S:-300})" $pin \
    python3 benchmarks/start_cpu.py --offline --out "$OUT/start-cpu.md" > "$OUT/start-cpu.log" 2>&1 && say "start_cpu done"
  tail -45 "$OUT/cpu-suite.log" 2>/dev/null | tee -a "$SUMMARY"
  grep -E "^#|hotbin|datashader|floor" "$OUT/heatmap-cpu.log" 2>/dev/null | tee -a "$SUMMARY"
  tail -15 "$OUT/start-cpu.log" 2>/dev/null | tee -a "$SUMMARY"
}
case_multi_gpu() {
  python3 -c "import dask, distributed, dask_cuda; print('dask', dask.__version__, 'distributed', distributed.__version__, 'dask_cuda', dask_cuda.__version__)" 2>&1 \
    | tail -2 | tee -a "$SUMMARY"
  step multi_gpu.log "${MGPU_S:-420}" python3 benchmarks/multi_gpu.py --out "$OUT" ${MGPU_ARGS:-}
  grep -v "^\s*$" "$OUT/multi_gpu.log" | tail -40 | tee -a "$SUMMARY"
}
case_script() {
  step script.log "${SCRIPT_S:-500}" python3 benchmarks/${SCRIPT:?SCRIPT=path under benchmarks/ and its arguments}
  tail -30 "$OUT/script.log" | tee -a "$SUMMARY"
}
case_serve() {
  step serve.log 200 python3 benchmarks/serve_bench.py --gpu --repeat 5 --out "$OUT/serve-h200.md"
  tail -28 "$OUT/serve.log" | tee -a "$SUMMARY"
}

cases=()
for c in "$@"; do if [ "$c" = all ]; then cases+=(tests sanitize suite); else cases+=("$c"); fi; done
for c in "${cases[@]}"; do
  f=case_${c//-/_}
  if declare -F "$f" > /dev/null; then say "== $c"; "$f"; else say "no case $c"; fi
done
# what comes back: summary.txt, the tables (*.md) and the logs in one archive
tar czf /tmp/device-logs.tgz -C "$OUT" --exclude summary.txt --exclude '*.md' . 2>/dev/null
mv /tmp/device-logs.tgz "$OUT/logs.tgz" \
  && (cd "$OUT" && find . -type f ! -name logs.tgz ! -name summary.txt ! -name '*.md' -delete; find . -type d -empty -delete)
echo "=== summary ($OUT/summary.txt)"; cat "$SUMMARY"
