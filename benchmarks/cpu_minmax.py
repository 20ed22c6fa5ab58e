"""Issue #18: the cpu range of the data (``hotbin.backend.cpu.reduce.minmax``, what a histogram
without a range spends before it bins), against what it replaced (kept here): NumPy's min and
max a piece at a time on every thread. Checks both against NumPy; prints the CPU model, the
thread count and the read floor (the array read once on all threads).

    python benchmarks/cpu_minmax.py [--n 50000000]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from hotbin.backend.cpu import parallel, reduce
from hotbin.backend.cpu.parallel import each

from floor_cpu import cpu_model, read_time


def numpy_pieces(a, piece_size=1 << 18):
    """reduce.minmax before: NumPy's min and max of each piece, the pieces spread over the threads."""
    flat = a.reshape(-1)
    pieces = -(-flat.size // piece_size)
    los, his = [None] * pieces, [None] * pieces

    def piece(u):
        c = flat[u * piece_size:(u + 1) * piece_size]
        los[u], his[u] = c.min(), c.max()

    each(flat.size, pieces, piece)
    return a.dtype.type(min(los)), a.dtype.type(max(his))


def median_ms(fn, rounds=9):
    fn()
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return 1e3 * statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000_000)
    args = ap.parse_args(argv)
    print(f"CPU: {cpu_model()}; {parallel.threads()} threads; {args.n} values; ms, medians of 9")
    rng = np.random.default_rng(1)
    for dt in (np.float64, np.float32, np.int64, np.int32, np.int16):
        a = (rng.normal(size=args.n) * 1000).astype(dt)
        want = (a.min(), a.max())
        assert numpy_pieces(a) == want and reduce.minmax(a) == want, dt
        before, now = median_ms(lambda: numpy_pieces(a)), median_ms(lambda: reduce.minmax(a))
        print(f"{np.dtype(dt).name:8} before {before:6.1f}  now {now:6.1f}  floor {1e3 * read_time([a]):6.1f}",
              flush=True)


if __name__ == "__main__":
    main()
