"""deterministic=True: fixed-point sums, bitwise reproducible, with a tested error bound."""
import math
from fractions import Fraction

import numpy as np
import pytest

import hotbin
from hotbin import fixedpoint
from hotbin.backend import cpu
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
    monkeypatch.setattr(cpu, "CALL", 4099)
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
