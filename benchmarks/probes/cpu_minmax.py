"""Issue #18: the cpu range of the data (``hotbin.backend.cpu.reduce.minmax``, what a histogram
without a range spends before it bins), against what it replaced: NumPy's min and max a piece
at a time on every thread (``reduce._pieces``, which still answers other dtypes, int16 here).
Checks both against NumPy; prints the CPU model, the thread count and the read floor (the
array read once on all threads).

    python benchmarks/probes/cpu_minmax.py [--n 50000000]
"""
from __future__ import annotations

import argparse

import numpy as np

from hotbin.backend.cpu import parallel, reduce

import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from cpu_suite import timeit
from floor_cpu import cpu_model, read_time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000_000)
    args = ap.parse_args(argv)
    print(f"CPU: {cpu_model()}; {parallel.threads()} threads; {args.n} values; ms, medians of 9")
    before = lambda a: reduce._pieces(a.reshape(-1))  # noqa: E731
    rng = np.random.default_rng(1)
    for dt in (np.float64, np.float32, np.int64, np.int32, np.int16):
        a = (rng.normal(size=args.n) * 1000).astype(dt)
        want = (a.min(), a.max())
        assert before(a) == want and reduce.minmax(a) == want, dt
        t0, t1 = timeit(lambda: before(a), 9), timeit(lambda: reduce.minmax(a), 9)
        print(f"{np.dtype(dt).name:8} before {1e3 * t0:6.1f}  now {1e3 * t1:6.1f}  floor {1e3 * read_time([a]):6.1f}",
              flush=True)


if __name__ == "__main__":
    main()
