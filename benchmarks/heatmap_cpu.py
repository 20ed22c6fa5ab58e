"""CPU heatmaps of 20M float32 points, against the anchors, one case a run (``--case``).

count (the default, C2): ``hotbin.heatmap`` (cpu backend, all numba threads and one thread),
datashader ``Canvas.points`` with ``count()``, ``numpy.histogram2d`` and
``fast_histogram.histogram2d`` on a 1024 x 1024 grid. The data: uniform points in ``[0, 1)^2``
with a share (0, 50 %, 90 %, 100 %) moved into one hot cell, shuffled.

agg: ``hotbin.heatmap(x, y, w, agg="mean")``, ``agg="max"`` and ``by=`` 8 categories against
datashader's ``ds.mean("w")``, ``ds.max("w")`` and ``ds.by("c", ds.count())``, with 0 / 90 / 100 %
in one cell; every answer checked against datashader's (the points sit off the cell boundaries).

skew: count, max and mean as a growing share of the points piles into one cell, each against
the same call with none there (skew should cost nothing); answers checked cell by cell against
NumPy on the first 2M points of each share.

lonlat: 20M float32 points around a city centre on 1024^2 cells over longitude / latitude ranges
(the edges a float64 linspace, not a power-of-2 scale), against datashader; counts checked
against ``numpy.histogram2d`` over the same edges.

Every contender is warmed up, then the contenders run in interleaved rounds
(so machine noise hits them alike; numpy.histogram2d after them: see SLOW) and
medians are reported. Answers are
checked against NumPy on the same cells: hotbin must match exactly; the anchors'
differing cells are reported. The floor is the input bytes over the read
bandwidth measured here on the same arrays (benchmarks/floor_cpu.py).

Usage::

    python benchmarks/heatmap_cpu.py [--case count|agg|skew|lonlat] [--quick] [--n 20000000]
        [--rounds 5] [--shares 0,0.1,...,1 (skew)] [--out benchmarks/results/heatmap-cpu-<machine>.md]

(agg: ``--out benchmarks/results/heatmap-agg-cpu-<machine>.md``). Needs datashader, pandas and
fast-histogram (skipped with a note when missing; agg needs datashader and pandas).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time

import numba
import numpy as np

import floor_cpu
import hotbin
from hotbin.backend.cpu import parallel

SIZE = 1024
HOT_SHARES = (0.0, 0.5, 0.9, 1.0)
#: timed three times after the interleaved rounds, not in them: a call takes ~3 s, and on the
#: 2-vCPU VM the next few calls after it ran 1.5-2.5x slower for ~0.15 s (hotbin's 2-thread
#: heatmap 21-22 ms alone, 33-53 ms just after it), which fell on whichever contender came next
SLOW = "numpy.histogram2d"


def make_points(n, hot, seed=20261130):
    rng = np.random.default_rng(seed)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    k = int(n * hot)
    cell = 1.0 / SIZE  # the hot points fill the middle of one cell
    x[:k] = np.float32(0.3 + cell * (0.25 + 0.5 * rng.random(k, dtype=np.float32)))
    y[:k] = np.float32(0.7 + cell * (0.25 + 0.5 * rng.random(k, dtype=np.float32)))
    order = rng.permutation(n)
    return x[order], y[order]


# --- the floor ---------------------------------------------------------------------

def read_time(x, y, rounds):
    """Median seconds to read x and y once on every thread (:mod:`floor_cpu`)."""
    return floor_cpu.read_time([x, y], rounds)


def _timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def timeit(fn, rounds):
    """Median seconds of ``rounds`` calls after one warm-up call (the JIT, page faults)."""
    fn()
    return statistics.median([_timed(fn) for _ in range(rounds)])


# --- contenders --------------------------------------------------------------------

def contenders(x, y):
    out = {}

    def hb():
        return hotbin.heatmap(x, y, width=SIZE, height=SIZE, x_range=(0, 1), y_range=(0, 1),
                              backend="cpu").counts

    def hb1():
        t = parallel.set_threads(1)
        try:
            return hb()
        finally:
            parallel.set_threads(t)

    out[f"hotbin cpu ({parallel.threads()} threads)"] = hb
    out["hotbin cpu (1 thread)"] = hb1
    try:
        import datashader as ds
        import pandas as pd

        df = pd.DataFrame({"x": x, "y": y})
        cv = ds.Canvas(plot_width=SIZE, plot_height=SIZE, x_range=(0, 1), y_range=(0, 1))
        out["datashader Canvas.points count"] = lambda: cv.points(df, "x", "y", agg=ds.count()).values
    except ModuleNotFoundError as exc:
        print(f"skipping datashader: {exc}")
    out["numpy.histogram2d"] = lambda: np.histogram2d(y, x, bins=SIZE, range=((0, 1), (0, 1)))[0]
    try:
        import fast_histogram as fh

        out["fast-histogram histogram2d"] = lambda: fh.histogram2d(y, x, bins=SIZE, range=((0, 1), (0, 1)))
    except ModuleNotFoundError as exc:
        print(f"skipping fast-histogram: {exc}")
    return out


def run_share(n, hot, rounds):
    x, y = make_points(n, hot)
    funcs = contenders(x, y)
    answers = {name: np.asarray(f()) for name, f in funcs.items()}  # warm-up (JIT) and answers
    ref = answers["numpy.histogram2d"].astype(np.int64)
    diff = {}
    for name, a in answers.items():
        bad = int(np.count_nonzero(a.astype(np.int64) != ref))
        diff[name] = bad
        if (name.startswith("hotbin") or name.startswith("proposed")) and bad:
            raise AssertionError(f"{name}: {bad} cells differ from numpy.histogram2d")
    times = {name: [] for name in funcs}
    for r in range(rounds):
        for name, f in funcs.items():
            if name != SLOW:
                times[name].append(_timed(f))
    for r in range(3):  # after the rounds: see SLOW
        times[SLOW].append(_timed(funcs[SLOW]))
    floor = read_time(x, y, rounds)
    return {name: statistics.median(t) for name, t in times.items()}, diff, floor, x.nbytes + y.nbytes


def machine():
    cpu = floor_cpu.cpu_model()
    versions = [f"numpy {np.__version__}", f"numba {numba.__version__}", f"hotbin {hotbin.__version__}"]
    for mod in ("datashader", "pandas", "fast_histogram"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except ModuleNotFoundError:
            pass
    return (f"{floor_cpu.cpus()} ({cpu}), hotbin threads {parallel.threads()}, "
            f"Python {platform.python_version()}; " + ", ".join(versions))


# --- agg: aggregations against datashader -------------------------------------------

AGG_SHARES = (0.0, 0.9, 1.0)
NCAT = 8


def agg_share(n, hot, rounds):
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


def case_agg(args):
    """Mean, max and count by categories against datashader, a row per share and aggregation."""
    lines = [f"# CPU heatmap aggregations: {args.n / 1e6:g}M float32 points, {SIZE}x{SIZE}",
             "", f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. "
             f"Machine: {machine()}.", "",
             "Medians of interleaved rounds, ms; `ratio` = datashader's time over hotbin's (target >= 3x); "
             "floor = input bytes over the parallel read bandwidth measured here.", "",
             "| hot share | aggregation | hotbin ms | datashader ms | ratio | floor ms | hotbin / floor |",
             "|---|---|---|---|---|---|---|"]
    for hot in AGG_SHARES:
        for name, (ours, theirs, floor, nbytes) in agg_share(args.n, hot, args.rounds).items():
            lines.append(f"| {hot:.0%} | {name} | {ours * 1e3:.1f} | {theirs * 1e3:.1f} | "
                         f"{theirs / ours:.2f}x | {floor * 1e3:.1f} | {ours / floor:.2f} |")
            print(lines[-1], flush=True)
    return lines


# --- skew: a growing share of the points in one cell ---------------------------------

AGGS = ("count", "max", "mean")


def skew_reference(x, y, w, agg):
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


def skew_call(x, y, w, agg):
    kw = dict(width=SIZE, height=SIZE, x_range=(0, 1), y_range=(0, 1), backend="cpu")
    if agg == "count":
        return hotbin.heatmap(x, y, **kw).counts
    return hotbin.heatmap(x, y, w, agg=agg, **kw).values


def case_skew(args):
    """Each aggregation's time at every share, over its time with no point in the hot cell."""
    w = np.random.default_rng(7).normal(30, 10, args.n).astype(np.float32)
    lines = [f"{floor_cpu.cpu_model()}, {os.cpu_count()} CPUs; {args.n} float32 points, {SIZE}^2 cells; "
             "ms (median of rounds) and the time over the same call with no point in the hot cell"]
    print(lines[0], flush=True)
    base = {}
    for share in (float(s) for s in args.shares.split(",")):
        x, y = make_points(args.n, share)
        row = []
        for agg in AGGS:
            m = min(args.n, 2_000_000)
            got = np.asarray(skew_call(x[:m], y[:m], w[:m], agg), np.float64)
            want = skew_reference(x[:m], y[:m], w[:m], agg)
            np.testing.assert_allclose(got, want.T, rtol=1e-9, equal_nan=True, err_msg=agg)  # rows: y
            ms = 1e3 * timeit(lambda: skew_call(x, y, w, agg), args.rounds)
            base.setdefault(agg, ms)
            row.append(f"{agg} {ms:6.1f} ({ms / base[agg]:.2f}x)")
        lines.append(f"{share:5.0%}  " + "  ".join(row))
        print(lines[-1], flush=True)
    return lines


