"""Per-cell medians of a heatmap (``agg="median"``) against a NumPy reference, one case a run.

cpu (the default): ``hotbin.heatmap(x, y, w, agg="median")`` on 1024^2 cells, float32 and float64
weights, 0 / 90 / 100 % of the points in one cell, against the NumPy reference a user would
write: ``numpy.lexsort`` of (cell, weight), then each cell's middle values picked and averaged
(``numpy.median``'s rule), vectorized. The reference is given the points' cells for free (only its
sort and picks are timed); hotbin's time is the whole public call. Both answers are checked
against each other bit for bit, and a sample of cells against ``numpy.median`` itself.
Target: hotbin >= 3x the reference on 2 cores.

gpu: 2^28 float32 points (CuPy arrays) into 1024^2, median at 0 / 90 / 100 % hot, through the
public call; points per second against the target of 5 G points/s on an H200, and the CuPy
version of the reference (``cupy.lexsort``) where memory allows; answers checked as above on the
host for a sample of cells.

Contenders run in interleaved rounds after a warm-up; medians are reported.

Usage::

    python benchmarks/order_stats.py [--case cpu|gpu] [--n 4194304] [--rounds 3]
        [--out benchmarks/results/order_stats-<machine>.md]
"""
from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time

import numpy as np

import floor_cpu
import hotbin
from hotbin.core.binning import cell_rule

SIZE = 1024
SHARES = (0.0, 0.9, 1.0)


def make(n, hot, dtype, xp=np, seed=20261204):
    """Uniform points in [0, 1)^2, ``hot`` of them moved into one cell, shuffled; normal weights."""
    rng = np.random.default_rng(seed)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    k = int(hot * n)
    x[:k], y[:k] = 0.5001, 0.5001
    p = rng.permutation(n)
    w = rng.normal(30, 10, n).astype(dtype)
    return xp.asarray(x[p]), xp.asarray(y[p]), xp.asarray(w)


def cells_of(x, y):
    """Each point's cell (row * SIZE + column) by the exact rule, -1 outside: the reference's input."""
    rule = cell_rule(SIZE, 0.0, 1.0, "width", False)
    ix, iy = rule.index(x), rule.index(y)
    return np.where((ix < 0) | (iy < 0), -1, iy * SIZE + ix)


