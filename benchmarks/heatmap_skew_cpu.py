"""Issue #16 / #18, CPU: a heatmap's time as a growing share of the points piles into one cell.

hotbin's promise is that skew costs nothing: count, max and mean of 20M float32 points on
1024 x 1024 (cpu backend, all threads), with 0 to 100 % of the points moved into one cell
(:func:`heatmap_cpu.make_points`, shuffled), against the same call with none there. Answers
are checked cell by cell against NumPy on the first 2M points of each share (the timed
calls take all of them).

    python benchmarks/heatmap_skew_cpu.py [--n 20000000] [--shares 0,0.1,...] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import floor_cpu  # noqa: E402
from heatmap_cpu import SIZE, make_points  # noqa: E402

import hotbin  # noqa: E402

AGGS = ("count", "max", "mean")


def reference(x, y, w, agg):
    """NumPy's answer cell by cell: counts from histogram2d, max and mean by sorting the cells."""
    if agg == "count":
        return np.histogram2d(x, y, SIZE, [[0, 1], [0, 1]])[0]
    ix = np.minimum((x.astype(np.float64) * SIZE).astype(np.int64), SIZE - 1)
    iy = np.minimum((y.astype(np.float64) * SIZE).astype(np.int64), SIZE - 1)
    cell = ix * SIZE + iy
    order = np.argsort(cell, kind="stable")
    cs, ws = cell[order], w[order].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    out = np.full(SIZE * SIZE, np.nan)
    if agg == "max":
        out[cs[starts]] = np.maximum.reduceat(ws, starts)
    else:
        out[cs[starts]] = np.add.reduceat(ws, starts) / np.diff(np.r_[starts, cs.size])
    return out.reshape(SIZE, SIZE)


def call(x, y, w, agg):
    kw = dict(width=SIZE, height=SIZE, x_range=(0, 1), y_range=(0, 1), backend="cpu")
    if agg == "count":
        return hotbin.heatmap(x, y, **kw).counts
    return hotbin.heatmap(x, y, w, agg=agg, **kw).values


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000_000)
    ap.add_argument("--shares", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    w = np.random.default_rng(7).normal(30, 10, args.n).astype(np.float32)
    print(f"{floor_cpu.cpu_model()}, {os.cpu_count()} CPUs; {args.n} float32 points, {SIZE}^2 cells; "
          "ms (median of rounds) and the time over the same call with no point in the hot cell")
    base = {}
    for share in (float(s) for s in args.shares.split(",")):
        x, y = make_points(args.n, share)
        row = []
        for agg in AGGS:
            m = min(args.n, 2_000_000)
            got, want = np.asarray(call(x[:m], y[:m], w[:m], agg), np.float64), reference(x[:m], y[:m], w[:m], agg)
            np.testing.assert_allclose(got, want.T, rtol=1e-9, equal_nan=True, err_msg=agg)  # rows: y
            call(x, y, w, agg)
            ts = []
            for _ in range(args.rounds):
                t = time.perf_counter()
                call(x, y, w, agg)
                ts.append(time.perf_counter() - t)
            ms = 1e3 * statistics.median(ts)
            base.setdefault(agg, ms)
            row.append(f"{agg} {ms:6.1f} ({ms / base[agg]:.2f}x)")
        print(f"{share:5.0%}  " + "  ".join(row), flush=True)


if __name__ == "__main__":
    main()
