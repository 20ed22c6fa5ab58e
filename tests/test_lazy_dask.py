"""On Dask every array-returning function is lazy: a dask array back, nothing computed in the
call (a scheduler that raises proves it), and the values NumPy's or the luma rule's."""
import numpy as np
import pytest

import hotbin

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


def _refuse(*args, **kwargs):
    raise AssertionError("computed inside the call")


def lazily(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` under a scheduler that refuses to run: the result is a dask
    array and no graph ran; returned computed (synchronously)."""
    with dask.config.set(scheduler=_refuse):
        out = fn(*args, **kwargs)
    assert dask.is_dask_collection(out), type(out)
    return out.compute(scheduler="sync")


def _unknown(x, chunks):
    """``x`` as a dask array whose chunk sizes are unknown (nan), as ``d[d == d]`` makes."""
    d = da.from_array(x, chunks=chunks)
    return d[d == d]


# --- cumsum -----------------------------------------------------------------------------

@pytest.mark.parametrize("exclusive", [False, True])
def test_cumsum_of_unknown_chunk_sizes_is_lazy_and_numpys(exclusive):
    x = np.arange(1, 200, dtype=np.int32) % 17 - 8
    d = _unknown(x, 30)
    assert np.isnan(d.shape[0])
    got = lazily(hotbin.cumsum, d, exclusive=exclusive)
    want = np.cumsum(x)
    if exclusive:
        want = np.concatenate([[0], want[:-1]])
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype == np.int64


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_cumsum_of_dask_is_lazy_along_every_axis(axis, exclusive):
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, (23, 17)).astype(np.float64) / 4  # exact sums
    got = lazily(hotbin.cumsum, da.from_array(x, chunks=(7, 5)), axis, exclusive=exclusive)
    want = np.cumsum(x, axis=axis)
    if exclusive:
        ax = 0 if axis is None else axis
        want = np.concatenate([np.zeros_like(np.take(want, [0], axis=ax)),
                               np.take(want, np.arange(want.shape[ax] - 1), axis=ax)], axis=ax)
    np.testing.assert_array_equal(got, want)


def test_cumsum_of_dask_checks_its_arguments_now():
    d = da.from_array(np.arange(6), chunks=2)
    with pytest.raises(np.exceptions.AxisError):
        hotbin.cumsum(d, axis=1)
    with pytest.raises(TypeError, match="out"):
        hotbin.cumsum(d, out=np.empty(6))
    with pytest.raises(TypeError, match="a: cannot scan"):
        hotbin.cumsum(da.from_array(np.array(["a", "b"]), chunks=1))


# --- images -----------------------------------------------------------------------------

def _luma_levels(img):
    """The luma rule (DESIGN.md §4) in plain int64: uint8 levels, floats on the 8.8 grid."""
    q = np.asarray(img)
    if q.dtype.kind == "f":
        q = np.rint(np.clip(q.astype(np.float64), 0, 1) * 65280)
    q = q.astype(np.int64)
    if q.ndim == 2:
        return q
    return q[..., 0] if q.shape[-1] < 3 else (2126 * q[..., 0] + 7152 * q[..., 1] + 722 * q[..., 2]) // 10000


@pytest.mark.parametrize("shape,chunks", [((20, 30), (7, 11)), ((20, 30, 3), (6, 8, 1)),
                                          ((5, 9, 10, 4), (2, 4, 3, 2))])
def test_luminance_of_dask_is_lazy_and_the_luma_rule(shape, chunks):
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, shape).astype(np.uint8)
    got = lazily(hotbin.luminance, da.from_array(img, chunks=chunks))
    np.testing.assert_array_equal(got, _luma_levels(img))
    assert got.dtype == np.uint8
    f = img / 255.0
    got = lazily(hotbin.luminance, da.from_array(f, chunks=chunks))
    np.testing.assert_array_equal(got, _luma_levels(f) / 65280)
    assert got.dtype == np.float64


def test_luminance_histogram_of_dask_is_lazy_and_the_luma_rule():
    rng = np.random.default_rng(6)
    img = rng.integers(0, 256, (4, 10, 12, 3)).astype(np.uint8)
    got = lazily(hotbin.luminance_histogram, da.from_array(img, chunks=(3, 4, 5, 3)), 32)
    want = np.stack([np.histogram(_luma_levels(i), 32, (0, 256))[0] for i in img])
    np.testing.assert_array_equal(got, want)


def _equalized_gray(img):
    """The equalization rule of one uint8 gray image, written from the CDF of its levels."""
    cdf = np.cumsum(np.bincount(img.ravel(), minlength=256))
    n, cmin = cdf[-1], cdf[cdf > 0].min()
    lut = ((cdf - cmin) * 510 + (n - cmin)) // (2 * (n - cmin))
    return np.clip(lut, 0, 255)[img].astype(np.uint8)


def test_equalize_of_dask_is_lazy_and_the_cdf_rule():
    rng = np.random.default_rng(7)
    gray = rng.integers(40, 120, (30, 41)).astype(np.uint8)
    got = lazily(hotbin.equalize, da.from_array(gray, chunks=(8, 9)))
    np.testing.assert_array_equal(got, _equalized_gray(gray))
    batch = rng.integers(0, 200, (3, 12, 14, 1)).astype(np.uint8)
    got = lazily(hotbin.equalize, da.from_array(batch, chunks=(2, 5, 6, 1)))
    np.testing.assert_array_equal(got, np.stack([_equalized_gray(b[..., 0])[..., None] for b in batch]))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_equalize_of_dask_colour_is_the_in_memory_one(dtype):
    rng = np.random.default_rng(8)
    img = rng.integers(0, 256, (2, 13, 17, 4)).astype(np.uint8)
    img = img if dtype == np.uint8 else (img / 255).astype(dtype)
    got = lazily(hotbin.equalize, da.from_array(img, chunks=(1, 5, 6, 2)))
    want = hotbin.equalize(img)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[..., 3], img[..., 3])  # alpha kept


# --- histogram(axis=) ----------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_axis_histogram_of_dask_is_lazy_and_numpys(axis):
    rng = np.random.default_rng(9)
    x = rng.random((11, 13, 7))
    hist, edges = hotbin.histogram(x, 8, (0, 1), axis=axis)
    with dask.config.set(scheduler=_refuse):
        lazy, lazy_edges = hotbin.histogram(da.from_array(x, chunks=(4, 5, 3)), 8, (0, 1), axis=axis)
    assert dask.is_dask_collection(lazy)
    got = lazy.compute(scheduler="sync")
    want = np.apply_along_axis(lambda v: np.histogram(v, 8, (0, 1))[0], axis, x)
    np.testing.assert_array_equal(got, np.moveaxis(want, axis, -1))
    np.testing.assert_array_equal(np.asarray(lazy_edges), np.histogram_bin_edges(x, 8, (0, 1)))
    np.testing.assert_array_equal(hist, got)


def test_channel_histograms_and_percentiles_of_dask_are_lazy():
    rng = np.random.default_rng(10)
    img = rng.integers(0, 256, (3, 9, 11, 3)).astype(np.uint8)
    d = da.from_array(img, chunks=(2, 4, 5, 1))
    got = lazily(hotbin.channel_histograms, d, 16)
    want = np.stack([[np.histogram(i[..., k], 16, (0, 256))[0] for k in range(3)] for i in img])
    np.testing.assert_array_equal(got, want)
    got = lazily(hotbin.percentiles, d, [0, 50, 100])
    lv = _luma_levels(img).reshape(3, -1)
    want = np.percentile(lv, [0, 50, 100], axis=1, method="inverted_cdf").T
    np.testing.assert_array_equal(got, want)


def test_image_functions_ask_the_one_routing(monkeypatch):
    """The backend of an image function is plan.executor's choice (``$HOTBIN_BACKEND`` here):
    an unknown name fails there, named as the backend."""
    monkeypatch.setenv("HOTBIN_BACKEND", "nonesuch")
    img = np.zeros((4, 4, 3), np.uint8)
    for fn in (hotbin.luminance, hotbin.equalize, hotbin.luminance_histogram, hotbin.cumsum):
        with pytest.raises(ValueError, match="backend: unknown backend 'nonesuch'"):
            fn(img)
