"""The cpu backend's NumPy path for small inputs (backend/cpu/small.py) against its numba
kernels, bit for bit, on the same inputs: both must give what a user sees whichever path
an input's size picks. And a small first call imports no numba (a new interpreter)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hotbin.core import reductions
from hotbin.backend.cpu import count1d, partials, small
from hotbin.backend.cpu import reduce, scan
from hotbin.core.binning import histogram2d_rules, histogram_rule

RNG = np.random.default_rng(5)


def _data(kind, n=3001):
    if kind == "float64":
        a = RNG.normal(0.5, 0.4, n)
        a[::97] = np.nan
        a[::101] = np.inf
        a[1::89] = -np.inf
        return a
    if kind == "float32 on edges":
        return (RNG.integers(0, 257, n) / 256).astype(np.float32)
    if kind == "whole numbers":
        return RNG.integers(-3, 103, n).astype(np.float64)
    if kind == "int64 big":
        return RNG.integers(2**62 - 2**17, 2**62 + 2**17, n, dtype=np.int64)
    if kind == "uint16":
        return RNG.integers(0, 2**16, n).astype(np.uint16)
    if kind == "big-endian strided":
        return RNG.normal(0, 1, 2 * n).astype(">f8")[::2]
    raise AssertionError(kind)


KINDS = ["float64", "float32 on edges", "whole numbers", "int64 big", "uint16", "big-endian strided"]
BINS = {"float64": [(256, (0.0, 1.0)), (np.array([-1, 0, 0.3, 0.5, 2.0]), None)],
        "float32 on edges": [(256, (0.0, 1.0)), (7, (0.0, 1.0))],
        "whole numbers": [(100, (0, 100)), (13, None)],
        "int64 big": [(10, (2**62 - 2**16, 2**62 + 2**16)), (64, None)],
        "uint16": [(100, (0, 65536)), (4096, None)],
        "big-endian strided": [(50, (-2, 2)), (np.array([-1.0, 1.0]), None)]}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("acc", ["count", "f64", "i64"])
def test_histogram_small_equals_kernel(kind, which, acc):
    a = _data(kind)
    bins, rng = BINS[kind][which]
    rule = histogram_rule(a, bins, rng, minmax=reduce.minmax)
    red, w = reductions.COUNT, None
    if acc == "f64":
        red, w = reductions.SUM_F64, RNG.normal(0, 1, a.size)
        w[::7] = np.nan
    elif acc == "i64":
        red = reductions.SUM_I64
        w = RNG.integers(-2**40, 2**40, a.size)
    assert small.takes(a.size, red)
    got = small.histogram(a, rule, w, red)
    want = partials.histogram(a, rule, w, red)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("by", [None, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogram2d_small_equals_kernel(by, weighted):
    n = 5000
    x = RNG.normal(0, 1, n).astype(np.float32)
    y = np.round(RNG.normal(0, 1, n) * 8) / 8  # values on cell edges
    x[::50] = np.nan
    rx, ry = histogram2d_rules(x, y, bins=(33, 16), range=[(-2, 2), (-2, 2)], minmax=reduce.minmax)
    red, w = (reductions.SUM_F64, RNG.normal(0, 1, n)) if weighted else (reductions.COUNT, None)
    b = None if by is None else (RNG.integers(-1, by + 1, n), by)  # codes outside [0, by) too
    got, kept = small.histogram2d(x, y, rx, ry, w, red, b)
    want, kept2 = partials.histogram2d(x, y, rx, ry, w, red, b)
    assert kept == kept2
    np.testing.assert_array_equal(got, want)


def test_bincount_and_cumsum_small_equal_kernels():
    x = RNG.integers(0, 300, 4000).astype(np.uint64)
    w = RNG.normal(0, 1, x.size)
    np.testing.assert_array_equal(small.bincount(x, 300), count1d.bincount(x, 300))
    np.testing.assert_array_equal(small.bincount(x, 300, w), count1d.bincount(x, 300, w))
    for a, axis in [(RNG.normal(0, 1, 9000), None), (RNG.normal(0, 1, (3, 5000)).astype(np.float32), 1),
                    (RNG.normal(0, 1, (3000, 4)), 0), (RNG.integers(-9, 9, 7000).astype(np.int32), None)]:
        od = np.cumsum(a[:0]).dtype
        for exclusive in (False, True):
            np.testing.assert_array_equal(small.cumsum(a, axis, od, exclusive),
                                          scan.cumsum(a, axis, od, exclusive))


def test_first_small_call_imports_no_numba():
    code = ("import sys, numpy as np, hotbin\n"
            "h, e = hotbin.histogram(np.arange(1000.0), bins=10)\n"
            "assert h.tolist() == [100] * 10\n"
            "h = hotbin.histogram2d(np.arange(100.0), np.arange(100.0), bins=4)[0]\n"
            "assert h.trace() == 100\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numba'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _on_edges(rule, n=4000):
    """Values of the rule's dtype on its edges, a float either side of them, between them,
    NaN and beyond the ends, shuffled."""
    e = rule.edges
    dt = e.dtype
    near = np.concatenate([e, np.nextafter(e, dt.type(np.inf)), np.nextafter(e, dt.type(-np.inf))])
    mid = RNG.uniform(float(e[0]), float(e[-1]), n).astype(dt)
    out = np.array([np.nan, -np.inf, np.inf, float(e[0]) - 1, float(e[-1]) + 1], dt)
    return RNG.permutation(np.concatenate([near, mid, out]).astype(dt))


@pytest.mark.parametrize("dt, bins, rng", [
    (np.float64, 10, None), (np.float64, 1000, None), (np.float64, 37, (-3.1, 259.7)),
    (np.float32, 1000, None), (np.float32, 4096, None), (np.float32, 100, (-3.1, 259.7)),
    (np.float64, 256, (0, 1)), (np.float32, 256, (0, 1)), (np.float64, 3, (-1.0, -0.0))])
def test_small_multiply_guess_equals_kernel_and_numpy(dt, bins, rng):
    """Small counts find bins by the multiply guess (then a compare each way, or with an
    exact scale none): on every edge and a float either side, as the kernels and NumPy."""
    base = RNG.normal(5, 3, 500).astype(dt)
    rule = histogram_rule(base, bins, rng, minmax=reduce.minmax)
    assert small._multiplies(rule)  # else this tests the search
    a = _on_edges(rule)
    a = a[:small.SMALL]
    want = np.histogram(a, rule.edges)[0]
    np.testing.assert_array_equal(small.histogram(a, rule, None, reductions.COUNT), want)
    np.testing.assert_array_equal(partials.histogram(a, rule, None, reductions.COUNT), want)
    idx = small.codes(a, rule)
    idx[idx == rule.nbins] = -1
    np.testing.assert_array_equal(idx, rule.index(a))


def test_slack_of_few_edges_as_numpy():
    """A small rule's slack is worked out in Python floats: the same value as NumPy's
    ``max |(float64(e) - lo) * scale - i|`` over the edges, NaN included."""
    from hotbin.core.binrule import BinRule

    rng = np.random.default_rng(11)
    for k in range(400):
        n = int(rng.integers(1, 64))
        lo = rng.normal() * 10.0 ** rng.integers(-30, 30)
        hi = lo + abs(rng.normal()) * 10.0 ** rng.integers(-40, 300)
        with np.errstate(all="ignore"):
            e = np.linspace(lo, hi, n + 1).astype([np.float64, np.float32, np.float16][k % 3])
        rule = BinRule(edges=e, cmp=e, uniform=False)
        with np.errstate(all="ignore"):
            want = np.max(np.abs((e.astype(np.float64) - rule.lo) * rule.scale - np.arange(n + 1)))
        got = rule.slack_from(rule.lo)
        assert got == want or (np.isnan(got) and np.isnan(want)), (n, lo, hi, e.dtype)
