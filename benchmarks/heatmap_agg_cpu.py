"""Issue #16, CPU: heatmap aggregations of 20M float32 points on 1024 x 1024, against datashader.

Contenders, in one process on the same arrays: ``hotbin.heatmap(x, y, w, agg="mean")``,
``agg="max"`` and ``by=`` 8 categories (cpu backend, all numba threads) against
datashader's ``Canvas.points`` with ``ds.mean("w")``, ``ds.max("w")`` and
``ds.by("c", ds.count())`` (its count_cat). The data: uniform points with a share (0, 90, 100 %)
moved into the middle of one hot cell (:func:`heatmap_cpu.make_points`), float32
weights, 8 categories. Every answer is checked against datashader's (the points
sit off the cell boundaries, so both bin them alike). Interleaved rounds, medians;
the floor is the input bytes (x, y and the weights or codes) over the parallel
read bandwidth measured here.

Usage::

    python benchmarks/heatmap_agg_cpu.py [--n 20000000] [--rounds 5] [--quick] [--out PATH]
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import floor_cpu  # noqa: E402
from heatmap_cpu import SIZE, _timed, machine, make_points  # noqa: E402

import hotbin  # noqa: E402

SHARES = (0.0, 0.9, 1.0)
NCAT = 8


def run_share(n, hot, rounds):
    import datashader as ds
    import pandas as pd

    x, y = make_points(n, hot)
    rng = np.random.default_rng(7)
    w = rng.normal(30, 10, n).astype(np.float32)
    codes = rng.integers(0, NCAT, n).astype(np.int8)
    cat = pd.Categorical.from_codes(codes, [f"c{i}" for i in range(NCAT)])
    df = pd.DataFrame({"x": x, "y": y, "w": w, "c": cat})
    cv = ds.Canvas(plot_width=SIZE, plot_height=SIZE, x_range=(0, 1), y_range=(0, 1))
    kw = dict(width=SIZE, height=SIZE, x_range=(0, 1), y_range=(0, 1), backend="cpu")
    pairs = {
        "mean": (lambda: hotbin.heatmap(x, y, w, agg="mean", **kw).values,
                 lambda: cv.points(df, "x", "y", agg=ds.mean("w")).values, (x, y, w)),
        "max": (lambda: hotbin.heatmap(x, y, w, agg="max", **kw).values,
                lambda: cv.points(df, "x", "y", agg=ds.max("w")).values, (x, y, w)),
        f"count by {NCAT} categories": (
            lambda: hotbin.heatmap(x, y, by=codes, **kw).values,
            lambda: np.moveaxis(cv.points(df, "x", "y", agg=ds.by("c", ds.count())).values, -1, 0),
            (x, y, codes)),
    }
    out = {}
    for name, (ours, theirs, arrays) in pairs.items():
        a, b = np.asarray(ours(), np.float64), np.asarray(theirs(), np.float64)  # warm-up, answers
        np.testing.assert_allclose(a, b, rtol=1e-6, equal_nan=True, err_msg=name)
        t_ours, t_theirs = [], []
        for _ in range(rounds):
            t_ours.append(_timed(ours))
            t_theirs.append(_timed(theirs))
        out[name] = (statistics.median(t_ours), statistics.median(t_theirs),
                     floor_cpu.read_time(arrays, rounds), sum(v.nbytes for v in arrays))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2M points, 3 rounds (a minute or less)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.rounds = 2_000_000, 3
    lines = [f"# CPU heatmap aggregations (issue #16): {args.n / 1e6:g}M float32 points, {SIZE}x{SIZE}",
             "", f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. "
             f"Machine: {machine()}.", "",
             "Medians of interleaved rounds, ms; `ratio` = datashader's time over hotbin's (target >= 3x); "
             "floor = input bytes over the parallel read bandwidth measured here.", "",
             "| hot share | aggregation | hotbin ms | datashader ms | ratio | floor ms | hotbin / floor |",
             "|---|---|---|---|---|---|---|"]
    for hot in SHARES:
        for name, (ours, theirs, floor, nbytes) in run_share(args.n, hot, args.rounds).items():
            lines.append(f"| {hot:.0%} | {name} | {ours * 1e3:.1f} | {theirs * 1e3:.1f} | "
                         f"{theirs / ours:.2f}x | {floor * 1e3:.1f} | {ours / floor:.2f} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
