"""Heatmap aggregations (issue #16): agg= and by= against NumPy cell by cell, against
datashader's reductions, merge invariance and determinism, on every executor.

The oracle bins with NumPy alone (``searchsorted`` on the heatmap's edges) and
reduces each cell's weights with NumPy's own functions.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hotbin
from hotbin.aggregate import AGGS as ALL_AGGS
from hotbin.order_stats import ORDER_AGGS

AGGS = tuple(a for a in ALL_AGGS if a not in ORDER_AGGS)  # order statistics: tests/test_order_stats.py
VALUE_AGGS = ("sum", "mean", "min", "max", "std", "var")
REDUCE = {"sum": np.sum, "mean": np.mean, "min": np.min, "max": np.max, "std": np.std, "var": np.var}


def _cell_index(v, edges, closed):
    i = np.searchsorted(edges, v, side="right") - 1
    n = edges.size - 1
    if closed:
        i = np.where(v == edges[-1], n - 1, i)
    ok = np.isfinite(v) & (i >= 0) & (i < n)
    return np.where(ok, i, -1)


def oracle(hm, x, y, w=None, codes=None, ncat=None):
    """(values, counts) of ``hm.agg`` computed with NumPy from the raw points."""
    ix = _cell_index(np.asarray(x, np.float64), hm.x_edges, hm.x_closed)
    iy = _cell_index(np.asarray(y, np.float64), hm.y_edges, hm.y_closed)
    inside = (ix >= 0) & (iy >= 0)
    cats = [None] if codes is None else range(ncat)
    values = np.full((len(cats), hm.height, hm.width), np.nan)
    counts = np.zeros((hm.height, hm.width), np.int64)
    for k, cat in enumerate(cats):
        sel = inside if cat is None else inside & (codes == cat)
        for r in range(hm.height):
            for c in range(hm.width):
                m = sel & (iy == r) & (ix == c)
                if hm.agg in ("count", "any"):
                    v = m.sum() if w is None else w[m].sum()
                    values[k, r, c] = float(v > 0) if hm.agg == "any" else v
                    counts[r, c] += m.sum()
                    continue
                vals = w[m][~np.isnan(w[m])]
                counts[r, c] += vals.size
                if vals.size:
                    values[k, r, c] = REDUCE[hm.agg](vals.astype(np.float64))
    return (values[0] if codes is None else values), counts


def points(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 5, n)
    y = rng.normal(1, 2, n)
    w = rng.normal(10, 3, n)
    w[rng.random(n) < 0.05] = np.nan
    x[:20] = np.nan  # dropped
    return x, y, w


@pytest.mark.parametrize("agg", AGGS)
def test_every_agg_matches_numpy_cell_by_cell(agg):
    x, y, w = points()
    ww = None if agg in ("count", "any") else w
    hm = hotbin.heatmap(x, y, ww, agg=agg, width=7, height=5)
    want, counts = oracle(hm, x, y, ww)
    np.testing.assert_allclose(hm.values, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert hm.values.dtype == np.float64
    np.testing.assert_array_equal(hm.counts if agg in ("count", "any") else hm.value_counts, counts)
    assert hm.counts.sum() + hm.skipped + hm.dropped == x.size
    if agg in VALUE_AGGS:
        inside = x.size - hm.dropped
        assert hm.skipped == inside - counts.sum() > 0  # the NaN weights in a cell


@pytest.mark.parametrize("share", [0.15, 0.3, 0.5])
@pytest.mark.parametrize("agg", ["count", "sum", "mean", "min", "max", "std"])
def test_a_share_in_one_cell_matches_numpy(agg, share):
    """A share of the points in one cell, in random order among uniform ones: too few repeats
    in a row for the first test of a hot cell (the cpu kernels then count that cell's points
    and keep it in registers), every aggregation still NumPy's cell by cell."""
    rng = np.random.default_rng(int(share * 100))
    n = 8192
    x, y, w = rng.uniform(0, 1, n), rng.uniform(0, 1, n), rng.normal(10, 3, n)
    hot = rng.random(n) < share
    x[hot], y[hot] = 0.51, 0.26
    w[rng.random(n) < 0.02] = np.nan
    x[:5] = 2.0  # outside
    ww = None if agg == "count" else w
    hm = hotbin.heatmap(x, y, ww, agg=agg, width=32, height=32, x_range=(0, 1), y_range=(0, 1))
    want, counts = oracle(hm, x, y, ww)
    np.testing.assert_allclose(hm.values, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(hm.counts if agg == "count" else hm.value_counts, counts)


@pytest.mark.parametrize("agg", ["count", "mean", "max", "var"])
def test_by_categories_matches_numpy(agg):
    x, y, w = points(seed=2)
    rng = np.random.default_rng(3)
    codes = rng.integers(-1, 4, x.size)  # -1: no category
    ww = None if agg == "count" else w
    hm = hotbin.heatmap(x, y, ww, agg=agg, by=codes, width=4, height=3)
    assert hm.categories == (0, 1, 2, 3)
    assert hm.values.shape == (4, 3, 4)
    want, counts = oracle(hm, x, y, ww, codes, 4)
    np.testing.assert_allclose(hm.values, want, rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(hm.counts, counts)
    assert hm.counts.sum() + hm.skipped + hm.dropped == x.size


def test_by_accepts_pandas_polars_pyarrow_and_strings():
    pd = pytest.importorskip("pandas")
    x, y, w = points(500, seed=4)
    labels = np.array(["bus", "car", "bike"])[np.random.default_rng(5).integers(0, 3, x.size)]
    ref = hotbin.heatmap(x, y, by=labels, width=5, height=4)
    assert ref.categories == ("bike", "bus", "car")  # sorted, as numpy.unique
    cat = pd.Categorical(labels, categories=["bike", "bus", "car"])
    for by in (cat, pd.Series(cat), pd.Series(labels)):
        hm = hotbin.heatmap(x, y, by=by, width=5, height=4)
        assert hm.categories == ref.categories
        np.testing.assert_array_equal(hm.values, ref.values)
    pa = pytest.importorskip("pyarrow")
    hm = hotbin.heatmap(x, y, by=pa.array(labels).dictionary_encode(), width=5, height=4)
    order = [hm.categories.index(c) for c in ref.categories]
    np.testing.assert_array_equal(hm.values[order], ref.values)
    pl = pytest.importorskip("polars")
    hm = hotbin.heatmap(x, y, by=pl.Series(labels, dtype=pl.Categorical), width=5, height=4)
    order = [hm.categories.index(c) for c in ref.categories]
    np.testing.assert_array_equal(hm.values[order], ref.values)


def test_data_frames_by_column_name():
    pd = pytest.importorskip("pandas")
    x, y, w = points(400, seed=6)
    df = pd.DataFrame({"lon": x, "lat": y, "fare": w})
    hm = hotbin.heatmap("lon", "lat", "fare", data=df, agg="mean", width=6, height=3)
    ref = hotbin.heatmap(x, y, w, agg="mean", width=6, height=3)
    np.testing.assert_array_equal(hm.values, ref.values)
    assert (hm.x_name, hm.y_name) == ("lon", "lat")
    pl = pytest.importorskip("polars")
    hm = hotbin.heatmap(x="lon", y="lat", weights="fare", data=pl.from_pandas(df), agg="max",
                        width=6, height=3)
    np.testing.assert_array_equal(hm.values, hotbin.heatmap(x, y, w, agg="max", width=6, height=3).values)
    pa = pytest.importorskip("pyarrow")
    hm = hotbin.heatmap("lon", "lat", data=pa.Table.from_pandas(df), width=6, height=3)
    np.testing.assert_array_equal(hm.counts, hotbin.heatmap(x, y, width=6, height=3).counts)
    with pytest.raises(ValueError, match="no column 'nope'"):
        hotbin.heatmap("nope", "lat", data=df)
    with pytest.raises(TypeError, match="no data= table"):
        hotbin.heatmap("lon", "lat")


def test_errors_name_the_argument():
    x, y, w = points(100)
    with pytest.raises(ValueError, match="agg: expected one of"):
        hotbin.heatmap(x, y, w, agg="mode")
    with pytest.raises(ValueError, match="needs weights"):
        hotbin.heatmap(x, y, agg="mean")
    with pytest.raises(ValueError, match="one category per point"):
        hotbin.heatmap(x, y, by=np.zeros(3, int))
    with pytest.raises(ValueError, match="categories"):
        hotbin.heatmap(x, y, by=np.full(x.size, 1 << 20))


def test_hot_cell_and_extremes_are_exact():
    n = 10000
    x = np.full(n, 0.5)
    y = np.full(n, 0.5)
    w = np.random.default_rng(7).normal(size=n)
    w[17] = 1e300
    w[18] = -np.inf
    for agg, want in (("max", 1e300), ("min", -np.inf)):
        hm = hotbin.heatmap(x, y, w, agg=agg, width=3, height=3, x_range=(0, 1), y_range=(0, 1))
        assert hm.values[1, 1] == want
        assert np.isnan(hm.values[0, 0]) and hm.value_counts[1, 1] == n


def test_var_is_two_pass_accurate():
    """A large mean and a small spread: a one-pass sum of squares would cancel to garbage."""
    rng = np.random.default_rng(8)
    w = 1e9 + rng.normal(0, 1, 5000)
    x = rng.random(5000)
    hm = hotbin.heatmap(x, np.zeros(5000), w, agg="var", width=2, height=1, x_range=(0, 1),
                        y_range=(-1, 1))
    for c in range(2):
        m = (x >= 0.5) == bool(c)
        assert hm.values[0, c] == pytest.approx(np.var(w[m]), rel=1e-9)


@pytest.mark.parametrize("agg", ["sum", "mean", "std", "var"])
def test_deterministic_is_bitwise_the_same_for_any_order_and_threads(agg):
    from hotbin.backend.cpu import parallel

    x, y, w = points(20000, seed=9)
    kw = dict(agg=agg, width=9, height=7, x_range=(-3, 5), y_range=(-5, 7), deterministic=True)
    ref = hotbin.heatmap(x, y, w, **kw)
    perm = np.random.default_rng(10).permutation(x.size)
    threads = parallel.set_threads(1)
    try:
        one = hotbin.heatmap(x[perm], y[perm], w[perm], **kw)
    finally:
        parallel.set_threads(threads)
    np.testing.assert_array_equal(one.values, ref.values)
    merged = hotbin.heatmap(x[:7000], y[:7000], w[:7000], **kw) + hotbin.heatmap(
        x[7000:], y[7000:], w[7000:], **kw)
    np.testing.assert_allclose(merged.values, ref.values, rtol=1e-12, equal_nan=True)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 400), st.sampled_from(AGGS), st.integers(1, 4))
