"""histogram / histogram2d against the NumPy oracle, on every backend (the `backend` fixture)."""
import numpy as np
import pytest

import hotbin
from hotbin import binning
from conftest import to_numpy

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.float16, np.float32, np.float64]


def oracle(a, bins=10, range=None, weights=None):
    """Exact-rule reference: NumPy's edges, BinRule.index, integer bincount."""
    a = np.asarray(a)
    rule = binning.histogram_rule(binning.check_data(a), bins, range,
                                  minmax=lambda v: (v.min(), v.max()))
    idx = rule.index(a.reshape(-1))
    keep = idx >= 0
    w = None if weights is None else np.asarray(weights).reshape(-1)[keep]
    if w is not None and w.dtype.kind in "biu":
        out = np.zeros(rule.nbins, np.int64)
        np.add.at(out, idx[keep], w.astype(np.int64))
        return out, rule.edges
    return np.bincount(idx[keep], weights=w, minlength=rule.nbins), rule.edges


def check(backend, a, bins=10, range=None, weights=None, numpy_too=True):
    h, e = hotbin.histogram(a, bins, range, weights=weights, backend=backend)
    h, e = to_numpy(h), to_numpy(e)
    ho, eo = oracle(a, bins, range, weights)
    np.testing.assert_array_equal(e, eo)
    assert e.dtype == eo.dtype
    if weights is None:
        assert h.dtype == np.int64
        np.testing.assert_array_equal(h, ho)
    else:
        np.testing.assert_allclose(h, ho, rtol=1e-12)
    if numpy_too:
        an = a.astype(np.uint8) if a.dtype == np.bool_ else a  # NumPy's own conversion, without its warning
        hn, en = np.histogram(an, bins, range, weights=weights)
        np.testing.assert_array_equal(e, en)
        assert e.dtype == en.dtype
        np.testing.assert_allclose(h, hn, rtol=1e-12)
    return h, e


def sample(dtype, n, rng):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(n) < 0.3
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, n, endpoint=True).astype(dt)
    return (rng.standard_normal(n) * 10).astype(dt)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtypes_auto_range(backend, dtype, rng):
    check(backend, sample(dtype, 20_001, rng), bins=37)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtypes_given_range_and_edges(backend, dtype, rng):
    a = sample(dtype, 5_000, rng)
    check(backend, a, bins=16, range=(-3.5, 200))
    check(backend, a, bins=[-50, -1, 0, 0.5, 3, 100, 1000])
    check(backend, a, bins=np.array([-7, 0, 2, 9, 400], np.int64))


def test_uint8_full_range(backend, rng):
    a = rng.integers(0, 256, 1 << 20, dtype=np.uint8)
    h, _ = check(backend, a, 256, (0, 256))
    assert h.sum() == a.size
    narrow = (rng.integers(0, 61, 1 << 18) + 100).astype(np.uint8)
    check(backend, narrow, 256, (0, 256))
    const = np.full(1 << 18, 201, np.uint8)
    h, _ = check(backend, const, 256, (0, 256))
    assert h[201] == const.size


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_on_edges_and_neighbours(backend, dtype):
    edges = np.histogram_bin_edges(np.empty(0, dtype), 7, (-1.3, 2.9))
    e = edges.astype(dtype)
    vals = np.concatenate([e, np.nextafter(e, dtype(-np.inf)), np.nextafter(e, dtype(np.inf))]).astype(dtype)
    check(backend, vals, 7, (-1.3, 2.9))
    # explicit float64 edges with float32 data compare in float64
    check(backend, vals, edges.tolist())


def test_nan_inf(backend):
    a = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, 0.5, np.nan, 1.0], np.float64)
    h, _ = check(backend, a, 4, (0, 1))
    assert h.sum() == 4
    check(backend, a, [-np.inf, 0, 1, np.inf])
    with pytest.raises(ValueError, match="not finite"):
        hotbin.histogram(a, 4, backend=backend)
    with pytest.raises(ValueError, match="not finite"):
        hotbin.histogram(np.array([1.0, np.nan]), 4, backend=backend)


def test_empty_outside_constant(backend):
    check(backend, np.array([], np.float64), 5)
    h, _ = check(backend, np.array([5.0, 6.0, -1.0]), 3, (0, 1))
    assert h.sum() == 0
    h, e = check(backend, np.full(1000, 3.25), 4)  # equal ends widened by 0.5
    assert e[0] == 2.75 and h.sum() == 1000


def test_nonuniform_and_repeated_edges(backend, rng):
    a = rng.random(10_000) * 4
    check(backend, a, [0, 0.1, 0.11, 2, 3.99, 4])
    check(backend, np.array([0, 1, 1, 1, 2, 2.0]), [0, 1, 1, 2, 2])


def test_tiny_bins_float32(backend, rng):
    # many bins over a narrow float32 range: guesses are off, the edges decide
    a = (1 + rng.random(50_000) * 1e-3).astype(np.float32)
    check(backend, a, 997, numpy_too=False)


