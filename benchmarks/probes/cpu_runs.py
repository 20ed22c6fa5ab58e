"""Issue #18: counting into one copy of counters in runs (count1d._tally) against the plain loop.

The tuning behind ``hotbin.backend.cpu.count1d.RUN``: 100M uint16 words (the pairs of bytes of
200M uint8) into 65536 uint32 counters, one thread, uniform / narrow (8 byte values: 64 words)
/ constant; each way in alternation, medians of the rounds, every answer checked against
NumPy's bincount.

* plain: a point at a time (the loop before runs; a run of one value is a chain of adds to
  one counter);
* runs RUN: count1d._tally with one copy, in runs of RUN.

    python benchmarks/probes/cpu_runs.py [--quick] [--rounds 7]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from hotbin.core._jit import njit
from hotbin.backend.cpu import count1d

import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from floor_cpu import cpu_model


@njit(nogil=True)
def plain(h, c):
    for k in range(c.size):
        h[np.uint64(c[k])] += 1


def runs_of(run):
    """count1d._tally with one copy, in runs of ``run``."""
    @njit(nogil=True)
    def runs(h, c):
        n = c.size
        for b in range(0, n, run):
            d = c[b:min(n, b + run)]
            v = count1d._one_bin(d, d.size)
            if v >= 0:
                h[np.uint64(v)] += d.size
                continue
            for k in range(d.size):
                h[np.uint64(d[k])] += 1
    return runs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="10M words, 3 rounds (under a minute)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds = 3
    print(cpu_model())
    rng = np.random.default_rng(0)
    n = 10_000_000 if args.quick else 100_000_000
    data = {"uniform": rng.integers(0, 65536, n).astype(np.uint16),
            "narrow": (rng.integers(100, 108, n) * 257).astype(np.uint16),
            "constant": np.full(n, 4321, np.uint16)}
    ways = {"plain": plain, "runs 512": runs_of(512), "runs 4096": runs_of(4096)}
    h = np.zeros(65536, np.uint32)
    for name, c in data.items():
        want = np.bincount(c, minlength=65536)
        times = {w: [] for w in ways}
        for r in range(args.rounds + 1):
            for w, f in ways.items():
                h[:] = 0
                t = time.perf_counter()
                f(h, c)
                times[w].append(time.perf_counter() - t)
                assert np.array_equal(h, want), (name, w)
        print(f"{name:9}" + "".join(f"  {w} {1e3 * statistics.median(t[1:]):6.1f}" for w, t in times.items()),
              flush=True)


if __name__ == "__main__":
    main()