def reference(cells, w, xp=np):
    """The NumPy reference: lexsort by (cell, weight), then each cell's median from its middle values."""
    ok = cells >= 0
    c, v = cells[ok], w[ok]
    o = xp.lexsort((v, c)) if xp is np else xp.lexsort(xp.stack([v.astype(np.float64), c.astype(np.float64)]))
    c, v = c[o], v[o]
    n = xp.bincount(c, minlength=SIZE * SIZE)
    start = xp.cumsum(n) - n
    has = xp.flatnonzero(n)
    lo, hi = v[start[has] + (n[has] - 1) // 2], v[start[has] + n[has] // 2]
    out = xp.full(SIZE * SIZE, np.nan)
    out[has] = xp.where(n[has] % 2 == 0, xp.mean(xp.stack([lo, hi]), axis=0), lo.astype(np.float64))
    return out.reshape(SIZE, SIZE)


def mine(x, y, w):
    return hotbin.heatmap(x, y, w, agg="median", width=SIZE, height=SIZE, x_range=(0, 1), y_range=(0, 1)).values


def check(values, x, y, w, ref=None):
    """hotbin's answer against the reference (bitwise) and numpy.median on a sample of cells."""
    v = np.asarray(hotbin.backend.to_host(values))
    if ref is not None:
        assert np.array_equal(v, np.asarray(hotbin.backend.to_host(ref)), equal_nan=True), "differs from the reference"
    xs, ys, ws = (np.asarray(hotbin.backend.to_host(a)) for a in (x, y, w))
    cells = cells_of(xs, ys)
    for c in list(np.unique(cells[:2000]))[:200]:
        want = np.median(ws[cells == c])
        assert v.reshape(-1)[c] == want, f"cell {c}: {v.reshape(-1)[c]} != numpy.median {want}"


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run_cpu(args):
    rows = []
    for dt in (np.float32, np.float64):
        for hot in SHARES:
            x, y, w = make(args.n, hot, dt)
            cells = cells_of(x, y)
            got = mine(x, y, w)
            check(got, x, y, w, reference(cells, w))
            times = {"hotbin": [], "numpy lexsort": []}
            for _ in range(args.rounds):
                times["hotbin"].append(timed(lambda: mine(x, y, w)))
                times["numpy lexsort"].append(timed(lambda: reference(cells, w)))
            t = {k: statistics.median(v) for k, v in times.items()}
            rows.append((np.dtype(dt).name, hot, t["hotbin"], t["numpy lexsort"]))
            print(f"{np.dtype(dt).name} {hot:4.0%} hot: hotbin {t['hotbin'] * 1e3:8.1f} ms, numpy lexsort "
                  f"{t['numpy lexsort'] * 1e3:8.1f} ms, ratio {t['numpy lexsort'] / t['hotbin']:.1f}x", flush=True)
    lines = ["| weights | hot | hotbin ms | NumPy lexsort + picks ms | ratio (target >= 3) |", "|---|---|---|---|---|"]
    lines += [f"| {d} | {h:.0%} | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a:.1f}x |" for d, h, a, b in rows]
    return lines


def run_gpu(args):
    import cupy as cp

    from cuda_timing import timeit

    n = args.n
    lines = ["| hot | hotbin ms | G points/s (target >= 5) | cupy.lexsort + picks ms |", "|---|---|---|---|"]
    for hot in SHARES:
        x, y, w = make(n, hot, np.float32, cp)
        got = mine(x, y, w)
        small = make(1 << 22, hot, np.float32, cp)
        check(mine(*small), *small, reference(cp.asarray(cells_of(*(cp.asnumpy(a) for a in small[:2]))), small[2], cp))
        ms = timeit(lambda: mine(x, y, w), reps=5, warm=1)
        ref_ms = float("nan")  # not asked for, or beyond the device's memory
        if not args.no_reference:
            try:
                rule = cell_rule(SIZE, 0.0, 1.0, "width", False)
                cells = hotbin.backend.load("cuda").cells2d(y, x, rule, rule)  # row * SIZE + column, on the device
                ref_ms = timeit(lambda: reference(cells, w, cp), reps=3, warm=1)
                assert np.array_equal(cp.asnumpy(got), cp.asnumpy(reference(cells, w, cp)), equal_nan=True)
                del cells
            except cp.cuda.memory.OutOfMemoryError:
                pass
        print(f"{hot:4.0%} hot: {ms:.2f} ms, {n / ms / 1e6:.2f} G points/s, cupy.lexsort {ref_ms:.1f} ms", flush=True)
        lines.append(f"| {hot:.0%} | {ms:.2f} | {n / ms / 1e6:.2f} | {ref_ms:.1f} |")
    x = y = w = got = None  # free the device memory for the sort below
    # the bound of a sort by cell: cupy.sort of n uint64 words alone (the partial's one sort)
    words = cp.random.randint(0, 1 << 62, n, dtype=cp.int64).view(cp.uint64)
    sort_ms = timeit(lambda: cp.sort(words), reps=5, warm=1)
    print(f"cupy.sort of {n:,} uint64 words alone: {sort_ms:.2f} ms ({n / sort_ms / 1e6:.2f} G words/s)", flush=True)
    lines += ["", f"The sort alone (cupy.sort of {n:,} random uint64 words, the partial's one sort): "
              f"{sort_ms:.2f} ms, {n / sort_ms / 1e6:.2f} G words/s."]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--n", type=int, default=None, help="points (cpu: 2^22, gpu: 2^28)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-reference", action="store_true", help="gpu: skip timing cupy.lexsort (slow)")
    ap.add_argument("--out", default=None, help="write the results here (markdown)")
    args = ap.parse_args()
    args.n = args.n or (1 << 22 if args.case == "cpu" else 1 << 28)
    where = floor_cpu.cpu_model()
    if args.case == "gpu":
        import cupy as cp

        where = cp.cuda.runtime.getDeviceProperties(0)["name"].decode() + " (host: " + where + ")"
    print(f"{args.case}: {args.n:,} points into {SIZE}x{SIZE}, {where}, {floor_cpu.cpus()}", flush=True)
    lines = run_gpu(args) if args.case == "gpu" else run_cpu(args)
    if args.out:
        head = [f"# order statistics ({args.case}): median per cell, {args.n:,} points into {SIZE}x{SIZE}", "",
                f"{datetime.date.today()}, {where}, {floor_cpu.cpus()}, Python {platform.python_version()}, "
                f"numpy {np.__version__}, hotbin {hotbin.__version__}; `python benchmarks/order_stats.py "
                f"--case {args.case} --n {args.n} --rounds {args.rounds}`", ""]
        with open(args.out, "w") as f:
            f.write("\n".join(head + lines) + "\n")


if __name__ == "__main__":
    main()
