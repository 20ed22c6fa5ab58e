"""Compile the cpu kernels of the common first calls ahead of time.

numba keeps a kernel's machine code beside its module (``__pycache__/*.nbi, *.nbc``), keyed
by the source file's content hash, the signature, the Python and numba versions and this
machine's CPU. Building the wheel (``setup.py``) runs this module over the built package, so
the wheel carries the machine code of the calls in :func:`work`, and on the machine that
built it (``pip install .``) a first call loads its kernels instead of compiling them
(seconds each: benchmarks/start_cpu.py). Anywhere else — another CPU, another numba, a read-only
install, ``NUMBA_CACHE_DIR`` set — the entries do not match or are not looked at, and the
kernels compile on first use as they would without them: never a wrong kernel, at worst
the old wait.

    python -m hotbin.precompile           # the same for an installed package (a wheel from elsewhere)

Calls run on one thread (the kernels do not depend on the thread count) on data just large
enough to take the kernels' paths, not NumPy's small-input one: the banded scatter needs a
1024^2 grid and BAND_MIN_POINTS points a thread. The two families of calls compile nearly
disjoint sets of cached kernels (both reach the 1-D rule's ``codes``), so they run in two
processes at once; numba rewrites a kernel's index whole, so an entry that both add at once
can be lost, and a last pass over every call in this process loads them all and compiles
whatever is still missing (0 kernels in the runs so far).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

__all__ = ["FAMILIES", "work", "main"]

#: families of calls that share (nearly) no cached kernel: values heatmaps (part_values, part_banded,
#: merge_values) and the rest
FAMILIES = ("values", "other")


def work(family=None):
    """``(family, name, call)``: the first calls a user makes, in the dtypes they make them in."""
    import numpy as np

    import hotbin
    from hotbin.backend.cpu.banded import BAND_MIN_POINTS
    from hotbin.backend.cpu.reduce import KERNEL_FROM
    from hotbin.backend.cpu.scan import SCAN_MIN_PER_THREAD

    rng = np.random.default_rng(0)
    n = 1 << 15
    f64 = rng.normal(size=n)
    f32 = f64.astype(np.float32)
    i64 = rng.integers(0, 1000, n)
    big = rng.normal(size=BAND_MIN_POINTS + 1)
    wide = rng.normal(size=KERNEL_FROM)  # the ranges of this many values are found by a kernel
    rgb = rng.integers(0, 256, (128, 256, 3), dtype=np.uint8)
    # a range from the data gives float64 edges (numpy.histogram2d's); a given range, edges in
    # the points' dtype: two rule types per dtype
    ranges = {"range from the data": {}, "a given range": {"x_range": (-4, 4), "y_range": (-4, 4)}}

    def values(x, size, kw):  # one values kernel each: sum / min-max / two-pass
        return [hotbin.heatmap(x, x[::-1], x, agg=agg, width=size, height=size, **kw)
                for agg in ("sum", "mean", "max", "var")]

    calls = [
        ("other", "histogram float64 / float32, range from the data (reduce.KERNEL_FROM values)", lambda: [
            hotbin.histogram(a, 256) for a in (wide, wide.astype(np.float32))]),
        ("other", "histogram float64 / float32 / int64 / int32, a range", lambda: [
            hotbin.histogram(a, 100, (-4, 4)) for a in (f64, f32, i64, i64.astype(np.int32))]),
        ("other", "histogram uint8 / uint16 / int16", lambda: [
            hotbin.histogram(i64.astype(t), 256, (0, 1000)) for t in (np.uint8, np.uint16, np.int16)]),
        ("other", "histogram weighted float64 / float32 / deterministic", lambda: [
            hotbin.histogram(f64, 100, (-4, 4), weights=f64),
            hotbin.histogram(f32, 100, (-4, 4), weights=f32),
            hotbin.histogram(f64, 100, (-4, 4), weights=f64, deterministic=True)]),
        ("other", "histogram2d / histogramdd float64", lambda: [
            hotbin.histogram2d(f64, f64[::-1], bins=100), hotbin.histogramdd(np.c_[f64, f64, f64], bins=8)]),
        ("other", "bincount", lambda: [hotbin.bincount(i64), hotbin.bincount(i64, weights=f64)]),
        ("other", "cumsum float64 / float32 / int64 / int32", lambda: [
            hotbin.cumsum(a) for a in (f64, f32, i64, i64.astype(np.int32))]),
        ("other", "cumsum float64 / float32 / int64 / int32 on two threads (scan.SCAN_MIN_PER_THREAD)",
         lambda: _two_threads(lambda: [hotbin.cumsum(np.resize(a, 2 * SCAN_MIN_PER_THREAD))
                                       for a in (f64, f32, i64, i64.astype(np.int32))])),
        ("other", "heatmaps by category: int8 (pandas) codes, float64 / float32; int64 codes", lambda: [
            hotbin.heatmap(f64, f64[::-1], by=i64.astype(np.int8) % 8, width=512, height=512),
            hotbin.heatmap(f32, f32[::-1], by=i64.astype(np.int8) % 8, width=512, height=512),
            hotbin.heatmap(f64, f64[::-1], by=i64 % 8, width=512, height=512)]),
        ("other", "luminance histogram, equalize, PNG", lambda: [
            hotbin.luminance_histogram(rgb), hotbin.equalize(rgb),
            hotbin.heatmap(f64, f64[::-1]).to_png(os.devnull)]),
    ]
    for dt in (np.float64, np.float32):
        x, xb = f64.astype(dt), big.astype(dt)
        for what, kw in ranges.items():
            calls += [
                ("other", f"heatmap counts {np.dtype(dt)}, {what}",
                 lambda x=x, kw=kw: hotbin.heatmap(x, x[::-1], width=512, height=512, **kw)),
                ("values", f"heatmap values {np.dtype(dt)}, {what}", lambda x=x, kw=kw: values(x, 512, kw)),
                ("values", f"heatmap values {np.dtype(dt)}, {what}, 1024^2 banded",
                 lambda x=xb, kw=kw: values(x, 1024, kw)),
            ]
    return [c for c in calls if family in (None, c[0])]


def _two_threads(call):
    """call() with the cpu kernels on two threads (the calls here run on one: a scan's
    threaded passes are kernels of their own)."""
    from hotbin.backend.cpu import parallel

    old = parallel.set_threads(2)
    try:
        return call()
    finally:
        parallel.set_threads(old)


def _run(calls):
    from numba.core import event

    compiled = event.RecordingListener()
    event.register("numba:compile", compiled)
    t0 = time.perf_counter()
    for _, name, call in calls:
        t = time.perf_counter()
        call()
        print(f"{time.perf_counter() - t:6.2f} s  {name}", flush=True)
    kernels = len(compiled.buffer) // 2  # a start and an end event per compile
    print(f"{time.perf_counter() - t0:6.2f} s  {kernels} kernels compiled", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m hotbin.precompile", description=__doc__.splitlines()[0])
    p.add_argument("--family", choices=FAMILIES, help="only this family of calls, in this process")
    p.add_argument("--serial", action="store_true", help="no processes: every call here, in turn")
    args = p.parse_args(argv)
    os.environ.setdefault("HOTBIN_NUM_THREADS", "1")
    if args.family is None and not args.serial and (os.cpu_count() or 1) > 1:
        procs = [subprocess.Popen([sys.executable, "-m", "hotbin.precompile", "--family", f])
                 for f in FAMILIES]
        if any(proc.wait() for proc in procs):
            print("a family failed; the last pass compiles what it left", flush=True)
        print("last pass, every call:", flush=True)
    _run(work(args.family))
    return 0


if __name__ == "__main__":
    sys.exit(main())
