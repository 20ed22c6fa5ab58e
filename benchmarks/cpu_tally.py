"""Issue #18: how the cpu backend's 1-D counts add codes to their counters.

The tuning behind ``hotbin.backend.cpu.count1d.SUBS`` and ``VALUE_BYTES``: ``count1d.part_count1``
(8 points a step, into ``nsub`` interleaved copies of the bins; one copy a point a step; blocks of
VALUE_BYTES of values) against the loop it replaced (a point at a time into 4 copies, blocks of
2048 values, kept here), on one thread, both fed by the same bin codes
(``rule.codes``). 5M float64 / float32 values into 256 bins over (0, 1): uniform, narrow (a
hundredth of the range) and constant; every way in alternation, medians of the rounds, every
answer checked against NumPy. Prints the CPU model and the read time of the values (one thread).

    python benchmarks/cpu_tally.py [--n 5000000] [--rounds 21]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from hotbin._jit import njit
from hotbin.backend.cpu.count1d import part_count1
from hotbin.backend.cpu.rule import codes, rule_args
from hotbin.backend.cpu.scatter import BLOCK
from hotbin.binning import histogram_rule

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
def read(x):
    s = 0.0
    for k in range(0, x.size, 8):
        s += x[k]
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5_000_000)
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args(argv)
    print(f"CPU: {cpu_model()}; one thread; {args.n} values, 256 bins; ms, medians of {args.rounds}")
    rng = np.random.default_rng(0)
    u = rng.random(args.n)
    ways = {"a point a step, 4 copies": (point_at_a_time, 4), "1 copy (a point a step)": (part_count1, 1),
            "8 a step, 4 copies": (part_count1, 4), "8 a step, 8 copies": (part_count1, 8)}
    for dt in (np.float64, np.float32):
        for name, x in {"uniform": u, "narrow": 0.5 + u / 100, "constant": np.full(args.n, 0.37)}.items():
            x = x.astype(dt)
            r = rule_args(histogram_rule(x, 256, (0.0, 1.0)), x.dtype)
            cx = np.empty(BLOCK, np.int32)
            want = np.histogram(x, 256, (0.0, 1.0))[0]
            times = {way: [] for way in ways}
            for i in range(args.rounds + 1):  # the first round compiles and warms up
                for way, (fn, nsub) in ways.items():
                    h = np.zeros(nsub * 257, np.uint32)
                    t = time.perf_counter()
                    fn(x, r, 0, x.size, h, nsub, cx)
                    times[way].append(time.perf_counter() - t)
                    if i == 0:
                        assert np.array_equal(h.reshape(nsub, 257).sum(axis=0)[:256], want), (name, way)
            read(x)
            t = time.perf_counter()
            read(x)
            rt = time.perf_counter() - t
            print(f"{x.dtype.name:7} {name:8} " + "  ".join(
                f"{way} {1e3 * statistics.median(t[1:]):5.2f}" for way, t in times.items())
                + f"  (read {1e3 * rt:4.2f})", flush=True)


if __name__ == "__main__":
    main()