def test_merge_of_any_split_equals_the_whole(cut, agg, ncat):
    x, y, w = points(400, seed=11)
    codes = np.arange(x.size) % ncat
    ww = None if agg in ("count", "any") else w
    kw = dict(agg=agg, width=3, height=2, x_range=(-3, 5), y_range=(-5, 7), by=None)
    whole = hotbin.heatmap(x, y, ww, **{**kw, "by": codes})
    a = hotbin.heatmap(x[:cut], y[:cut], None if ww is None else ww[:cut], **{**kw, "by": codes[:cut]})
    b = hotbin.heatmap(x[cut:], y[cut:], None if ww is None else ww[cut:], **{**kw, "by": codes[cut:]})
    m = a + b
    np.testing.assert_allclose(m.values, whole.values, rtol=1e-10, atol=1e-9, equal_nan=True)
    np.testing.assert_array_equal(m.counts, whole.counts)
    assert (m.skipped, m.dropped) == (whole.skipped, whole.dropped)


@pytest.mark.parametrize("agg", ["count", "mean", "min", "std"])
def test_dask_equals_memory_and_deterministic_is_bitwise(agg):
    da = pytest.importorskip("dask.array")
    x, y, w = points(6000, seed=12)
    codes = np.arange(x.size) % 3
    ww = None if agg == "count" else w
    kw = dict(agg=agg, width=5, height=4, deterministic=True)
    ref = hotbin.heatmap(x, y, ww, by=codes, **kw)
    d = [da.from_array(a, chunks=1300) for a in (x, y, codes)]
    hm = hotbin.heatmap(d[0], d[1], None if ww is None else da.from_array(ww, chunks=1300), by=d[2], **kw)
    np.testing.assert_array_equal(hm.values, ref.values)
    assert (hm.skipped, hm.dropped, hm.categories) == (ref.skipped, ref.dropped, ref.categories)