def test_subnormal_range(backend):
    # nbins / width overflows: the guess must not become NaN (an out-of-bounds index)
    a = np.array([5e-324, 0.0, 5e-324])
    check(backend, a, 1)
    check(backend, a, [0.0, 5e-324])


def test_many_bins(backend, rng):
    a = rng.random(100_000)
    check(backend, a, 1 << 20, (0, 1))


def test_layouts_and_byte_order(backend, rng):
    base = rng.standard_normal((300, 400)).astype(np.float32)
    for a in (base[:, ::3], base.T, base[::-1], base.astype(">f4"), base.astype(">f8")[::2]):
        check(backend, a, 23, (-2, 2))
        w = rng.random(a.shape)
        check(backend, a, 23, (-2, 2), weights=w)


def test_weights_never_wrap(backend, rng):
    a = rng.integers(0, 4, 10_000).astype(np.uint8)
    w = np.full(a.shape, 100, np.int8)
    h, _ = hotbin.histogram(a, 4, (0, 4), weights=w, backend=backend)
    h = to_numpy(h)
    assert h.dtype == np.int64
    np.testing.assert_array_equal(h, np.bincount(a, minlength=4) * 100)
    wf = rng.random(a.shape).astype(np.float32)
    h, _ = hotbin.histogram(a, 4, (0, 4), weights=wf, backend=backend)
    assert to_numpy(h).dtype == np.float64
    np.testing.assert_allclose(to_numpy(h), np.bincount(a, wf.astype(np.float64), 4), rtol=1e-12)
    wc = wf + 1j * wf[::-1]
    h, _ = hotbin.histogram(a, 4, (0, 4), weights=wc, backend=backend)
    np.testing.assert_allclose(to_numpy(h), np.histogram(a, 4, (0, 4), weights=wc.astype(np.complex128))[0])


def test_density(backend, rng):
    a = rng.standard_normal(5000)
    for bins in (13, [-3, -1, 0, 0.5, 4]):
        h, _ = hotbin.histogram(a, bins, density=True, backend=backend)
        np.testing.assert_allclose(to_numpy(h), np.histogram(a, bins, density=True)[0], rtol=1e-14)


def test_string_bins(backend, rng):
    a = rng.standard_normal(3000)
    for rule in ("auto", "fd", "sturges", "sqrt"):
        check(backend, a, rule)


@pytest.mark.parametrize("bad, exc, match", [
    (dict(bins=0), ValueError, "positive"),
    (dict(bins=-3), ValueError, "positive"),
    (dict(bins=[3, 1, 2]), ValueError, "monotonically"),
    (dict(bins=[[1, 2]]), ValueError, "1d"),
    (dict(bins=5, range=(2, 1)), ValueError, "max must be larger"),
    (dict(bins=5, range=(0, np.inf)), ValueError, "not finite"),
    (dict(bins=5, range=(0, np.nan)), ValueError, "not finite"),
    (dict(bins=2.5), TypeError, None),
    (dict(weights=np.ones(3)), ValueError, "same shape"),
])
def test_invalid_arguments(backend, bad, exc, match):
    a = np.arange(10.0)
    kw = dict(bins=10, range=None, weights=None)
    kw.update(bad)
    with pytest.raises(exc, match=match):
        hotbin.histogram(a, **kw, backend=backend)
    with pytest.raises(exc):
        np.histogram(a, **kw)


@pytest.mark.parametrize("data", [np.array([1 + 2j]), np.array(["a", "b"]), np.array([object()])])
def test_invalid_dtypes(backend, data):
    with pytest.raises(TypeError, match="a:"):
        hotbin.histogram(data, backend=backend)


def test_unknown_backend(monkeypatch):
    with pytest.raises(ValueError, match="'nope'"):
        hotbin.histogram([1, 2], backend="nope")
    monkeypatch.setenv("HOTBIN_BACKEND", "nope2")
    with pytest.raises(ValueError, match="'nope2'"):
        hotbin.histogram([1, 2])
    monkeypatch.setenv("HOTBIN_BACKEND", "cpu")
    assert to_numpy(hotbin.histogram([1, 2], 2)[0]).tolist() == [1, 1]
    assert hotbin.backends()[0] == "cpu"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_2_to_24_bins(backend, dtype, rng):
    # the largest bin count of issue #8, on data spread over all of them
    a = rng.random(1 << 20).astype(dtype)
    h = to_numpy(hotbin.histogram(a, 1 << 24, (0, 1), backend=backend)[0])
    np.testing.assert_array_equal(h, np.histogram(a, 1 << 24, (0, 1))[0])
    assert h.sum() == a.size and h.dtype == np.int64


def test_huge_count_in_one_bin():
    # 2**32 + 3 samples (a stride-0 view: no memory) all in one bin: int64, no wrap
    n = (1 << 32) + 3
    a = np.broadcast_to(np.uint8(7), (n,))
    h, _ = hotbin.histogram(a, 4, (0, 8), backend="cpu")
    assert h.tolist() == [0, 0, 0, n]


