"""deterministic=True: fixed-point sums, bitwise reproducible, with a tested error bound."""
import math
from fractions import Fraction

import numpy as np
import pytest

import hotbin
from hotbin.core import fixedpoint
from hotbin.backend.cpu import chunks as cpu_chunks
from conftest import to_numpy


def exact_bin_sums(idx, w, nbins):
    sums = [Fraction(0)] * nbins
    for i, v in zip(idx, w):
        if i >= 0:
            sums[i] += Fraction(float(v))
    return sums


def test_split_reconstructs_rounded_weight(rng):
    w = np.concatenate([rng.standard_normal(1000) * 1e3, [0.0, -0.0, 1e-300, -2.5, 2.5, 1.5]])
    s = fixedpoint.scale_for(fixedpoint.max_abs(w), w.size)
    hi, lo = fixedpoint.split(w, s)
    assert ((lo >= 0) & (lo <= 1 << 32)).all()
    for wi, h, l in zip(w, hi, lo):
        q = Fraction(int(h) * (1 << 32) + int(l), 1 << s) if s >= 0 else None
        assert abs(q - Fraction(float(wi))) <= Fraction(1, 1 << (s + 1))


def test_bitwise_across_orders_and_chunkings(backend, rng, monkeypatch):
    a = rng.standard_normal(200_001)
    w = rng.standard_normal(a.size) * np.exp(rng.standard_normal(a.size) * 5)
    ref, _ = hotbin.histogram(a, 64, (-3, 3), weights=w, deterministic=True, backend=backend)
    ref = to_numpy(ref)
    perm = rng.permutation(a.size)
    got, _ = hotbin.histogram(a[perm], 64, (-3, 3), weights=w[perm], deterministic=True, backend=backend)
    assert to_numpy(got).tobytes() == ref.tobytes()
    # the same data through small chunks and a different layout
    monkeypatch.setattr(cpu_chunks, "CALL", 4099)
    got, _ = hotbin.histogram(a[::-1], 64, (-3, 3), weights=w[::-1], deterministic=True, backend=backend)
    assert to_numpy(got).tobytes() == ref.tobytes()
    # and equal to the cpu backend's words
    cref, _ = hotbin.histogram(a, 64, (-3, 3), weights=w, deterministic=True, backend="cpu")
    assert to_numpy(cref).tobytes() == ref.tobytes()


def test_error_bound(backend, rng):
    a = rng.random(20_000)
    w = rng.standard_normal(a.size) * 10
    h, e = hotbin.histogram(a, 8, (0, 1), weights=w, deterministic=True, backend=backend)
    h = to_numpy(h)
    rule_idx = np.minimum((a * 8).astype(int), 7)
    exact = exact_bin_sums(rule_idx, w, 8)
    s = fixedpoint.scale_for(fixedpoint.max_abs(w), w.size)
    counts = np.bincount(rule_idx, minlength=8)
    for got, ex, k in zip(h, exact, counts):
        bound = Fraction(int(k), 1 << (s + 1)) + Fraction(2 * math.ulp(abs(float(ex)) or 1e-300))
        assert abs(Fraction(float(got)) - ex) <= bound


def test_deterministic_2d(backend, rng):
    x, y = rng.random((2, 50_000))
    w = rng.standard_normal(x.size)
    H1 = to_numpy(hotbin.histogram2d(x, y, 9, weights=w, deterministic=True, backend=backend)[0])
    p = rng.permutation(x.size)
    H2 = to_numpy(hotbin.histogram2d(x[p], y[p], 9, weights=w[p], deterministic=True, backend=backend)[0])
    assert H1.tobytes() == H2.tobytes()
    np.testing.assert_allclose(H1, np.histogram2d(x, y, 9, weights=w)[0], rtol=1e-12, atol=1e-12)