def test_wgpu_and_cpu_agree_when_present():
    if "wgpu" not in hotbin.backends():
        pytest.skip("no wgpu adapter")
    x, y, w = points(2000, seed=13)
    for agg in ("count", "max", "mean"):
        ww = None if agg == "count" else w
        a = hotbin.heatmap(x, y, ww, agg=agg, by=np.arange(x.size) % 2, width=6, height=6, backend="cpu")
        b = hotbin.heatmap(x, y, ww, agg=agg, by=np.arange(x.size) % 2, width=6, height=6, backend="wgpu")
        np.testing.assert_allclose(np.asarray(b.values), a.values, rtol=1e-12, equal_nan=True)


def test_shading_values_and_categories():
    x, y, w = points(2000, seed=14)
    hm = hotbin.heatmap(x, y, w, agg="mean", width=8, height=8)
    rgba = hm.shade()
    assert rgba.shape == (8, 8, 4)
    np.testing.assert_array_equal(rgba[..., 3] == 0, np.isnan(hm.values))
    cat = hotbin.heatmap(x, y, by=np.arange(x.size) % 3, width=8, height=8)
    rgba = cat.shade(color_key=["#ff0000", "#00ff00", "#0000ff"])
    only_red = (cat.values[0] > 0) & (cat.values[1:].sum(axis=0) == 0)
    assert only_red.any()
    assert (rgba[only_red][:, :3] == [255, 0, 0]).all()
    np.testing.assert_array_equal(rgba[..., 3] == 0, cat.counts == 0)
    with pytest.raises(ValueError, match="color_key"):
        cat.shade(color_key=["#ff0000"])