# --- lonlat: cells over longitude / latitude ranges -----------------------------------

LON_RANGE, LAT_RANGE = (-74.05, -73.75), (40.60, 40.90)


def case_lonlat(args):
    """hotbin's time, the read floor and datashader's time on lon/lat ranges."""
    rng = np.random.default_rng(3)
    x = (-73.98 + rng.normal(0, 0.03, args.n)).astype(np.float32)
    y = (40.75 + rng.normal(0, 0.03, args.n)).astype(np.float32)
    kw = dict(width=SIZE, height=SIZE, x_range=LON_RANGE, y_range=LAT_RANGE)
    hm = hotbin.heatmap(x, y, **kw)
    assert np.array_equal(np.asarray(hm.counts), np.histogram2d(y, x, bins=[hm.y_edges, hm.x_edges])[0])
    lines = [f"CPU: {floor_cpu.cpu_model()}; {parallel.threads()} threads; {args.n} float32 points, "
             f"{SIZE}^2 cells; ms, medians of {args.rounds}"]
    t = timeit(lambda: hotbin.heatmap(x, y, **kw), args.rounds)
    lines.append(f"hotbin {1e3 * t:.1f}  floor (x, y read once) {1e3 * floor_cpu.read_time([x, y]):.1f}")
    try:
        import datashader as ds
        import pandas as pd
    except ImportError:
        lines.append("datashader: not installed")
        return lines
    df = pd.DataFrame({"x": x, "y": y})
    cv = ds.Canvas(plot_width=SIZE, plot_height=SIZE, x_range=LON_RANGE, y_range=LAT_RANGE)
    td = timeit(lambda: cv.points(df, "x", "y", agg=ds.count()), args.rounds)
    lines.append(f"datashader {1e3 * td:.1f}  ({td / t:.2f}x hotbin's time)")
    print("\n".join(lines), flush=True)
    return lines