def test_nonfinite_weights_rejected(backend):
    with pytest.raises(ValueError, match="finite"):
        hotbin.histogram([1.0, 2.0], 2, weights=[1.0, np.nan], deterministic=True, backend=backend)


def test_merge_is_exact_for_any_grouping(rng):
    parts = rng.integers(-(1 << 40), 1 << 40, (9, 2, 5))
    parts[:, 1] = rng.integers(0, 1 << 33, (9, 5))
    whole = fixedpoint.merge(parts)
    left = fixedpoint.merge(np.stack([fixedpoint.merge(parts[:4]), fixedpoint.merge(parts[4:])]))
    np.testing.assert_array_equal(whole, left)
    total = [sum(int(p[0, j]) * (1 << 32) + int(p[1, j]) for p in parts) for j in range(5)]
    assert [int(whole[0, j]) * (1 << 32) + int(whole[1, j]) for j in range(5)] == total


# --- the whole float64 range (issue #13 item 9) ------------------------------------------

EXTREMES = [5e-324 * 7919, 1e-310, 1e-300, 1e-150, 1e150, 1e200, 1e300]


def _exact_bound_ok(got, idx, w, nbins, s):
    exact = exact_bin_sums(idx, w, nbins)
    counts = np.bincount(idx, minlength=nbins)
    for g, ex, k in zip(got, exact, counts):
        bound = Fraction(int(k), 1) * Fraction(2) ** -(s + 1) + Fraction(2 * math.ulp(abs(float(ex)) or 5e-324))
        assert abs(Fraction(float(g)) - ex) <= bound


@pytest.mark.parametrize("mag", EXTREMES[:3])  # the factor 2**(s-32) alone overflows
def test_extreme_weights_exact_and_bitwise(backend, rng, monkeypatch, mag):
    a = rng.random(30_011)
    w = rng.standard_normal(a.size) * mag
    w[:5] = [mag * 3.5, -mag * 3.5, 5e-324, -5e-324, 0.0]
    got, _ = hotbin.histogram(a, 6, (0, 1), weights=w, deterministic=True, backend=backend)
    got = to_numpy(got)
    assert np.isfinite(got).all()
    s = fixedpoint.scale_for(fixedpoint.max_abs(w), w.size)
    _exact_bound_ok(got, np.minimum((a * 6).astype(int), 5), w, 6, s)
    p = rng.permutation(a.size)
    monkeypatch.setattr(cpu_chunks, "CALL", 4099)
    again, _ = hotbin.histogram(a[p], 6, (0, 1), weights=w[p], deterministic=True, backend=backend)
    assert to_numpy(again).tobytes() == got.tobytes()
    cref, _ = hotbin.histogram(a, 6, (0, 1), weights=w, deterministic=True, backend="cpu")
    assert to_numpy(cref).tobytes() == got.tobytes()


@pytest.mark.parametrize("mag", EXTREMES)
def test_extreme_hist_objects_merge_bitwise(backend, rng, mag):
    x, y = rng.random((2, 9001))
    w = rng.standard_normal(x.size) * mag
    bounds = (fixedpoint.max_abs(w), x.size)
    cuts = [0, 1000, 5003, x.size]

    def build(i, dims):
        if dims == 1:
            return hotbin.hist(x[i], 7, (0, 1), w[i], backend=backend, deterministic=True, bounds=bounds)
        return hotbin.hist2d(x[i], y[i], 4, [(0, 1), (0, 1)], w[i], backend=backend,
                             deterministic=True, bounds=bounds)

    for dims in (1, 2):
        whole = build(slice(None), dims)
        merged = sum(build(slice(lo, hi), dims) for lo, hi in zip(cuts, cuts[1:]))
        assert merged == whole
        assert merged.values(flow=True).tobytes() == whole.values(flow=True).tobytes()
        assert merged.variances(flow=True).tobytes() == whole.variances(flow=True).tobytes()
        assert np.isfinite(whole.values()).all()
    h = build(slice(None), 1)
    idx = np.minimum((x * 7).astype(int), 6)
    _exact_bound_ok(h.values(), idx, w, 7, fixedpoint.scale_for(*bounds))
    if mag > 1e154:  # the sums of squares exceed float64
        assert np.isposinf(h.variances()).all()
    else:
        ref_var = np.histogram(x, 7, (0, 1), weights=w * w)[0]
        np.testing.assert_allclose(h.variances(), ref_var, rtol=1e-12, atol=0)