def test_projection_and_xarray():
    xr = pytest.importorskip("xarray")
    lon = np.array([-74.0, -73.9, 2.35])
    lat = np.array([40.7, 40.8, 48.85])
    hm = hotbin.heatmap(lon, lat, width=10, height=None, x_range=(-75, 3), y_range=(40, 50),
                        project="mercator")
    assert hm.crs == "EPSG:3857" and hm.counts.sum() == 3
    assert hm.x_range[0] == pytest.approx(-75 * np.pi / 180 * 6378137.0)
    assert hm.height == max(1, round(10 * (hm.y_range[1] - hm.y_range[0]) / (hm.x_range[1] - hm.x_range[0])))
    da = hm.to_xarray()
    assert isinstance(da, xr.DataArray) and da.attrs["crs"] == "EPSG:3857"
    assert "3857" in da.coords["spatial_ref"].attrs["crs_wkt"]


# --- datashader, the fairest judge of what a reduction means --------------------------------

@pytest.mark.parametrize("agg", ["count", "any", "sum", "mean", "min", "max", "std", "var"])
def test_against_datashader_reductions(agg):
    ds = pytest.importorskip("datashader")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(15)
    n, W, H = 20000, 40, 30
    # off the cell boundaries: centres of cells plus a jitter of under half a cell
    x = (rng.integers(0, W, n) + 0.5 + rng.uniform(-0.45, 0.45, n)) / W
    y = (rng.integers(0, H, n) + 0.5 + rng.uniform(-0.45, 0.45, n)) / H
    w = rng.normal(5, 2, n)
    df = pd.DataFrame({"x": x, "y": y, "w": w})
    cvs = ds.Canvas(plot_width=W, plot_height=H, x_range=(0, 1), y_range=(0, 1))
    red = {"count": ds.count(), "any": ds.any()}.get(agg) or getattr(ds, agg)("w")
    want = np.asarray(cvs.points(df, "x", "y", agg=red), np.float64)
    hm = hotbin.heatmap(x, y, None if agg in ("count", "any") else w, agg=agg, width=W, height=H,
                        x_range=(0, 1), y_range=(0, 1))
    if agg == "sum":  # datashader's sum of an empty pixel is NaN as ours
        pass
    np.testing.assert_allclose(hm.values, want, rtol=1e-9, atol=1e-12, equal_nan=True)


