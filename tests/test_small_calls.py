"""Small histogram calls on NumPy arrays against numpy.histogram, bit for bit: the door that
counts them with the rule built at once (:func:`hotbin.backend.cpu.small.rule`), the edges of a range found
in the call (:func:`hotbin.core.edges.data_edges`) and the counts by sorting
(:func:`hotbin.backend.cpu.small._sorted_counts`)."""
from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import hotbin
import hotbin.api
from hotbin.backend.cpu import small
from hotbin.core.binning import histogram_rule
from hotbin.core.edges import data_edges

RNG = np.random.default_rng(23)


def _same(got, want):
    """Counts and edges equal in value, dtype and bytes (the sign of a zero edge too)."""
    for g, w in zip(got, want):
        assert type(g) is np.ndarray and g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes(), (g, w)


def _no_plan(monkeypatch):
    """Make the general path fail: a call that passes took the small call's rule (its op run
    by the executor as any other, without the general path's checks and weighted runner)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the general path ran")
    monkeypatch.setattr(hotbin.api, "weighted", refuse)


def _on_edges(dt, n=1000):
    """Values of dtype ``dt`` on the edges of 10 bins over their extent and beside them
    (integers: 0 to 100, so that every edge of 10 bins over them is a whole number)."""
    if np.dtype(dt).kind in "iu":
        a = RNG.integers(0, 101, n)
        a[:2] = 0, 100
        return RNG.permutation(a).astype(dt)
    base = RNG.normal(0, 5, n)
    e = np.linspace(base.min(), base.max(), 11)
    base[: 3 * e.size] = np.concatenate([e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf)])
    return RNG.permutation(base.astype(dt))


CASES = {
    "float64": lambda: RNG.random(1000),
    "float64 on edges": lambda: _on_edges(np.float64),
    "float32 on edges": lambda: _on_edges(np.float32),
    "float16": lambda: _on_edges(np.float16),
    "int64": lambda: RNG.integers(-10**6, 10**6, 1000),
    "int64 above 2**53": lambda: RNG.integers(2**62 - 2**12, 2**62 + 2**12, 1000, dtype=np.int64),
    "uint64 above 2**63": lambda: RNG.integers(2**64 - 2**14, 2**64 - 1, 1000, dtype=np.uint64),
    "int8": lambda: RNG.integers(-128, 127, 1000).astype(np.int8),
    "int16 on edges": lambda: _on_edges(np.int16),
    "uint8": lambda: _on_edges(np.uint8),
    "uint16": lambda: RNG.integers(0, 2**16, 777).astype(np.uint16),
    "big-endian": lambda: RNG.normal(0, 1, 1000).astype(">f8"),
    "big-endian int32": lambda: RNG.integers(-99, 99, 1000).astype(">i4"),
    "strided": lambda: RNG.normal(0, 1, 2000)[::2],
    "2-D, Fortran order": lambda: np.asfortranarray(RNG.normal(0, 1, (40, 25))),
    "min == max": lambda: np.full(100, 3.25),
    "int min == max": lambda: np.full(100, 7, np.int64),
    "one value": lambda: np.array([-2.5]),
    "zeros of both signs": lambda: np.array([0.0, -0.0, 0.0, -0.0]),
    "-0.0 below": lambda: np.array([-0.0, 0.5, 1.0, 0.0]),
    "empty": lambda: np.empty(0),
    "tiny range": lambda: np.array([1.0, np.nextafter(1.0, 2.0)] * 50),
    "subnormal range": lambda: np.array([0.0, 5e-324, 1e-323, 2e-323]),
    "at the largest float": lambda: np.array([1.7e308, 1.7976931348623157e308]),
    "at SMALL": lambda: RNG.normal(0, 1, small.SMALL),
}
BINS = [1, 2, 10, small.SORTED_EDGES - 1, small.SORTED_EDGES, 1000]  # counted by sorting, then not


def _run(f, *args):
    """``(result or error text, warnings' texts)`` of ``f(*args)``."""
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        try:
            out = f(*args)
        except (ValueError, TypeError, OverflowError) as exc:  # too many bins for a narrow extent, ...
            out = f"{type(exc).__name__}: {exc}"
    return out, [str(w.message) for w in ws]


def _check(a, *args, warns=True):
    """hotbin.histogram(a, *args) as numpy.histogram: the same arrays or the same error, and
    with ``warns`` the same warnings (an extent too wide for a float's difference; a given
    range's rule is built once, and warns once)."""
    try:
        want, wwarn = _run(np.histogram, a, *args)
    except IndexError:  # NumPy's guess fails past its edges (float16 over a huge range): its edges' bins
        want, wwarn = _run(lambda: (np.histogram(a, np.histogram_bin_edges(a, *args))[0],
                                    np.histogram_bin_edges(a, *args)))
    got, gwarn = _run(hotbin.histogram, a, *args)
    assert gwarn == wwarn or not warns
    if isinstance(want, str):
        assert got == want
    else:
        _same(got, want)


@pytest.mark.parametrize("bins", BINS)
@pytest.mark.parametrize("case", list(CASES))
def test_range_from_data_as_numpy(case, bins, monkeypatch):
    _no_plan(monkeypatch)
    _check(CASES[case](), bins)


RANGES = [(0, 1), (0.0, 1.0), (-3.1, 259.7), (-1.0, -0.0), (5, 5), (-2**62, 2**62), (2**62 - 2**11, 2**62 + 2**11)]


@pytest.mark.parametrize("rng", RANGES)
@pytest.mark.parametrize("bins", [1, 10, small.SORTED_EDGES - 1, small.SORTED_EDGES])
@pytest.mark.parametrize("case", ["float64", "float32 on edges", "float16", "int64 above 2**53",
                                  "big-endian", "strided", "uint8", "-0.0 below"])
def test_given_range_as_numpy(case, bins, rng):
    _check(CASES[case](), bins, rng, warns=False)


def test_nan_and_inf():
    """A range from data holding NaN or inf: NumPy's ValueError and message; over a given
    range NaN counts nowhere and the infinities outside it."""
    for bad in (np.nan, np.inf, -np.inf):
        for dt in (np.float64, np.float32, np.float16):
            a = RNG.normal(0, 1, 500).astype(dt)
            a[17] = bad
            with pytest.raises(ValueError) as want:
                np.histogram(a, 10)
            with pytest.raises(ValueError) as got:
                hotbin.histogram(a, 10)
            assert str(got.value) == str(want.value)
            for bins, rng in ((10, (-1.0, 1.0)), (7, (0, 1)), (256, (-3, 3))):
                _same(hotbin.histogram(a, bins, rng), np.histogram(a, bins, rng))


def test_other_calls_take_the_general_path(monkeypatch):
    """Weights, density, a bool array, edges, a string rule, NumPy-scalar bounds, a larger
    array and another backend by name or environment leave the door to the general path
    (which answers as NumPy)."""
    asked = []
    real = small.rule

    def spy(*args):
        out = real(*args)
        asked.append(out is not None)
        return out

    monkeypatch.setattr(hotbin.api, "_small_rule", spy)
    a = RNG.normal(0, 1, 300)
    w = RNG.random(300)
    for args, kw in [((10,), {"weights": w}), ((10,), {"density": True}), ((np.array([-1.0, 0, 2]),), {}),
                     (("auto",), {}), ((10, (np.float32(-1), np.float32(1))), {}), ((10,), {"axis": 0})]:
        want = np.histogram(a, *args, **{k: v for k, v in kw.items() if k != "axis"})
        got = hotbin.histogram(a, *args, **kw)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)  # weighted sums: to rounding
        _same(got[1:], want[1:])
    with pytest.warns(RuntimeWarning, match="Converting input"):
        _same(hotbin.histogram(a > 0, 3), np.histogram((a > 0).astype(np.uint8), 3))
    assert asked and not any(asked)  # asked, and declined each
    assert small.rule(RNG.normal(0, 1, small.SMALL + 1), 10, None) is None  # the kernels' size
    monkeypatch.setenv("HOTBIN_BACKEND", "cpu")
    _same(hotbin.histogram(a, 10), np.histogram(a, 10))
    assert asked[-1]
    del asked[:]
    monkeypatch.setenv("HOTBIN_BACKEND", "no-such-backend")
    with pytest.raises(ValueError, match="no-such-backend"):
        hotbin.histogram(a, 10)
    monkeypatch.delenv("HOTBIN_BACKEND")
    with pytest.raises(ValueError, match="no-such-backend"):
        hotbin.histogram(a, 10, backend="no-such-backend")
    assert not asked


