#!/usr/bin/env bash
# Issue #18 on the H200 machine's CPU: where the cpu backend's calls spend their time
# (cpu_call_parts.py) with this tree and with the tree in $BEFORE (if given), then cpu_suite.
# Usage on the device machine, from the repository root: BEFORE=before_x bash benchmarks/device_issue18.sh
set -u
OUT=${OUT:-device-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L2|L3|MHz" | tee "$OUT/lscpu.txt"
cd benchmarks
for tree in ../src ${BEFORE:+../$BEFORE/src}; do
  echo "== $tree"; PYTHONPATH=$tree timeout ${PARTS_S:-200} python3 cpu_call_parts.py --rounds 5 ${PARTS_ARGS:-}
done 2>&1 | tee "$OUT/parts.txt"
[ -n "${SUITE-1}" ] && PYTHONPATH=../src timeout ${SUITE_S:-240} python3 cpu_suite.py --out "$OUT/cpu-suite.md" 2>&1 | tail -45