# --- 2-D ------------------------------------------------------------------------

def check2d(backend, x, y, bins=10, range=None, weights=None, density=False):
    H, xe, ye = hotbin.histogram2d(x, y, bins, range, weights=weights, density=density, backend=backend)
    H, xe, ye = to_numpy(H), to_numpy(xe), to_numpy(ye)
    Hn, xen, yen = np.histogram2d(x, y, bins, range, weights=weights, density=density)
    np.testing.assert_array_equal(xe, xen)
    np.testing.assert_array_equal(ye, yen)
    assert xe.dtype == xen.dtype and ye.dtype == yen.dtype
    if weights is None and not density:
        assert H.dtype == np.int64
        np.testing.assert_array_equal(H, Hn)
    else:
        np.testing.assert_allclose(H, Hn, rtol=1e-12)
    return H


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
def test_2d_matches_numpy(backend, dtype, rng):
    x, y = sample(dtype, 20_000, rng), sample(dtype, 20_000, rng)
    check2d(backend, x, y, 17)
    check2d(backend, x, y, [5, 9], [[-10, 10], [0, 30]])
    check2d(backend, x, y, [[-5, 0, 1, 30], [0, 2, 50]])
    check2d(backend, x, y, 7, weights=rng.random(x.size))
    check2d(backend, x, y, 7, density=True)


def test_2d_closed_last_edge_and_dropped(backend):
    x = np.array([0.0, 1.0, 1.0, 0.5, np.nan, 2.0, -0.1])
    y = np.array([0.0, 1.0, 0.0, 0.5, 0.5, 0.5, 0.5])
    H = check2d(backend, x, y, 2, [[0, 1], [0, 1]])
    assert H.sum() == 4 and H[1, 1] == 2 and H[1, 0] == 1


def test_2d_validation(backend):
    with pytest.raises(ValueError, match="same length"):
        hotbin.histogram2d([1, 2], [1], backend=backend)
    with pytest.raises(ValueError, match="positive"):
        hotbin.histogram2d([1, 2], [1, 2], bins=0, backend=backend)
    with pytest.raises(ValueError, match="monotonically"):
        hotbin.histogram2d([1, 2], [1, 2], bins=[[1, 0], [0, 1]], backend=backend)


# --- batches: one histogram per slice (axis=) ---------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.float32, np.float64])
def test_axis_one_histogram_per_slice(backend, dtype, rng):
    a = sample(dtype, 37 * 501, rng).reshape(37, 501)
    for bins, range_ in ((16, (-3.5, 200)), (256, (0, 256)), ([-50, -1, 0, 3, 1000], None), (9, None)):
        h, e = hotbin.histogram(a, bins, range_, axis=-1, backend=backend)
        h = to_numpy(h)
        edges = np.histogram_bin_edges(a, bins, range_)
        np.testing.assert_array_equal(to_numpy(e), edges)
        want = np.stack([oracle(row, edges)[0] for row in a])
        assert h.shape == (37, edges.size - 1) and h.dtype == np.int64
        np.testing.assert_array_equal(h, want)
    h0 = to_numpy(hotbin.histogram(a, 7, (0, 100), axis=0, backend=backend)[0])
    np.testing.assert_array_equal(h0, np.stack([np.histogram(c, 7, (0, 100))[0] for c in a.T]))


def test_axis_batches_nan_empty_density_and_errors(backend, rng):
    imgs = rng.standard_normal((3, 4, 50))
    imgs[1, 2, :7] = np.nan
    h = to_numpy(hotbin.histogram(imgs, 11, (-2, 2), axis=2, backend=backend)[0])
    np.testing.assert_array_equal(h, np.apply_along_axis(lambda r: np.histogram(r, 11, (-2, 2))[0], 2, imgs))
    d = to_numpy(hotbin.histogram(imgs, 11, (-2, 2), axis=-1, density=True, backend=backend)[0])
    np.testing.assert_allclose(d[0, 0], np.histogram(imgs[0, 0], 11, (-2, 2), density=True)[0])
    assert to_numpy(hotbin.histogram(np.empty((0, 5)), 3, (0, 1), axis=1, backend=backend)[0]).shape == (0, 3)
    assert to_numpy(hotbin.histogram(np.empty((0, 5), np.uint8), 3, (0, 1), axis=1,
                                     backend=backend)[0]).shape == (0, 3)
    with pytest.raises(ValueError, match="axis"):
        hotbin.histogram(imgs, 3, axis=3, backend=backend)
    with pytest.raises(TypeError, match="axis"):
        hotbin.histogram(imgs, 3, axis=1.5, backend=backend)
    with pytest.raises(ValueError, match="weights"):
        hotbin.histogram(imgs, 3, weights=imgs, axis=0, backend=backend)
