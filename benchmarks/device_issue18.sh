#!/usr/bin/env bash
# Issue #18 on the H200 machine's CPU: where the cpu backend's calls spend their time
# (cpu_call_parts.py) with this tree and with the tree in $BEFORE (if given), then cpu_suite.
# Usage on the device machine, from the repository root: BEFORE=before_x bash benchmarks/device_issue18.sh
# WHEELS=dir: wheels carried there (the anchors: datashader, pandas, boost-histogram, ...), installed
# without dependencies into a temporary folder; HEATMAP=1 then also runs heatmap_cpu.py against them.
# PARTS= (empty) skips cpu_call_parts.py, SUITE= (empty) cpu_suite.py. PIN=0,1 runs every benchmark on
# those CPUs alone (taskset; hotbin's threads follow the affinity): a 2-core machine on the Xeon host.
# START=1 also runs start_cpu.py --offline (fresh venvs over this python3's numpy and numba).
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
site=""
if [ -n "${WHEELS:-}" ]; then
  site=$(mktemp -d); python3 -m pip install -q --no-index --no-deps --target "$site" "$WHEELS"/*.whl
fi
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L2|L3|MHz" | tee "$OUT/lscpu.txt"
pin=${PIN:+taskset -c $PIN}
[ -n "${PIN:-}" ] && lscpu -e=CPU,CORE,SOCKET,NODE | awk -v p=",$PIN," 'NR==1 || index(p, ","$1",")' | tee -a "$OUT/lscpu.txt"
cd benchmarks
[ -n "${PARTS-1}" ] && for tree in ../src ${BEFORE:+../$BEFORE/src}; do
  echo "== $tree"; PYTHONPATH=$tree${site:+:$site} timeout ${PARTS_S:-200} $pin python3 cpu_call_parts.py --rounds 5 ${PARTS_ARGS:-}
done 2>&1 | tee "$OUT/parts.txt"
[ -n "${HEATMAP:-}" ] && PYTHONPATH=../src${site:+:$site} timeout ${HEATMAP_S:-300} $pin python3 heatmap_cpu.py \
  --out "$OUT/heatmap-cpu.md" 2>&1 | grep -E "^#|hotbin|datashader|floor"
[ -n "${SUITE-1}" ] && PYTHONPATH=../src${site:+:$site} timeout ${SUITE_S:-240} $pin python3 cpu_suite.py --out "$OUT/cpu-suite.md" 2>&1 | tail -45
[ -n "${START:-}" ] && PYTHONPATH=../src timeout ${START_S:-300} $pin python3 start_cpu.py --offline --out "$OUT/start-cpu.md" 2>&1 | tail -15
