"""Issue #18: a heatmap over longitude / latitude ranges (not a power-of-2 scale: the cells'
edges are a float64 linspace, float32 points), against datashader in the same process.

20M float32 points around a city centre (normal, 0.03 degrees), 1024^2 cells over
(-74.05, -73.75) x (40.60, 40.90); the counts checked against numpy.histogram2d over the same
edges (no point lies on the open top edges). Medians of the rounds, the CPU model and threads.

    python benchmarks/heatmap_lonlat_cpu.py [--n 20000000] [--rounds 7]
"""
from __future__ import annotations

import argparse

import numpy as np

import hotbin
from hotbin.backend.cpu import parallel

from cpu_suite import timeit
from floor_cpu import cpu_model, read_time

X_RANGE, Y_RANGE, SIZE = (-74.05, -73.75), (40.60, 40.90), 1024


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(3)
    x = (-73.98 + rng.normal(0, 0.03, args.n)).astype(np.float32)
    y = (40.75 + rng.normal(0, 0.03, args.n)).astype(np.float32)
    ours = lambda: hotbin.heatmap(x, y, width=SIZE, height=SIZE, x_range=X_RANGE, y_range=Y_RANGE)  # noqa: E731
    hm = ours()
    want = np.histogram2d(y, x, bins=[hm.y_edges, hm.x_edges])[0]
    assert np.array_equal(np.asarray(hm.counts), want)
    print(f"CPU: {cpu_model()}; {parallel.threads()} threads; {args.n} float32 points, {SIZE}^2 cells; "
          f"ms, medians of {args.rounds}")
    t = timeit(ours, args.rounds)
    print(f"hotbin {1e3 * t:.1f}  floor (x, y read once) {1e3 * read_time([x, y]):.1f}")
    try:
        import datashader as ds
        import pandas as pd
    except ImportError:
        print("datashader: not installed")
        return
    df = pd.DataFrame({"x": x, "y": y})
    cv = ds.Canvas(plot_width=SIZE, plot_height=SIZE, x_range=X_RANGE, y_range=Y_RANGE)
    td = timeit(lambda: cv.points(df, "x", "y", agg=ds.count()), args.rounds)
    print(f"datashader {1e3 * td:.1f}  ({td / t:.2f}x hotbin's time)")


if __name__ == "__main__":
    main()
