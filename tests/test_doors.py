"""Every front door counts the same data alike, as NumPy does.

One 1-D data set goes through ``histogram``, ``hist``, ``histogram2d`` (the other axis one
bin), ``histogramdd`` and a one-row ``heatmap`` (closed, as NumPy's last bin is), on every
backend and as Dask arrays, and each answer is compared with NumPy's. The data sets are the
hard ones: values on and next to the edges, NaN and infinities, float32, and int64 beyond
2**53 under a range whose integer ends float64 does not hold.

Where NumPy's own functions agree, so do the five doors. NumPy itself splits in two places,
and each door is held to its own NumPy function there: ``numpy.histogram`` compares integer
range ends exactly and bins float32 data over a range of Python floats by float32 edges, while
``numpy.histogram2d`` and ``numpy.histogramdd`` compare in float64 edges (``searchsorted``);
a heatmap's ranges and cells are float64 (:func:`hotbin.heatmap`), as histogramdd's.
"""
import numpy as np
import pytest

import hotbin

from conftest import to_numpy

BIG = 2**53


def _edges_and_neighbours(edges, dtype):
    """Every edge, in ``dtype``, and the floats on either side of it."""
    e = np.asarray(edges).astype(dtype)
    return np.concatenate([e, np.nextafter(e, dtype(-np.inf)), np.nextafter(e, dtype(np.inf))])


def _cases():
    rng = np.random.default_rng(20261204)
    f64 = np.concatenate([rng.uniform(-0.2, 1.2, 500), _edges_and_neighbours(np.linspace(0, 1, 6), np.float64),
                          [np.nan, np.inf, -np.inf, np.nan]])
    f32 = np.concatenate([rng.uniform(-1, 3, 500).astype(np.float32),
                          _edges_and_neighbours(np.linspace(np.float32(-1), np.float32(3), 8), np.float32),
                          np.array([np.nan, np.inf, -np.inf], np.float32)])
    f32_finite = f32[np.isfinite(f32)]
    ints = rng.integers(-50, 50, 400)
    big = np.arange(BIG - 8, BIG + 24, dtype=np.int64)
    return [
        pytest.param(f64, 5, (0.0, 1.0), id="f64-edges-nan-inf"),
        pytest.param(f32, 7, (-1.0, 3.0), id="f32-edges-nan-inf"),
        pytest.param(f32, 7, (np.float32(-1), np.float32(3)), id="f32-f32-range"),
        pytest.param(f32_finite, 9, None, id="f32-data-range"),
        pytest.param(ints, 10, None, id="int-data-range"),
        pytest.param(ints, 6, (-20, 20), id="int-range"),
        pytest.param(big, 3, None, id="int64-2**53-data-range"),
        pytest.param(big, 4, (BIG - 4, BIG + 12), id="int64-2**53-range-representable"),
        pytest.param(big, 3, (BIG + 1, BIG + 9), id="int64-2**53-range-between-floats"),
    ]


def _numpy(a, bins, r, w):
    """What each door must give, from NumPy: ``(histogram, histogramdd, heatmap)`` counts."""
    one, _ = np.histogram(a, bins, r, weights=w)
    dd, _ = np.histogramdd([a], bins, None if r is None else [r], weights=w)
    if r is None:  # a heatmap's range from the data: the finite values' extent
        fin = a[np.isfinite(a)] if a.dtype.kind == "f" else a
        r = (fin.min(), fin.max())
    x = a.astype(np.float64)  # a heatmap's cells and ranges are float64
    keep = np.isfinite(x)
    hm, _ = np.histogram(x[keep], bins, (float(r[0]), float(r[1])), weights=None if w is None else w[keep])
    return one, dd, hm


def _between_floats(a, r):
    return a.dtype.kind == "i" and r is not None and any(int(float(v)) != v for v in r)


@pytest.mark.parametrize("weighted", [False, True], ids=["counts", "weights"])
@pytest.mark.parametrize("a, bins, r", _cases())
def test_every_door_counts_alike(backend, a, bins, r, weighted):
    w = np.arange(a.size, dtype=np.float64) % 7 - 2 if weighted else None  # sums exact in any order
    one, dd, hm = _numpy(a, bins, r, w)
    got = {
        "histogram": to_numpy(hotbin.histogram(a, bins, r, weights=w, backend=backend)[0]),
        "hist": hotbin.hist(a, bins, r, weights=w, backend=backend).values(),
        "histogram2d": to_numpy(hotbin.histogram2d(a, np.zeros(a.size), [bins, 1],
                                                   None if r is None else [r, (-1, 1)], weights=w,
                                                   backend=backend)[0])[:, 0],
        "histogramdd": to_numpy(hotbin.histogramdd([a], bins, None if r is None else [r], weights=w,
                                                   backend=backend)[0]),
        "heatmap": to_numpy(hotbin.heatmap(a, np.zeros(a.size), w, width=bins, height=1, x_range=r,
                                           y_range=(-1, 1), closed=True, backend=backend).counts)[0],
    }
    want = {"histogram": one, "hist": one, "histogram2d": dd, "histogramdd": dd, "heatmap": hm}
    for door, v in got.items():
        assert np.asarray(v).tolist() == np.asarray(want[door]).tolist(), door
    if _between_floats(a, r):  # NumPy's own split, kept: the histogram's exact ends keep fewer
        assert got["histogram"].tolist() != got["histogramdd"].tolist()


@pytest.mark.parametrize("a, bins, r", _cases())
def test_every_door_counts_dask_alike(a, bins, r):
    da = pytest.importorskip("dask.array")
    if r is None and a.dtype.kind == "f" and not np.isfinite(a).all():
        pytest.skip("NumPy refuses a range from data with NaN or inf")
    one, dd, hm = _numpy(a, bins, r, None)
    d = da.from_array(a, chunks=97)
    got = {
        "histogram": hotbin.histogram(d, bins, r)[0].compute(),
        "hist": hotbin.hist(d, bins, r).values(),
        "histogram2d": hotbin.histogram2d(d, da.zeros(a.size, chunks=97), [bins, 1],
                                          None if r is None else [r, (-1, 1)])[0].compute()[:, 0],
        "heatmap": np.asarray(hotbin.heatmap(d, da.zeros(a.size, chunks=97), width=bins, height=1,
                                             x_range=r, y_range=(-1, 1), closed=True).counts)[0],
    }
    want = {"histogram": one, "hist": one, "histogram2d": dd, "heatmap": hm}
    for door, v in got.items():
        assert np.asarray(v).tolist() == np.asarray(want[door]).tolist(), door


@pytest.mark.parametrize("a, bins, r", _cases())
def test_bin_edges_of_dask_are_lazy_and_numpys(a, bins, r):
    """``histogram_bin_edges`` of a dask array: a lazy dask array of NumPy's edges (values and
    dtype), the range from the data found when it is computed."""
    da = pytest.importorskip("dask.array")
    if r is None and a.dtype.kind == "f" and not np.isfinite(a).all():
        with pytest.raises(ValueError, match="not finite"):
            hotbin.histogram_bin_edges(da.from_array(a, chunks=97), bins, r).compute()
        return
    want = np.histogram_bin_edges(a, bins, r)
    got = hotbin.histogram_bin_edges(da.from_array(a, chunks=97), bins, r)
    assert isinstance(got, da.Array)
    got = got.compute()
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    mem = hotbin.histogram_bin_edges(a, bins, r)
    assert mem.dtype == want.dtype and mem.tobytes() == want.tobytes()
