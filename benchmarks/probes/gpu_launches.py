"""One launch of each kernel of a group, after a warm-up: what Nsight Compute profiles on the GPU machine.

    ncu --clock-control none ... python3 benchmarks/probes/gpu_launches.py --case hist1d|weighted|spatial

(``bash benchmarks/device.sh ncu`` runs it with the kernel filter and sections of each case.)

hist1d: float32 2^28 uniform over 256 bins and uint8 2^29, twice each (ncu skips the first two
launches). weighted: uint16 2^28 into 4096 and 65536 bins, weighted float32 2^28 with float64 and
``deterministic=True`` sums, the launches between ``cudaProfilerStart`` and ``Stop`` (ncu's
``--profile-from-start off``). spatial: the heatmap primitive on 2^28 points into 1024^2 at 0 %
and 100 % in one cell (warp scatter), and the block scatter at 0 % (``NCU_BLOCK=0``: not).
"""
from __future__ import annotations

import argparse
import os
import sys

import cupy as cp
import numpy as np

import hotbin

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from gpu_suite import hash_u32  # noqa: E402


def hist1d():
    f = (hash_u32(1 << 28, 3) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -24)
    u = hash_u32(1 << 29, 1).view(cp.uint8)
    for _ in range(2):
        hotbin.histogram(f, 256, (0.0, 1.0))
        hotbin.histogram(u, 256, (0, 256))
    cp.cuda.Device().synchronize()


def weighted():
    u = hash_u32(1 << 27, 2).view(cp.uint16)
    f = (hash_u32(1 << 28, 3) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -24)
    w = (hash_u32(1 << 28, 11) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -23) - np.float32(0.25)
    calls = [lambda: hotbin.histogram(u, 4096, (0, 65536)), lambda: hotbin.histogram(u, 65536, (0, 65536)),
             lambda: hotbin.histogram(f, 256, (0.0, 1.0), weights=w),
             lambda: hotbin.histogram(f, 256, (0.0, 1.0), weights=w, deterministic=True)]
    for c in calls:  # warm-up: compiled and planned
        c()
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.start()
    for c in calls:
        c()
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.stop()


def spatial():
    from hotbin.core import binning
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


CASES = {"hist1d": hist1d, "weighted": weighted, "spatial": spatial}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), required=True)
    CASES[ap.parse_args().case]()