def test_huge_weights_are_not_called_infinite():
    h = hotbin.hist([0.5, 1.5], 2, (0, 2), weights=[1e200, -3e200], deterministic=True)
    np.testing.assert_array_equal(h.values(), [1e200, -3e200])
    assert np.isposinf(h.variances()).all()
    with pytest.raises(ValueError, match="finite"):
        hotbin.hist([0.5], 1, (0, 1), weights=[np.inf], deterministic=True)


@pytest.mark.parametrize("w", [5e-324, -5e-324, 2.5e-320, 1e-300, -3e-200, 1e200, -1.7e308])
def test_split_and_combine_over_the_whole_range(w):
    s = fixedpoint.scale_for(abs(w), 3)
    hi, lo = fixedpoint.split(np.array([w]), s)
    q = int(hi[0]) * (1 << 32) + int(lo[0])
    scale = Fraction(2) ** s
    assert abs(Fraction(q) - Fraction(w) * scale) <= Fraction(1, 2)
    assert q != 0
    words = np.array([[hi[0] * 3], [lo[0] * 3]])
    assert fixedpoint.combine(words, s)[0] == 3 * w
    f1, f2 = fixedpoint.factors(s)
    assert np.isfinite(f1) and np.isfinite(f2) and f1 * f2 != 0 or s - 32 < -1022


@pytest.mark.parametrize("case", ["hit", "miss", "nan"])
def test_guessed_scale_is_confirmed(case, rng, monkeypatch):
    """plan.weighted with a backend that guesses the scale from a sample (the cuda backend's
    sample_max_abs, here a stand-in on the cpu backend): a right guess, a sample that missed
    the largest weight (the sums run again at the whole data's scale) and a NaN the sample
    missed all give what the scale from the whole data gives, bit for bit, or its error."""
    from hotbin.backend import load

    x = rng.random(50_000)
    w = rng.random(x.size)
    if case == "miss":
        w[1] = 1e6
    if case == "nan":
        w[1] = np.nan
    runs = []
    cpu = load("cpu").module
    real = cpu.histogram

    def counted(*args, **kw):
        runs.append(args[3].check if len(args) > 3 else None)
        return real(*args, **kw)

    monkeypatch.setattr(cpu, "histogram", counted)
    if case == "nan":
        monkeypatch.setattr(cpu, "sample_max_abs", lambda w: float(np.abs(w[::7]).max()), raising=False)
        with pytest.raises(ValueError, match="finite"):
            hotbin.histogram(x, 32, (0, 1), weights=w, deterministic=True, backend="cpu")
        return
    ref, _ = hotbin.histogram(x, 32, (0, 1), weights=w, deterministic=True, backend="cpu")
    assert runs == [False]
    monkeypatch.setattr(cpu, "sample_max_abs", lambda w: float(np.abs(w[::7]).max()), raising=False)
    got, _ = hotbin.histogram(x, 32, (0, 1), weights=w, deterministic=True, backend="cpu")
    assert got.tobytes() == ref.tobytes()
    # a guess, confirmed by one pass over the weights (the cpu backend reports none), then
    # (miss) the sums again at the scale of the whole data
    assert runs == [False, True] + ([False] if case == "miss" else [])


def _exact_var(v):
    """The variance (ddof 0) of the float64 values ``v`` as written, rounded once."""
    fr = [Fraction(float(t)) for t in v]
    m = sum(fr) / len(fr)
    return float(sum((t - m) ** 2 for t in fr) / len(fr))