def case_count(args):
    """Counts against datashader, NumPy and fast-histogram, a table per hot share."""
    lines = [f"# CPU heatmap (C2): {args.n / 1e6:g}M float32 points, {SIZE}x{SIZE}",
             "",
             f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. "
             f"Machine: {machine()}. Load average before: {os.getloadavg()[0]:.2f}; "
             f"core probe (floor_cpu.core_probe): {floor_cpu.probe_text()}.",
             "",
             "Medians of interleaved rounds, milliseconds (lower is better); `vs ds` = datashader's "
             "time over this one (C2 wants hotbin >= 3x). `cells != numpy`: cells whose count differs "
             "from numpy.histogram2d on the same cells (hotbin is asserted exact).",
             ""]
    for hot in HOT_SHARES:
        med, diff, floor, nbytes = run_share(args.n, hot, args.rounds)
        ds_t = med.get("datashader Canvas.points count")
        lines.append(f"## {hot:.0%} of the points in one hot cell")
        lines.append("")
        lines.append("| contender | ms | G points/s | vs ds | cells != numpy |")
        lines.append("|---|---|---|---|---|")
        for name, t in med.items():
            ratio = f"{ds_t / t:.2f}x" if ds_t else "-"
            lines.append(f"| {name} | {t * 1e3:.1f} | {args.n / t / 1e9:.2f} | {ratio} | {diff[name]} |")
        lines.append(f"| floor: {nbytes / 1e6:.0f} MB at {nbytes / floor / 1e9:.1f} GB/s (parallel read) "
                     f"| {floor * 1e3:.1f} | {args.n / floor / 1e9:.2f} | | |")
        lines.append("")
        print("\n".join(lines[-len(med) - 5:]), flush=True)
    lines.append(f"Load average after: {os.getloadavg()[0]:.2f}; core probe: {floor_cpu.probe_text()}.")
    return lines


CASES = {"count": case_count, "agg": case_agg, "skew": case_skew, "lonlat": case_lonlat}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), default="count")
    ap.add_argument("--n", type=int, default=20_000_000)
    ap.add_argument("--rounds", type=int, default=None, help="default 5 (lonlat: 7)")
    ap.add_argument("--shares", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
                    help="skew: the shares of the points in the hot cell")
    ap.add_argument("--out", default=None, help="results markdown (default: print only)")
    ap.add_argument("--quick", action="store_true", help="2M points, 3 rounds (under a minute)")
    args = ap.parse_args(argv)
    if args.rounds is None:
        args.rounds = 7 if args.case == "lonlat" else 5
    if args.quick:
        args.n, args.rounds = 2_000_000, 3
    text = "\n".join(CASES[args.case](args)) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)

if __name__ == "__main__":
    main()