def test_against_datashader_count_cat():
    ds = pytest.importorskip("datashader")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(16)
    n, W, H = 20000, 32, 24
    x = (rng.integers(0, W, n) + 0.5 + rng.uniform(-0.45, 0.45, n)) / W
    y = (rng.integers(0, H, n) + 0.5 + rng.uniform(-0.45, 0.45, n)) / H
    cat = pd.Categorical(rng.choice(["a", "b", "c", "d"], n))
    df = pd.DataFrame({"x": x, "y": y, "c": cat})
    cvs = ds.Canvas(plot_width=W, plot_height=H, x_range=(0, 1), y_range=(0, 1))
    want = cvs.points(df, "x", "y", agg=ds.by("c", ds.count()))
    hm = hotbin.heatmap("x", "y", by="c", data=df, width=W, height=H, x_range=(0, 1), y_range=(0, 1))
    assert hm.categories == tuple(want.coords["c"].values)
    np.testing.assert_array_equal(hm.values, np.moveaxis(np.asarray(want), -1, 0))


def test_dask_dataframe_categorical_column():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    x, y, w = points(3000, seed=17)
    lab = np.array(["a", "b", "c"])[np.arange(x.size) % 3]
    df = pd.DataFrame({"x": x, "y": y, "w": w, "c": pd.Categorical(lab)})
    ref = hotbin.heatmap("x", "y", "w", data=df, agg="mean", by="c", width=4, height=4)
    hm = hotbin.heatmap("x", "y", "w", data=dd.from_pandas(df, npartitions=3), agg="mean", by="c",
                        width=4, height=4)
    assert hm.categories == ref.categories == ("a", "b", "c")
    np.testing.assert_allclose(hm.values, ref.values, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("agg", ["count", "sum", "min", "max", "var"])
def test_hot_runs_match_numpy(agg):
    """Mostly one cell (runs folded in registers) with the odd point elsewhere and NaN weights."""
    x, y, w = points(50000, seed=18)
    hot = np.random.default_rng(19).random(x.size) < 0.97
    x[hot], y[hot] = 0.31, 0.42
    ww = None if agg == "count" else w
    hm = hotbin.heatmap(x, y, ww, agg=agg, width=8, height=8, x_range=(-3, 5), y_range=(-5, 7))
    want, counts = oracle(hm, x, y, ww)
    np.testing.assert_allclose(hm.values, want, rtol=1e-9, equal_nan=True)
    np.testing.assert_array_equal(hm.counts if agg == "count" else hm.value_counts, counts)


# sorted rounds; a hot cell folded apart and the rest sorted; a hot region of one band, unsorted
@pytest.mark.parametrize("hot", [0.0, 0.6, "region"])
@pytest.mark.parametrize("agg", ["mean", "min", "max", "var"])
def test_banded_scatter_equals_plain(agg, hot, monkeypatch):
    """The cpu backend's banded scatter (grids larger than the caches) gives the plain loop's
    cells: forced here on a small grid, with several sorting rounds per thread. Counts and
    extremes bit for bit; sums to rounding (a hot cell's sum is reassociated, and the sort
    changes which block a point lands in)."""
    from hotbin.backend.cpu import partials as H

    x, y, w = points(60000, seed=20)
    rng = np.random.default_rng(21)
    spot = rng.random(x.size) < (0.95 if hot == "region" else hot)
    x[spot], y[spot] = 0.31, 0.42
    if hot == "region":  # one row, a few columns: cells of one band per category, none hot
        x[spot] = rng.uniform(0.3, 0.9, np.count_nonzero(spot))
    assert H._band_shift(H.MEAN, True, 37 * 29 * 4, 16, x.size) < 0  # plain by default
    codes = np.arange(x.size) % 3
    ww = w
    kw = dict(agg=agg, by=codes, width=37, height=29, x_range=(-3, 5), y_range=(-5, 7), backend="cpu")
    plain = hotbin.heatmap(x, y, ww, **kw)
    monkeypatch.setattr(H, "BAND_FROM", 0)
    monkeypatch.setattr(H, "BAND_MIN_POINTS", 0)
    monkeypatch.setattr(H, "BAND_BYTES", 256)
    monkeypatch.setattr(H, "BAND_POINTS", 7001)
    banded = hotbin.heatmap(x, y, ww, **kw)
    if agg in ("mean", "var"):
        np.testing.assert_allclose(banded.values, plain.values, rtol=1e-12)
    else:
        np.testing.assert_array_equal(banded.values, plain.values)
    np.testing.assert_array_equal(banded.counts, plain.counts)
    assert (banded.dropped, banded.skipped) == (plain.dropped, plain.skipped)


@pytest.mark.parametrize("share", [0.9, 1.0])  # hot blocks with other points; blocks all in it
@pytest.mark.parametrize("wdt", [np.float32, np.float64, np.int16])
@pytest.mark.parametrize("agg", ["min", "max", "mean"])
def test_hot_cell_values_every_dtype_and_signed_zeros(agg, wdt, share):
    """The hot cell's values folded apart (extremes compared as ordered integers): -0.0
    below +0.0, NaN skipped, infinities kept, integer weights, against NumPy bit for bit
    (extremes) and in the plain loop's order (means)."""
    rng = np.random.default_rng(int(share * 10) + len(agg))
    n = 3 * 2048 + 77
    x, y = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    hot = rng.random(n) < share
    x[hot], y[hot] = 0.55, 0.25
    if wdt == np.int16:
        w = rng.integers(-300, 300, n).astype(wdt)
    else:
        w = rng.choice(np.array([-0.0, 0.0, 1.5, -2.5, np.nan, np.inf, -np.inf], wdt), n)
        w[:2048] = rng.choice(np.array([-0.0, 0.0, np.nan], wdt), 2048)  # a block of zeros only
    hm = hotbin.heatmap(x, y, w, agg=agg, width=4, height=4, x_range=(0, 1), y_range=(0, 1),
                        backend="cpu")
    with np.errstate(invalid="ignore"):  # inf - inf in a mean
        want, counts = oracle(hm, x, y, w)
    np.testing.assert_array_equal(hm.value_counts, counts)
    if agg == "mean":
        np.testing.assert_allclose(hm.values, want, rtol=1e-12, equal_nan=True)
        return
    np.testing.assert_array_equal(hm.values, want)
    np.testing.assert_array_equal(np.signbit(hm.values), np.signbit(want))


@pytest.mark.parametrize("ncat", [5, 100])  # 100: more than the hot cell's local counters take
@pytest.mark.parametrize("share", [0.0, 0.9, 1.0])
def test_by_categories_in_a_hot_cell(share, ncat):
    """Counts by category with most or all points in one cell: codes outside [0, ncat) in no
    category, points outside the grid dropped, against NumPy."""
    rng = np.random.default_rng(int(share * 10))
    n = 5 * 2048 + 3
    x, y = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    hot = rng.random(n) < share
    x[hot], y[hot] = 0.7, 0.1
    x[:50] = 3.0  # outside
    codes = rng.integers(-1, ncat + 1, n).astype(np.int8)  # -1: no category
    codes[codes == ncat] = -1
    hm = hotbin.heatmap(x, y, by=codes, width=4, height=4, x_range=(0, 1), y_range=(0, 1), backend="cpu")
    want, _ = oracle(hm, x, y, codes=codes, ncat=hm.values.shape[0])
    np.testing.assert_array_equal(hm.values, want)
    assert hm.dropped == 50 and hm.skipped == np.count_nonzero(codes[50:] < 0)
    assert hm.counts.sum() + hm.dropped + hm.skipped == n


@pytest.mark.parametrize("cdt", [np.float32, np.float64])
@pytest.mark.parametrize("cell", [(1, 2), (3, 3)])  # inside; the last column and row (closed)
def test_blocks_in_one_cell_then_points_on_its_edges(cell, cdt):
    """After a block whose points all lie in one cell, the cpu kernels test the next block
    against that cell's edges instead of binning it: points exactly on the edges, a float
    just below the lower one, NaN and inf in such a block must land as NumPy puts them."""
    from hotbin.backend.cpu.scatter import BLOCK

    n = 4 * BLOCK + 5
    rng = np.random.default_rng(sum(cell))
    ex = np.linspace(0, 1, 5).astype(cdt)  # the ranges come from the data: closed, these edges
    ix, iy = cell
    x = np.full(n, (ex[ix] + ex[ix + 1]) / 2, cdt)
    y = np.full(n, (ex[iy] + ex[iy + 1]) / 2, cdt)
    x[0], y[0], x[1], y[1] = 0, 0, 1, 1  # the ranges
    odd = BLOCK + rng.choice(np.arange(2, BLOCK), 8, replace=False)  # the second block
    x[odd] = [ex[ix], ex[ix + 1], np.nextafter(ex[ix], cdt(-1)), np.nan, np.inf, ex[ix], ex[ix], ex[ix]]
    y[odd] = [ex[iy], ex[iy], ex[iy], ex[iy], ex[iy], ex[iy + 1], np.nextafter(ex[iy], cdt(-1)), -np.inf]
    x[3 * BLOCK + 9], y[4 * BLOCK] = ex[ix + 1], ex[iy + 1]  # later blocks: one point each
    w = rng.normal(size=n).astype(cdt)
    codes = rng.integers(0, 3, n).astype(np.int8)
    for agg, ww, by in (("count", None, None), ("count", None, codes), ("mean", w, None),
                        ("max", w, None)):
        hm = hotbin.heatmap(x, y, ww, agg=agg, by=by, width=4, height=4, backend="cpu")
        np.testing.assert_array_equal(hm.x_edges, ex.astype(np.float64))
        want, counts = oracle(hm, x, y, ww, codes=by, ncat=None if by is None else 3)
        np.testing.assert_array_equal(hm.counts if ww is None else hm.value_counts, counts)
        np.testing.assert_allclose(hm.values, want, rtol=1e-12, equal_nan=True)
        assert hm.dropped == 3


@pytest.mark.parametrize("banded", [False, True])
@pytest.mark.parametrize("agg", ["mean", "max"])
def test_partials_of_disjoint_cells_merge(agg, banded, monkeypatch):
    """Each thread's partial is merged only over the cells it wrote (its span): threads whose
    points lie in different rows, one of them all in one cell, against NumPy."""
    from hotbin.backend.cpu import partials as H
    from hotbin.backend.cpu.parallel import MIN_PER_THREAD, set_threads

    rng = np.random.default_rng(23)
    n = 5 * MIN_PER_THREAD
    x, y = rng.uniform(0, 1, n), rng.uniform(0, 0.4, n)  # thread 0: the lower rows
    half = n // 2
    y[half:] += 0.55  # thread 1: the upper rows
    y[half + 100:half + 9000], x[half + 100:half + 9000] = 0.8, 0.3  # blocks all in one cell
    w = rng.normal(size=n)
    if banded:
        monkeypatch.setattr(H, "BAND_FROM", 0)
        monkeypatch.setattr(H, "BAND_MIN_POINTS", 0)
        monkeypatch.setattr(H, "BAND_BYTES", 256)
        monkeypatch.setattr(H, "BAND_POINTS", 7001)
    old = set_threads(2)
    try:
        hm = hotbin.heatmap(x, y, w, agg=agg, width=16, height=16, x_range=(0, 1), y_range=(0, 1),
                            backend="cpu")
    finally:
        set_threads(old)
    want, counts = oracle(hm, x, y, w)
    np.testing.assert_array_equal(hm.value_counts, counts)
    np.testing.assert_allclose(hm.values, want, rtol=1e-9, atol=1e-12, equal_nan=True)


def test_read_only_and_integer_inputs_share_one_kernel():
    """numba compiles a kernel per argument type (10-16 s for a values kernel): read-only
    inputs (pandas' copy-on-write columns, memory maps) and integer weights must reuse the
    kernel of writable float64 inputs, not compile their own."""
    from hotbin.backend.cpu import scatter

    rng = np.random.default_rng(5)
    x, y = rng.random(5000), rng.random(5000)
    w = rng.normal(size=x.size)
    kw = dict(width=16, height=16, x_range=(0, 1), y_range=(0, 1), backend="cpu")
    want = hotbin.heatmap(x, y, w, agg="max", **kw)
    compiled = len(scatter.part_values.signatures)
    ro = [a.copy() for a in (x, y, w)]
    for a in ro:
        a.flags.writeable = False
    got = hotbin.heatmap(*ro, agg="max", **kw)
    np.testing.assert_array_equal(got.values, want.values)
    wi = (w * 100).astype(np.int16)
    got = hotbin.heatmap(x, y, wi, agg="max", **kw)
    np.testing.assert_array_equal(got.values, hotbin.heatmap(x, y, wi.astype(np.float64), agg="max", **kw).values)
    assert len(scatter.part_values.signatures) == compiled


@pytest.mark.parametrize("agg", ["count", "mean", "max"])
def test_kept_partials_start_clean(agg, rng):
    """The cpu backend keeps a call's per-thread partials for the next call of the same grid and
    zeroes them where the first wrote (its spans): uniform points, then all in one cell, then
    none in the grid, then a few at the far corners equal NumPy's every time."""
    n = 300_000
    kw = dict(width=64, height=48, x_range=(0, 1), y_range=(0, 1), backend="cpu")
    for x, y in [(rng.random(n), rng.random(n)), (np.full(n, 0.5), np.full(n, 0.5)),
                 (np.full(n, 7.0), np.full(n, 7.0)), (np.r_[np.zeros(n - 2), 0.9995, 0.999], np.r_[np.zeros(n - 2), 0.9995, 0.9995])]:
        w = rng.normal(size=n)
        h = hotbin.heatmap(x, y, None if agg == "count" else w, agg=agg, **kw)
        ref = np.histogram2d(y, x, bins=(48, 64), range=((0, 1), (0, 1)))[0]
        np.testing.assert_array_equal(h.counts, ref)
        if agg != "count":
            cell = (np.minimum((y * 48).astype(int), 47), np.minimum((x * 64).astype(int), 63))
            inside = (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)
            want = np.full((48, 64), np.nan if agg == "mean" else -np.inf)
            if agg == "mean":
                s = np.zeros((48, 64))
                np.add.at(s, (cell[0][inside], cell[1][inside]), w[inside])
                want = np.where(ref > 0, s / np.maximum(ref, 1), np.nan)
            else:
                np.maximum.at(want, (cell[0][inside], cell[1][inside]), w[inside])
                want[ref == 0] = np.nan
            np.testing.assert_allclose(h.values, want, rtol=1e-12, equal_nan=True)