#: hard data, ``(mean, sd)``: means far above the spread, and huge weights
_HARD = [(1e9, 1e-3), (1e15, 1.0), (-1e12, 1e-2), (3.0, 1e-16), (1e150, 1e140)]


@pytest.mark.parametrize("agg", ["var", "std"])
@pytest.mark.parametrize("mean, sd", _HARD)
def test_deterministic_var_is_accurate_and_bitwise(backend, rng, agg, mean, sd):
    """deterministic var / std of values far from zero: within a few ulp of the exact variance
    of the data as written (np.var itself is off in the fifth digit at 1e15), bitwise the same
    for any point order, Dask chunking and backend. Three cells: the mean, its negative and ten times
    it, spreads of sd, sd / 2 and 2 sd (the quantum follows the largest spread in the call)."""
    per = 400
    cells = [m + rng.normal(0, d, per) for m, d in ((mean, sd), (-mean, sd / 2), (10 * mean, 2 * sd))]
    w = np.concatenate(cells)
    x = np.repeat(np.arange(3) + 0.5, per)
    kw = dict(agg=agg, width=3, height=1, x_range=(0, 3), y_range=(-1, 1), deterministic=True)
    hm = hotbin.heatmap(x, np.zeros(w.size), w, backend=backend, **kw)
    got = to_numpy(hm.values)[0]
    for c, v in enumerate(cells):
        want = _exact_var(v)
        want = math.sqrt(want) if agg == "std" else want
        assert abs(got[c] - want) <= 4 * np.spacing(want), (c, got[c], want)
    perm = rng.permutation(w.size)
    again = hotbin.heatmap(x[perm], np.zeros(w.size), w[perm], backend=backend, **kw)
    assert to_numpy(again.values).tobytes() == to_numpy(hm.values).tobytes()
    da = pytest.importorskip("dask.array")
    lazy = hotbin.heatmap(da.from_array(x[perm], chunks=333), da.zeros(w.size, chunks=333),
                          da.from_array(w[perm], chunks=333), backend=backend, **kw)
    assert np.asarray(lazy.values).tobytes() == to_numpy(hm.values).tobytes()
    cpu = hotbin.heatmap(x, np.zeros(w.size), w, backend="cpu", **kw)  # and across backends
    assert to_numpy(cpu.values).tobytes() == to_numpy(hm.values).tobytes()


def test_deterministic_var_of_huge_weights(backend, rng):
    """Weights of 1e200 (finite) give a variance, not an error: 0 for a constant cell, inf
    where the exact variance is beyond the float64 range (two values 1e185 apart), and a
    cell of values near 1 beside a constant cell of 1e200 keeps its own exact variance."""
    near_one = rng.normal(0.3, 1, 60)
    want = _exact_var(near_one)
    kw = dict(width=2, height=1, x_range=(0, 2), y_range=(-1, 1), deterministic=True, backend=backend)
    for agg in ("var", "std"):
        w = np.concatenate([np.full(50, 1e200), [1e200, 1e200 + 1e185]])
        x = np.concatenate([np.full(50, 0.5), [1.5, 1.5]])
        hm = hotbin.heatmap(x, np.zeros(w.size), w, agg=agg, **kw)
        assert to_numpy(hm.values)[0].tolist() == [0.0, np.inf]
        assert to_numpy(hm.means)[0].tolist() == [1e200, 1e200 + 0.5e185]
        w = np.concatenate([np.full(50, 1e200), near_one])
        x = np.concatenate([np.full(50, 0.5), np.full(60, 1.5)])
        got = to_numpy(hotbin.heatmap(x, np.zeros(w.size), w, agg=agg, **kw).values)[0]
        want_c = math.sqrt(want) if agg == "std" else want
        assert got[0] == 0.0 and abs(got[1] - want_c) <= 4 * np.spacing(want_c)
