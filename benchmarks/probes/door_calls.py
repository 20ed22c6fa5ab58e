"""How many hotbin calls stand between a public call and its kernel (the front door's depth).

cProfile of one call, after a warm-up call (JIT compiled, backends loaded), of
``hotbin.histogram(x, 256, (0, 1))`` (x: 10**6 float64) and of
``hotbin.heatmap(x, y, w, agg="mean")`` (10**6 points). Of the profile's entries whose
file lies in the imported hotbin package it prints: the distinct functions (call sites),
their primitive calls in total, and the distinct modules they span. The histogram is
checked against NumPy first. Run it on another tree with ``PYTHONPATH=<tree>/src``.

    python benchmarks/probes/door_calls.py [--list]
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats

import numpy as np

import hotbin

ROOT = os.path.dirname(os.path.abspath(hotbin.__file__))


def profile(fn):
    """``(functions, primitive calls, modules, rows)`` of hotbin's entries in one profiled call."""
    fn()  # warm-up
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    rows = []
    for (file, line, name), (prim, _total, *_rest) in pstats.Stats(prof).stats.items():
        path = os.path.abspath(file)
        if path.startswith(ROOT + os.sep):
            rows.append((os.path.relpath(path, ROOT), line, name, prim))
    modules = {r[0] for r in rows}
    return len(rows), sum(r[3] for r in rows), len(modules), sorted(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print every hotbin entry too")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x, y, w = rng.random(10**6), rng.random(10**6), rng.random(10**6)

    h, _ = hotbin.histogram(x, 256, (0, 1))
    np.testing.assert_array_equal(np.asarray(h), np.histogram(x, 256, (0, 1))[0])

    print(f"hotbin at {ROOT}")
    cases = {"histogram(x, 256, (0, 1)), 1e6 float64": lambda: hotbin.histogram(x, 256, (0, 1)),
             "heatmap(x, y, w, agg='mean'), 1e6 points": lambda: hotbin.heatmap(x, y, w, agg="mean")}
    for label, fn in cases.items():
        funcs, calls, mods, rows = profile(fn)
        print(f"{label}: {funcs} hotbin functions, {calls} primitive calls, {mods} modules")
        if args.list:
            for mod, line, name, prim in rows:
                print(f"    {mod}:{line} {name} x{prim}")


if __name__ == "__main__":
    main()
