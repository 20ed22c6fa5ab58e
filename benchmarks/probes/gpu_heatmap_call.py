"""Where one public GPU heatmap call spends its time beyond the counting kernels (issue #17).

Run on a CUDA machine from the repository root::

    PYTHONPATH=src:benchmarks python3 benchmarks/probes/gpu_heatmap_call.py [--n 28]

gpu_spatial.py's data (2^n float32 points in [0, 1)^2, a share in one cell of 1024^2) and its
two calls: ``hotbin.heatmap(x, y, width=1024, height=1024, ranges, backend="cuda")`` ("api") and
the kernels' entry ``spatial.histogram2d(x, y, rx, ry)`` ("primitive"), with the layers between
them timed alike: the registry's ``histogram2d(y, x, ry, rx)`` (staging, the kept count) and the
primitive with the axes as the public call passes them (y first: rows). Milliseconds of one call
from an idle device (CUDA events, median of 15) and the host's microseconds of one call (the
device synchronized after each); every answer checked against the primitive. Then a cProfile of
10 public calls (the device synchronized after each): the host functions that cost most.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

import cupy as cp
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from cuda_timing import timeit
from gpu_spatial import API_KW, points

import hotbin
from hotbin.core import reductions
from hotbin.backend import cuda as cb
from hotbin.backend.cuda import spatial
from hotbin.backend.cuda.tuning import current
from hotbin.core.binning import cell_rule


def host_us(fn, reps=15):
    out = []
    for _ in range(reps):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        out.append((time.perf_counter() - t) * 1e6)
    return statistics.median(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=28)
    ap.add_argument("--shares", default="0,0.5")
    args = ap.parse_args(argv)
    n = 1 << args.n
    rx = cell_rule(1024, 0.0, 1.0, "width")
    ry = cell_rule(1024, 0.0, 1.0, "height")
    tune = current()
    for hot in (float(s) for s in args.shares.split(",")):
        x, y = points(n, hot)
        ref = spatial.histogram2d(x, y, rx, ry, None, reductions.COUNT, tune)[0]
        calls = {
            "api": lambda: hotbin.heatmap(x, y, **API_KW),
            "registry histogram2d(y, x)": lambda: cb.histogram2d(y, x, ry, rx),
            "primitive (y, x)": lambda: spatial.histogram2d(y, x, ry, rx, None, reductions.COUNT, tune),
            "primitive (x, y)": lambda: spatial.histogram2d(x, y, rx, ry, None, reductions.COUNT, tune),
        }
        assert bool(cp.all(calls["api"]().counts == ref.T)), "api"
        assert bool(cp.all(calls["registry histogram2d(y, x)"]()[0] == ref.T)), "registry"
        for name, fn in calls.items():
            ms = timeit(fn, reps=15)
            print(f"hot {hot:4.0%}  {name:28s} {ms:.3f} ms  {n / ms / 1e6:6.1f} G points/s  "
                  f"host {host_us(fn):7.1f} us", flush=True)
        prof = cProfile.Profile()
        for _ in range(10):
            cp.cuda.Device().synchronize()
            prof.enable()
            calls["api"]()
            cp.cuda.Device().synchronize()
            prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(14)
        print(s.getvalue(), flush=True)
        del x, y


if __name__ == "__main__":
    main()
