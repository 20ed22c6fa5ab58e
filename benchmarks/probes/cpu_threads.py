"""Issue #18: one thread against two on inputs of 20K-9M elements, where a handoff to a pool
thread (``parallel._spread``, timed here with an empty job) costs what a thread counts 100-200K
values in. The tuning behind ``hotbin.backend.cpu.parallel.MIN_PER_THREAD`` and
``hotbin.backend.cpu.scan.SCAN_MIN_PER_THREAD``: two threads must never be slower than one.

Histogram of float64 into 256 bins over (0, 1), cumsum of int32 and float64, bincount of int32
values 0-99, histogram2d of float64 points into 64x64 cells; every answer checked against NumPy,
NumPy's time beside (its 2-D histogram only up to 200K points). Medians of the rounds, us.

    python benchmarks/probes/cpu_threads.py [--out benchmarks/results/cpu-threads-MACHINE.md]
"""
from __future__ import annotations

import argparse
import datetime
import statistics
import time

import numpy as np

import hotbin
from hotbin.backend.cpu import parallel

import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from floor_cpu import cpu_model, cpus

SIZES = (20_000, 70_000, 200_000, 400_000, 600_000, 1_000_000, 2_000_000, 4_500_000, 9_000_000)


def timed(f, rounds):
    f()
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def works(n, rng):
    """(name, ours, numpy's, equal(ours, numpy's)) for n elements."""
    x, y = rng.random(n), rng.random(n)
    xi = rng.integers(0, 100, n).astype(np.int32)
    same = lambda a, b: np.array_equal(a[0], b[0]) if isinstance(a, tuple) else np.array_equal(a, b)  # noqa: E731
    return [
        ("histogram f64", lambda: hotbin.histogram(x, 256, (0, 1), backend="cpu"),
         lambda: np.histogram(x, 256, (0, 1)), same),
        ("cumsum i32", lambda: hotbin.cumsum(xi, backend="cpu"), lambda: np.cumsum(xi), same),
        ("cumsum f64", lambda: hotbin.cumsum(x, backend="cpu"), lambda: np.cumsum(x),
         lambda a, b: np.allclose(a, b, rtol=1e-9)),
        ("bincount i32", lambda: hotbin.bincount(xi, backend="cpu"), lambda: np.bincount(xi), same),
        ("histogram2d f64", lambda: hotbin.histogram2d(x, y, 64, [(0, 1), (0, 1)], backend="cpu"),
         (lambda: np.histogram2d(x, y, 64, [(0, 1), (0, 1)])) if n <= 200_000 else None, same),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    handoff = []
    for nt in (2, 1):
        parallel.set_threads(nt)
        handoff.append(timed(lambda: parallel._spread(1 << 30, lambda t, n: None), 2000))
    lines = [f"CPU threads, {datetime.date.today()}, {cpu_model()}, {cpus()}; a handoff to a pool "
             f"thread (empty job, 2 threads) {handoff[0]:.1f} us (1 thread: {handoff[1]:.1f})", "",
             "| n | work | 1 thread (us) | 2 threads (us) | 2 threads / 1 | numpy (us) |", "|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    rng = np.random.default_rng(0)
    for n in SIZES:
        rounds = 30 if n > 3_000_000 else 100 if n > 500_000 else 300
        for name, ours, theirs, equal in works(n, rng):
            ts = []
            for nt in (1, 2):
                parallel.set_threads(nt)
                ts.append(timed(ours, rounds))
                if theirs is not None:
                    assert equal(ours(), theirs()), (name, n, nt)
            parallel.set_threads(None)
            np_t = f"{timed(theirs, max(5, rounds // 10)):.0f}" if theirs is not None else "—"
            line = f"| {n} | {name} | {ts[0]:.0f} | {ts[1]:.0f} | {ts[1] / ts[0]:.2f} | {np_t} |"
            lines.append(line)
            print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
