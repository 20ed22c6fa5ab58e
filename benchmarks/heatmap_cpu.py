"""C2: CPU heatmap of 20M float32 points on a 1024 x 1024 grid, against the anchors.

Contenders, in one process on the same arrays: ``hotbin.heatmap`` (cpu backend,
all numba threads and one thread), datashader ``Canvas.points`` with
``count()``, ``numpy.histogram2d`` and ``fast_histogram.histogram2d``. The data: uniform points in ``[0, 1)^2`` with a share (0, 50 %,
90 %, 100 %) moved into one hot cell, shuffled.

Every contender is warmed up, then the contenders run in interleaved rounds
(so machine noise hits them alike; numpy.histogram2d after them: see SLOW) and
medians are reported. Answers are
checked against NumPy on the same cells: hotbin must match exactly; the anchors'
differing cells are reported. The floor is the input bytes over the read
bandwidth measured here on the same arrays (benchmarks/floor_cpu.py).

Usage::

    python benchmarks/heatmap_cpu.py [--quick] [--n 20000000] [--rounds 5] [--out PATH]

Needs datashader, pandas and fast-histogram (skipped with a note when missing).
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=None, help="results markdown (default: print only)")
    ap.add_argument("--quick", action="store_true", help="2M points, 3 rounds (under a minute)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.rounds = 2_000_000, 3
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
    rows = []
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
        rows.append((hot, med, ds_t, floor))
        print("\n".join(lines[-len(med) - 5:]), flush=True)
    lines.append(f"Load average after: {os.getloadavg()[0]:.2f}; core probe: {floor_cpu.probe_text()}.")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