def _edges_case(k, rnd):
    """A data type and an extent ``lo <= hi`` (scalars of it) of every kind NumPy's edges
    treat apart: equal ends, a few ulps, subnormal, wide enough to overflow, integers near
    their type's ends."""
    dt = [np.float64, np.int64, np.uint64, np.int8, np.uint16, np.int32, np.float32, np.float16][k % 8]
    if np.dtype(dt).kind == "f":
        mode = k % 6
        if mode == 0:
            lo = hi = rnd.gauss(0, 1) * 10.0 ** rnd.randint(-300, 300)
        elif mode == 1:
            lo = rnd.gauss(0, 1) * 10.0 ** rnd.randint(-30, 30)
            wide = lo + rnd.random() * 10.0 ** rnd.randint(-40, 30)
            hi = float(np.nextafter(lo, np.inf)) if rnd.random() < 0.5 else wide
        elif mode == 2:
            lo, hi = rnd.choice([0.0, -0.0, 1e-310, -5e-324]), rnd.choice([0.0, -0.0, 5e-324, 1e-300, 1.0])
        elif mode == 3:  # wide enough that a difference (or an edge) overflows
            big = float(np.finfo(dt).max) * rnd.choice([0.3, 0.6, 0.99])
            lo, hi = -big * rnd.random(), big * rnd.random()
        else:
            lo = rnd.gauss(0, 1) * 10.0 ** rnd.randint(-5, 20)
            hi = lo + rnd.random() * 10.0 ** rnd.randint(-10, 20)
        with np.errstate(all="ignore"):
            lo, hi = dt(lo), dt(hi)
        return dt, lo, hi
    info = np.iinfo(dt)
    lo = rnd.randint(int(info.min), int(info.max))
    hi = min(lo + rnd.randint(0, 10 ** rnd.randint(0, 20)), int(info.max))
    return dt, dt(lo), dt(hi)


