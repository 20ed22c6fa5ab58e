"""Issue #18: the cpu bin finders alone (``hotbin.backend.cpu.rule.codes``), against the ones
they replaced (kept here): LINEAR's guess corrected each way against two computed edges
(before) and the nearest edge with one compare (now); SEARCH halving from the bucket of each
value's key (before) and one compare against the bucket's one edge (now, where no bucket holds
two); SPAN32 against LINEAR's float64 loop (before) for float32 values.

One thread, values in L2 (2**16 float64 and their int32 codes, 768 KB; 2**20 before 2026-12-04),
REPS calls a round, ns a value, the median of the rounds; every answer checked against
:meth:`hotbin.core.binning.BinRule.index`. LINEAR: 256 bins over (-3.1, 259.7), float64 values;
SPAN32: float32 values there (float32 edges NumPy computes in float64); LINEAR32: float32 values
over a float32 range. SEARCH: log-spaced edges of several counts, lognormal values (float32
values under float32 edges once).

    python benchmarks/probes/cpu_codes.py [--rounds 20]
"""
from __future__ import annotations

import argparse

import numpy as np

from hotbin.core._jit import njit
from hotbin.backend.cpu import rule as R
from hotbin.core.binning import histogram_rule

import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from cpu_suite import timeit
from floor_cpu import cpu_model


@njit(nogil=True)
def linear_each_way(v, r, out):
    """LINEAR before: floor of the guess, then one compare each way against computed edges."""
    e, e0, en, lo, scale, step, _, _, mode = r
    nb = e.size - 1
    top = nb - 1.0
    is32 = e.itemsize == 4
    for k in range(v.size):
        x = v[k]
        ok = (x >= e0) & (x <= en)
        g = min(np.floor((x - lo) * scale if ok else 0.0), top)
        a0 = g * step + lo
        a1 = (g + 1.0) * step + lo
        if is32:
            a0 = np.float64(np.float32(a0))
            a1 = np.float64(np.float32(a1))
        g = g - (1.0 if x < a0 else 0.0) + (1.0 if (g < top) & (x >= a1) else 0.0)
        out[k] = np.int32(g if ok else np.float64(nb))


@njit(nogil=True)
def linear32_each_way(v, r, out):
    """LINEAR32 before: the same in float32."""
    e, e0, en, lo, scale, step, _, _, mode = r
    nb = e.size - 1
    one, zero = np.float32(1.0), np.float32(0.0)
    lo32, sc32, s32, top32 = np.float32(lo), np.float32(scale), np.float32(step), np.float32(nb - 1)
    for k in range(v.size):
        x = v[k]
        ok = (x >= e0) & (x <= en)
        g = min(np.floor((x - lo32) * sc32 if ok else zero), top32)
        a0 = np.float32(g * s32) + lo32
        a1 = np.float32((g + one) * s32) + lo32
        g = g - (one if x < a0 else zero) + (one if (g < top32) & (x >= a1) else zero)
        out[k] = np.int32(g if ok else np.float32(nb))


def search_halving(v, r, out):
    """SEARCH before each bucket's edge was loaded with its start: the halving from the key's
    bucket, start and edge loaded one after the other (a halving of all the edges before that,
    1.4-3.7x slower still on the H200 host's Xeon)."""
    R.codes(v, r[:-2] + (r[0][:0], R.SEARCH), out)


def linear_float64(v, r, out):
    """float32 values under float32 edges of a float64 span before SPAN32: LINEAR's loop, in
    float64."""
    R.codes(v, r[:-1] + (R.LINEAR,), out)


#: calls a round: 2M values, so that a round takes milliseconds
REPS = 32


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args(argv)
    print(f"CPU: {cpu_model()}; one thread; 2**16 values in L2; ns a value, medians of {args.rounds}")
    rng = np.random.default_rng(1)
    n = 1 << 16
    u = rng.random(n) * 263 - 3.2
    cases = [("LINEAR, float64", u, 256, (-3.1, 259.7), R.LINEAR, linear_each_way),
             ("SPAN32 (LINEAR before)", u.astype(np.float32), 256, (-3.1, 259.7), R.SPAN32,
              linear_float64),
             ("LINEAR32", u.astype(np.float32), 256, (np.float32(-3.1), np.float32(259.7)), R.LINEAR32,
              linear32_each_way)]
    logn = rng.lognormal(size=n)
    for nb in (16, 256, 4096, 65536):
        cases.append((f"SEARCH, {nb} log-spaced edges, float64", logn, np.logspace(-2, 2, nb + 1), None,
                      R.SEARCH, search_halving))
    cases.append(("SEARCH, 256 log-spaced edges, float32", logn.astype(np.float32),
                  np.logspace(-2, 2, 257).astype(np.float32), None, R.SEARCH, search_halving))
    for name, x, bins, rng_, mode, before in cases:
        rule = histogram_rule(x, bins, rng_)
        t = R.rule_args(rule, x.dtype)
        assert t[-1] == mode, (name, t[-1])
        want = rule.index(x)
        want[want < 0] = rule.nbins
        out = np.empty(n, np.int32)
        times = {}
        for way, fn in (("before", before), ("now", R.codes)):
            times[way] = timeit(lambda: [fn(x, t, out) for _ in range(REPS)], args.rounds) / (n * REPS) * 1e9
            assert np.array_equal(out, want), (name, way)
        print(f"{name:42} before {times['before']:6.3f}  now {times['now']:6.3f}  "
              f"({times['before'] / times['now']:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
