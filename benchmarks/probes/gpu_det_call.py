"""Where one ``deterministic=True`` weighted histogram call on the GPU spends its time (issue #17).

Run on a CUDA machine from the repository root, with whichever hotbin ``PYTHONPATH`` names::

    PYTHONPATH=src:benchmarks python3 benchmarks/probes/gpu_det_call.py [--n 28]

Data as gpu_suite.py's group W (2^n float32 values over 256 bins of (0, 1), float32 weights in
[-0.25, 1.75), uniform / narrow / constant; every answer checked bitwise against the sums at the
exact scale). For one call from an idle device, CUDA events split its time into: before the sums'
kernel starts (the host's work before the launch: front door, the scale's sample), the sums'
kernel, and after it (finishing the words, the confirmation's read-back); the call's GB/s and the
kernel's (values and weights). Then a cProfile of 20 calls: the host functions that cost most.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics

import cupy as cp
import numpy as np
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from gpu_suite import datasets_f32, gbs, hash_u32

import hotbin
from hotbin.core import fixedpoint, reductions
from hotbin.backend import cuda as cb
from hotbin.backend.cuda import sums as sums_mod
from hotbin.core.binning import histogram_rule


class Marked:
    """sums.launch with CUDA events recorded just before and after each launch (the longest
    is the sums' kernel)."""

    def __init__(self, launch):
        self.launch, self.events = launch, []

    def __call__(self, kern, *args, **kw):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        r = self.launch(kern, *args, **kw)
        b.record()
        self.events.append((a, b))
        return r


def split(call, reps=15):
    """Median ms of (before the kernel, the kernel, after it, the whole call) from an idle device."""
    mark = Marked(sums_mod.launch)
    sums_mod.launch = mark
    rows = []
    try:
        for _ in range(reps + 2):
            cp.cuda.Device().synchronize()
            mark.events.clear()
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            call()
            e.record()
            e.synchronize()
            k0, k1 = max(mark.events, key=lambda ev: cp.cuda.get_elapsed_time(*ev))  # the sums
            rows.append((cp.cuda.get_elapsed_time(s, k0), cp.cuda.get_elapsed_time(k0, k1),
                         cp.cuda.get_elapsed_time(k1, e), cp.cuda.get_elapsed_time(s, e)))
    finally:
        sums_mod.launch = mark.launch
    rows = rows[2:]
    return [statistics.median(r[i] for r in rows) for i in range(4)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=28, help="log2 of the number of values")
    ap.add_argument("--profile", type=int, default=40, help="cProfile lines (0: none)")
    args = ap.parse_args()
    n = 1 << args.n
    w = (hash_u32(n, 11) >> np.uint32(8)).astype(cp.float32)
    w *= np.float32(2.0 ** -23)
    w -= np.float32(0.25)
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, 2^{args.n} float32 values and "
          "float32 weights, 256 bins, deterministic=True; ms, median of 15 calls from an idle device")
    print(f"{'data':10} {'before kernel':>14} {'kernel':>8} {'after':>8} {'call':>8} {'call GB/s':>10} "
          f"{'kernel GB/s':>12}")
    for dist, x in datasets_f32(n):
        rule = histogram_rule(x[:1], 256, (0.0, 1.0))
        scale = fixedpoint.scale_for(cb.max_abs(w), n)
        ref = reductions.fixed(scale).finalize(cb.histogram(x, rule, w, reductions.fixed(scale)))

        def call():
            return hotbin.histogram(x, bins=256, range=(0.0, 1.0), weights=w, deterministic=True)

        got = call()[0]
        assert cp.array_equal(got, cp.asarray(ref)), f"{dist}: deterministic sums differ from the exact scale's"
        before, kern, after, whole = split(call)
        nbytes = x.nbytes + w.nbytes
        print(f"{dist:10} {before:14.3f} {kern:8.3f} {after:8.3f} {whole:8.3f} {gbs(nbytes, whole):10.0f} "
              f"{gbs(nbytes, kern):12.0f}", flush=True)
        if dist == "uniform" and args.profile:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(20):
                call()
                cp.cuda.Device().synchronize()
            pr.disable()
            for key in ("tottime", "cumulative"):
                s = io.StringIO()
                pstats.Stats(pr, stream=s).sort_stats(key).print_stats(args.profile)
                print(f"--- cProfile, 20 calls, by {key}")
                print("\n".join(ln for ln in s.getvalue().splitlines() if ln.strip())[:6000])
        del x


if __name__ == "__main__":
    main()