def test_data_edges_are_numpys():
    """The edges of a range found in the data, their dtype, NumPy's "too many bins" error and
    its warnings, as ``numpy.histogram_bin_edges`` gives them, over extents of every kind."""
    rnd = random.Random(3)
    seen = 0
    for k in range(6000):
        dt, lo, hi = _edges_case(k, rnd)
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
            continue
        n = rnd.choice([1, 2, 3, 10, 11, 100, 256, 4096, rnd.randint(1, 50)])
        out = []
        for f in (lambda: np.histogram_bin_edges(np.empty(0, dt), n, (lo, hi)),
                  lambda: data_edges(np.dtype(dt), n, lo, hi)):
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                try:
                    r = f()
                except ValueError as exc:
                    r = str(exc)
            out.append((r, [str(w.message) for w in ws]))
        (want, wwarn), (got, gwarn) = out
        assert gwarn == wwarn, (dt, n, lo, hi)
        if isinstance(want, str):
            assert got == want, (dt, n, lo, hi)
            continue
        seen += 1
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (dt, n, lo, hi)
    assert seen > 3000


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16, np.int64, np.uint8])
def test_sorted_counts_follow_the_rule(dt):
    """Counting by sorting gives the reference rule's bins (:meth:`BinRule.index`) for edges of
    any spacing, repeated edges included, values on and beside every edge, NaN and the
    infinities; the last bin closed."""
    for k in range(40):
        n = int(RNG.integers(1, small.SORTED_EDGES))
        if np.dtype(dt).kind == "f":
            e = np.sort(RNG.normal(0, 3, n + 1)).astype(dt)
            if k % 3 == 0:
                e[n // 2:n // 2 + 2] = e[n // 2]  # a bin of zero width
            near = np.concatenate([e, np.nextafter(e, dt(np.inf)), np.nextafter(e, dt(-np.inf))])
            extra = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dt)
        else:
            e = np.sort(RNG.choice(256, min(n + 1, 256), replace=False)).astype(dt)
            near = np.concatenate([e, e + 1, e - 1]).astype(dt)
            extra = np.array([0, 255], dt)
        vals = RNG.permutation(np.concatenate([near, extra, np.abs(RNG.normal(0, 50, 300)).astype(dt)]))
        rule = histogram_rule(vals, e, None)
        idx = rule.index(vals)
        want = np.bincount(idx[idx >= 0], minlength=rule.nbins)
        got = small._sorted_counts(vals, rule.kernel_cmp)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, np.histogram(vals, e)[0])
