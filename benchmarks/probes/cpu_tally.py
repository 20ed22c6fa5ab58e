"""Issue #18: how the cpu backend's 1-D counts and weighted sums add to their counters.

The tuning behind ``hotbin.backend.cpu.copies.SUBS`` and ``SUM_SUBS``, ``count1d.VALUE_BYTES`` and
``prefetch.PREFETCH_BYTES`` (against the same loop without the prefetch).
Counts: ``count1d.part_count1`` (8 points a step into ``nsub`` interleaved copies of the bins;
one copy a point a step; blocks of VALUE_BYTES of values) against the loop it replaced (a point
at a time into 4 copies, blocks of 2048 values, kept here). ``--sums``: float64 weights summed by
``count1d.part_sum1`` (SUM_SUBS points a step into ``nsub`` copies) against one copy a point a
step (the loop before, kept here) and 8 copies 8 a step. One thread, all fed by the same bin codes
(``rule.codes``); float64 / float32 values (sums: float64) into 256 bins over (0, 1): uniform,
narrow (a hundredth of the range) and constant; every way in alternation, medians of the rounds,
every answer checked against NumPy. Prints the CPU model and the read time of the values (one
thread). 5M values stay in the last-level cache; 50M come from memory.

    python benchmarks/probes/cpu_tally.py [--sums] [--n 5000000] [--rounds 21]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from hotbin.core._jit import njit
from hotbin.backend.cpu.count1d import VALUE_BYTES, part_count1, part_sum1
from hotbin.backend.cpu.rule import codes, rule_args
from hotbin.backend.cpu.scatter import BLOCK
from hotbin.core.binning import histogram_rule

import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from floor_cpu import cpu_model


@njit(nogil=True)
def point_at_a_time(x, r, start, stop, h, nsub, cx):
    """The loop before: point k adds to copy k % nsub, one point a step."""
    width = r[0].size
    mask = nsub - 1
    for b in range(start, stop, BLOCK):
        m = min(stop, b + BLOCK) - b
        codes(x[b:b + m], r, cx)
        for k in range(m):
            h[np.uint64((k & mask) * width + cx[k])] += 1


@njit(nogil=True)
def no_prefetch(x, r, start, stop, h, nsub, cx):
    """part_count1 before its prefetch (prefetch.PREFETCH_BYTES): 8 copies, 8 points a step."""
    width = r[0].size
    block = min(BLOCK, VALUE_BYTES // x.itemsize)
    for b in range(start, stop, block):
        m = min(stop, b + block) - b
        codes(x[b:b + m], r, cx)
        whole = m - m % 8
        for k in range(0, whole, 8):
            for j in range(8):
                h[np.uint64(cx[k + j]) + np.uint64(j * width)] += 1
        for k in range(whole, m):
            h[np.uint64(cx[k]) + np.uint64((k & 7) * width)] += 1


@njit(nogil=True)
def sum_point_at_a_time(x, w, r, start, stop, h, nsub, cx):
    """The sums before: one copy, a point a step."""
    for b in range(start, stop, BLOCK):
        m = min(stop, b + BLOCK) - b
        codes(x[b:b + m], r, cx)
        for k in range(m):
            h[np.uint64(cx[k])] += w[b + k]


@njit(nogil=True)
def sum_8_copies(x, w, r, start, stop, h, nsub, cx):
    """8 copies, 8 points a step, blocks of 1024."""
    width = r[0].size
    for b in range(start, stop, 1024):
        m = min(stop, b + 1024) - b
        codes(x[b:b + m], r, cx)
        whole = m - m % 8
        for k in range(0, whole, 8):
            for j in range(8):
                h[np.uint64(cx[k + j]) + np.uint64(j * width)] += w[b + k + j]
        for k in range(whole, m):
            h[np.uint64(cx[k])] += w[b + k]


@njit(nogil=True)
def read(x):
    s = 0.0
    for k in range(0, x.size, 8):
        s += x[k]
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5_000_000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--sums", action="store_true", help="float64 weighted sums instead of counts")
    args = ap.parse_args(argv)
    print(f"CPU: {cpu_model()}; one thread; {args.n} values, 256 bins, "
          f"{'float64 sums' if args.sums else 'counts'}; ms, medians of {args.rounds}")
    rng = np.random.default_rng(0)
    u = rng.random(args.n)
    w = rng.random(args.n)
    if args.sums:
        ways = {"one copy, a point a step": (sum_point_at_a_time, 1), "2 copies": (part_sum1, 2),
                "4 copies": (part_sum1, 4), "8 copies": (sum_8_copies, 8)}
    else:
        ways = {"a point a step, 4 copies": (point_at_a_time, 4), "1 copy (a point a step)": (part_count1, 1),
                "8 a step, 4 copies": (part_count1, 4), "8 a step, 8 copies": (part_count1, 8),
                "8 copies, no prefetch": (no_prefetch, 8)}
    for dt in ((np.float64,) if args.sums else (np.float64, np.float32)):
        for name, x in {"uniform": u, "narrow": 0.5 + u / 100, "constant": np.full(args.n, 0.37)}.items():
            x = x.astype(dt)
            r = rule_args(histogram_rule(x, 256, (0.0, 1.0)), x.dtype)
            cx = np.empty(BLOCK, np.int32)
            want = np.histogram(x, 256, (0.0, 1.0), weights=w if args.sums else None)[0]
            times = {way: [] for way in ways}
            for i in range(args.rounds + 1):  # the first round compiles and warms up
                for way, (fn, nsub) in ways.items():
                    h = np.zeros(nsub * 257, np.float64 if args.sums else np.uint32)
                    t = time.perf_counter()
                    if args.sums:
                        fn(x, w, r, 0, x.size, h, nsub, cx)
                    else:
                        fn(x, r, 0, x.size, h, nsub, cx)
                    times[way].append(time.perf_counter() - t)
                    if i == 0:
                        got = h.reshape(nsub, 257).sum(axis=0)[:256]
                        assert np.allclose(got, want, rtol=1e-12) if args.sums else np.array_equal(got, want), \
                            (name, way)
            read(x)
            t = time.perf_counter()
            read(x)
            rt = time.perf_counter() - t
            print(f"{x.dtype.name:7} {name:8} " + "  ".join(
                f"{way} {1e3 * statistics.median(t[1:]):5.2f}" for way, t in times.items())
                + f"  (read {1e3 * rt:4.2f})", flush=True)


if __name__ == "__main__":
    main()
