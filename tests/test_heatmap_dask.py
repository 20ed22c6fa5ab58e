"""Dask heatmaps (issue #13): closed ranges from the data, percentile clipping and point counts
beside weighted sums give the same heatmap as in memory under any chunking."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import hotbin  # noqa: E402


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _same(a, b, exact=True):
    assert (a.x_range, a.y_range, a.x_closed, a.y_closed, a.dropped) == \
        (b.x_range, b.y_range, b.x_closed, b.y_closed, b.dropped)
    np.testing.assert_array_equal(a.points, b.points)
    if exact:
        np.testing.assert_array_equal(a.counts, b.counts)
    else:
        np.testing.assert_allclose(a.counts, b.counts, rtol=1e-12, atol=1e-9)


def _gps(rng, n=12_000):
    x = np.round(rng.normal(2.35, 0.02, n), 4)
    y = np.round(rng.normal(48.86, 0.015, n), 4)
    x[:4] = 170.0  # outliers
    y[4:6] = np.nan
    return x, y, rng.normal(size=n)


@pytest.mark.parametrize("kw", [dict(), dict(clip=(0.5, 99.5)), dict(x_range=(2.3, 2.4), clip=(1, 99)),
                                dict(closed=False)])
def test_dask_cells_equal_in_memory(rng, kw):
    x, y, _ = _gps(rng)
    ref = hotbin.heatmap(x, y, width=37, height=23, **kw)
    for chunk in (1000, 4999):
        with dask.config.set(split_every=3):
            hm = hotbin.heatmap(da.from_array(x, chunks=chunk), da.from_array(y, chunks=chunk),
                                width=37, height=23, **kw)
        _same(hm, ref)


def test_dask_whole_numbers_equal_numpy():
    v = np.arange(101, dtype=np.float64)
    hm = hotbin.heatmap(da.from_array(v, chunks=17), da.from_array(v, chunks=17), width=100, height=100)
    ref, _, _ = np.histogram2d(v, v, bins=100)
    np.testing.assert_array_equal(hm.counts, ref.astype(np.int64))
    assert hm.x_range == (0.0, 100.0) and hm.x_closed and hm.dropped == 0


@pytest.mark.parametrize("deterministic", [False, True])
def test_dask_weighted_keeps_point_counts(rng, deterministic):
    x, y, w = _gps(rng)
    w[(x > 2.35) & (x < 2.36)] = 0.0  # cells of zero sum that hold points
    kw = dict(width=20, height=20, clip=(1, 99), deterministic=deterministic)
    ref = hotbin.heatmap(x, y, w, **kw)
    hm = hotbin.heatmap(da.from_array(x, chunks=2500), da.from_array(y, chunks=2500),
                        da.from_array(w, chunks=2500), **kw)
    _same(hm, ref, exact=deterministic)
    assert hm.points.dtype == np.int64 and int(hm.points.sum()) + hm.dropped == x.size
    assert np.any((hm.counts == 0) & (hm.points > 0))
    np.testing.assert_array_equal(hm.shade()[..., 3] == 255, hm.points > 0)
