"""Issue #18: where a cpu call's time goes, the whole public call against its kernel.

Each case times the public call (medians of the rounds, on one thread and on all) and, beside
it, the part of it spent in the kernel (functions of the cpu backend wrapped with a timer):
what is left is the work around the kernel (partials zeroed and folded, threads started).
Every answer is checked against NumPy.

* 200M uint8 (by pairs of bytes) and 50M uint16 into 256 bins, uniform / narrow / constant:
  the kernel: its threaded region (count1d.share, the pieces of count1d.count_values).
* Heatmaps of 20M float32 points on 1024^2 with 0 / 50 / 90 / 100 % in one cell (as
  heatmap_cpu.py): the kernel is partials._hist, the fold partials._fold.

    python benchmarks/probes/cpu_call_parts.py [--quick] [--rounds 7] [--only bytes|heatmap]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import hotbin
from hotbin.backend.cpu import count1d, parallel, partials

import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from floor_cpu import cpu_model
from heatmap_cpu import HOT_SHARES, SIZE, make_points


def timers(names):
    """Wrap each (module, attribute) of ``names`` with a timer; returns (spent, restore)."""
    spent = {name: [] for _, name in names}
    old = {(m, name): getattr(m, name) for m, name in names}

    def wrap(m, name):
        f = old[(m, name)]

        def timed(*a, **k):
            t = time.perf_counter()
            r = f(*a, **k)
            spent[name].append(time.perf_counter() - t)
            return r
        return timed

    for m, name in names:
        setattr(m, name, wrap(m, name))

    def restore():
        for (m, name), f in old.items():
            setattr(m, name, f)
    return spent, restore


def measure(label, call, want, names, rounds):
    for nt in (1, parallel.threads()):
        old = parallel.set_threads(nt)
        spent, restore = timers(names)
        try:
            rows = []
            for _ in range(rounds + 1):  # the first warms up
                for v in spent.values():
                    v.clear()
                t = time.perf_counter()
                got = call()
                rows.append((time.perf_counter() - t, {k: sum(v) for k, v in spent.items()}))
                assert np.array_equal(got, want), label
        finally:
            restore()
            parallel.set_threads(old)
        med = statistics.median(c for c, _ in rows[1:])
        parts = ", ".join(f"{k} {1e3 * statistics.median(p[k] for _, p in rows[1:]):6.1f}" for k in spent)
        print(f"{label:24} {nt:2} threads: call {1e3 * med:6.1f} ms ({parts})", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", choices=["bytes", "heatmap"])
    ap.add_argument("--quick", action="store_true", help="a tenth of the data, 3 rounds (under a minute)")
    args = ap.parse_args(argv)
    scale = 10 if args.quick else 1
    if args.quick:
        args.rounds = 3
    print(cpu_model(), f"threads {parallel.threads()}")
    rng = np.random.default_rng(0)
    if args.only != "heatmap":
        n = 200_000_000 // scale
        data = {"uint8 uniform": rng.integers(0, 256, n, dtype=np.uint8),
                "uint8 narrow": rng.integers(100, 108, n).astype(np.uint8),
                "uint8 constant": np.full(n, 201, np.uint8),
                "uint16 uniform": rng.integers(0, 65536, n // 4).astype(np.uint16),
                "uint16 constant": np.full(n // 4, 4321, np.uint16)}
        for label, a in data.items():
            top = 1 << (8 * a.itemsize)
            want = np.bincount(a, minlength=top).reshape(256, -1).sum(axis=1)
            measure(label, lambda: hotbin.histogram(a, 256, (0, top), backend="cpu")[0], want,
                    [(count1d, "share")], args.rounds)
            del a
        del data
    if args.only != "bytes":
        for hot in HOT_SHARES:
            x, y = make_points(20_000_000 // scale, hot)
            want = np.histogram2d(y, x, bins=SIZE, range=((0, 1), (0, 1)))[0]
            measure(f"heatmap {hot:.0%} in one cell", lambda: hotbin.heatmap(
                x, y, width=SIZE, height=SIZE, x_range=(0, 1), y_range=(0, 1), backend="cpu").counts, want,
                [(partials, "_hist"), (partials, "_fold")], args.rounds)


if __name__ == "__main__":
    main()
