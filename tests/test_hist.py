"""Histogram objects: UHI protocol, NumPy round trips, mergeable partials, pickling, plots."""
import pickle
import sys

import numpy as np
import pytest

import hotbin
from hotbin import Histogram
from hotbin.core import fixedpoint


def _bits(a):
    return np.ascontiguousarray(a).tobytes()


@pytest.fixture
def data(rng):
    a = rng.normal(size=5000)
    w = rng.exponential(size=5000) * np.where(rng.random(5000) < 0.2, -1.0, 1.0)
    return a, w


# --- UHI protocol -------------------------------------------------------------------

def test_uhi_protocol(data):
    plottable = pytest.importorskip("uhi.typing.plottable")
    a, w = data
    for h in (hotbin.hist(a), hotbin.hist(a, weights=w, deterministic=True), hotbin.hist2d(a, w)):
        assert isinstance(h, plottable.PlottableHistogram)
        assert h.kind == "COUNT"
        for ax in h.axes:
            assert isinstance(ax, plottable.PlottableAxisGeneric)
            assert isinstance(ax.traits, plottable.PlottableTraits)
            assert ax.traits.circular is False and ax.traits.discrete is False


def test_axis_is_a_sequence_of_intervals():
    h = hotbin.hist(np.arange(10), bins=5, xlabel="x")
    ax = h.axes[0]
    assert len(ax) == 5
    assert ax[0] == (0.0, 1.8)
    assert ax[-1] == ax[4] == (7.2, 9.0)
    assert list(ax) == [ax[i] for i in range(5)]
    with pytest.raises(IndexError):
        ax[5]
    assert ax.label == "x"
    np.testing.assert_array_equal(ax.edges, np.linspace(0, 9, 6))
    np.testing.assert_allclose(ax.centers, (ax.edges[1:] + ax.edges[:-1]) / 2)
    assert ax == hotbin.hist(np.arange(10.0), bins=5).axes[0]
    assert ax != hotbin.hist(np.arange(10.0), bins=4).axes[0]


# --- round trips against NumPy -------------------------------------------------------------

def test_counts_round_trip(backend, data):
    a, _ = data
    h = hotbin.hist(a, bins=30, backend=backend)
    ref, edges = np.histogram(a, bins=30)
    values, e = h.to_numpy()
    np.testing.assert_array_equal(values, ref)
    assert values.dtype == np.int64
    np.testing.assert_array_equal(e, edges)
    assert e.dtype == edges.dtype
    np.testing.assert_array_equal(h.counts(), ref)
    np.testing.assert_array_equal(h.variances(), ref)
    assert not h.weighted and not h.deterministic
    np.testing.assert_allclose(h.density(), np.histogram(a, bins=30, density=True)[0])


@pytest.mark.parametrize("deterministic", [False, True])
def test_weighted_round_trip(backend, data, deterministic):
    a, w = data
    h = hotbin.hist(a, bins=[-3, -1, 0, 0.5, 3], weights=w, backend=backend, deterministic=deterministic)
    np.testing.assert_allclose(h.values(), np.histogram(a, [-3, -1, 0, 0.5, 3], weights=w)[0], rtol=1e-12)
    sw2 = np.histogram(a, [-3, -1, 0, 0.5, 3], weights=w ** 2)[0]
    np.testing.assert_allclose(h.variances(), sw2, rtol=1e-12)
    np.testing.assert_allclose(h.counts(), h.values() ** 2 / sw2, rtol=1e-10)
    assert h.weighted and h.deterministic == deterministic
    if deterministic:
        ref, _ = hotbin.histogram(a, bins=[-3, -1, 0, 0.5, 3], weights=w, backend=backend, deterministic=True)
        assert _bits(h.values()) == _bits(ref)


def test_integer_weights_stay_exact():
    a = np.array([0, 1, 1, 2, 3])
    w = np.array([2**40, 1, 1, 5, -3], dtype=np.int64)
    h = hotbin.hist(a, bins=4, weights=w)
    assert h.values().dtype == np.int64
    np.testing.assert_array_equal(h.values(), [2**40, 2, 5, -3])
    np.testing.assert_array_equal(h.variances(), np.array([2.0**80, 2, 25, 9]))


def test_2d_round_trip(backend, data):
    x, y = data
    h = hotbin.hist2d(x, y, bins=(7, 5), backend=backend, xlabel="x", ylabel="y")
    ref, xe, ye = np.histogram2d(x, y, bins=(7, 5))
    values, hx, hy = h.to_numpy()
    np.testing.assert_array_equal(values, ref)
    np.testing.assert_array_equal(hx, xe)
    np.testing.assert_array_equal(hy, ye)
    assert h.shape == (7, 5) and h.ndim == 2
    assert [ax.label for ax in h.axes] == ["x", "y"]
    np.testing.assert_allclose(h.density(), np.histogram2d(x, y, bins=(7, 5), density=True)[0])
    hw = hotbin.hist2d(x, y, bins=4, weights=y, backend=backend)
    np.testing.assert_allclose(hw.values(), np.histogram2d(x, y, bins=4, weights=y)[0], rtol=1e-12)
    np.testing.assert_allclose(hw.variances(), np.histogram2d(x, y, bins=4, weights=y**2)[0], rtol=1e-12)


def test_from_arrays():
    h = Histogram(np.array([1, 2, 3]), [0, 1, 2, 3], label="mine")
    assert h.label == "mine" and h.values().tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="values"):
        Histogram(np.array([1, 2]), [0, 1, 2, 3])
    with pytest.raises(ValueError, match="variances"):
        Histogram(np.array([1, 2, 3]), [0, 1, 2, 3], variances=[1, 2])


def test_from_heatmap(data):
    x, y = data
    hm = hotbin.heatmap(x, y, width=9, height=7)
    h = Histogram.from_heatmap(hm, label="points")
    np.testing.assert_array_equal(h.values(), hm.counts.T)
    np.testing.assert_array_equal(h.axes[0].edges, hm.x_edges)
    np.testing.assert_array_equal(h.axes[1].edges, hm.y_edges)
    np.testing.assert_array_equal(h.variances(), hm.counts.T)
    assert h.label == "points" and [ax.label for ax in h.axes] == ["x", "y"]
    hw = Histogram.from_heatmap(hotbin.heatmap(x, y, np.abs(y), width=9, height=7))
    assert hw.weighted and hw.variances() is None and hw.counts() is None
    assert (hw + hw).variances() is None
    np.testing.assert_allclose((hw + hw).values(), 2 * hw.values())


def test_series_name_labels_the_axis():
    pd = pytest.importorskip("pandas")
    s = pd.Series(np.arange(20.0), name="speed")
    assert hotbin.hist(s).axes[0].label == "speed"


def test_bad_input():
    with pytest.raises(TypeError, match="complex"):
        hotbin.hist(np.arange(3.0), weights=np.ones(3, complex))
    with pytest.raises(ValueError, match="weights"):
        hotbin.hist(np.arange(3.0), weights=np.ones(4))
    with pytest.raises(ValueError, match="bins"):
        hotbin.hist(np.arange(3.0), bins=0)
    with pytest.raises(ValueError, match="bounds"):
        hotbin.hist(np.arange(3.0), weights=np.ones(3), bounds=(1.0, 3))
    with pytest.raises(ValueError, match="bounds"):
        hotbin.hist(np.arange(3.0), weights=np.full(3, 2.0), deterministic=True, bounds=(1.0, 3))
    with pytest.raises(ValueError, match="finite"):
        hotbin.hist(np.arange(3.0), weights=np.array([1, np.nan, 2]), deterministic=True)


# --- mergeable partials ------------------------------------------------------------------

def _split(n, k, rng):
    cuts = np.sort(rng.choice(np.arange(1, n), k - 1, replace=False))
    return np.split(np.arange(n), cuts)


def test_merge_counts_equals_one_histogram(backend, data, rng):
    a, _ = data
    parts = [hotbin.hist(a[i], bins=20, range=(-4, 4), backend=backend) for i in _split(a.size, 5, rng)]
    whole = hotbin.hist(a, bins=20, range=(-4, 4), backend=backend)
    merged = sum(parts)
    np.testing.assert_array_equal(merged.values(), whole.values())
    np.testing.assert_array_equal((parts[0] + parts[1]).values(), parts[1].values() + parts[0].values())
    np.testing.assert_array_equal(merged.axes[0].edges, whole.axes[0].edges)


def test_merge_weighted_close(data, rng):
    a, w = data
    idx = _split(a.size, 3, rng)
    merged = sum(hotbin.hist(a[i], range=(-4, 4), weights=w[i]) for i in idx)
    whole = hotbin.hist(a, range=(-4, 4), weights=w)
    np.testing.assert_allclose(merged.values(), whole.values(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(merged.variances(), whole.variances(), rtol=1e-12)


@pytest.mark.parametrize("dims", [1, 2])
def test_deterministic_merge_is_bitwise(backend, data, rng, dims):
    a, w = data
    bounds = (fixedpoint.max_abs(w), a.size)

    def build(i):
        if dims == 1:
            return hotbin.hist(a[i], 25, (-4, 4), w[i], backend=backend, deterministic=True, bounds=bounds)
        return hotbin.hist2d(a[i], w[i], 6, [(-4, 4), (-5, 5)], w[i], backend=backend,
                             deterministic=True, bounds=bounds)

    whole = build(np.arange(a.size))
    for k in (2, 3, 7):
        parts = [build(i) for i in _split(a.size, k, rng)]
        for merged in (sum(parts), sum(parts[::-1]), parts[0] + sum(parts[1:])):
            assert _bits(merged.values()) == _bits(whole.values())
            assert _bits(merged.variances()) == _bits(whole.variances())
    # without bounds, the whole histogram's default scale is the in-memory API's
    if dims == 1:
        ref, _ = hotbin.histogram(a, 25, (-4, 4), weights=w, backend=backend, deterministic=True)
        assert _bits(whole.values()) == _bits(ref)


def test_merge_refuses_mismatches(data):
    a, w = data
    h = hotbin.hist(a, bins=10, range=(-4, 4))
    with pytest.raises(ValueError, match="different edges"):
        h + hotbin.hist(a, bins=11, range=(-4, 4))
    with pytest.raises(ValueError, match="different edges"):
        h + hotbin.hist(a, bins=10, range=(-4, 5))
    with pytest.raises(ValueError, match="different edges"):
        h + hotbin.hist(a.astype(np.float32), bins=10, range=(-4, 4))
    with pytest.raises(ValueError, match="2-D"):
        h + hotbin.hist2d(a, w)
    with pytest.raises(ValueError, match="weighted"):
        h + hotbin.hist(a, bins=10, range=(-4, 4), weights=w)
    hw = hotbin.hist(a, bins=10, range=(-4, 4), weights=w)
    hd = hotbin.hist(a, bins=10, range=(-4, 4), weights=w, deterministic=True)
    with pytest.raises(ValueError, match="deterministic"):
        hw + hd
    with pytest.raises(ValueError, match="scale"):
        hd + hotbin.hist(a[:10], bins=10, range=(-4, 4), weights=w[:10], deterministic=True)
    with pytest.raises(TypeError):
        h + 1


# --- pickling --------------------------------------------------------------------------------

def test_pickle_round_trip(data):
    a, w = data
    bounds = (fixedpoint.max_abs(w), a.size)
    h1 = hotbin.hist(a[:1000], 12, (-4, 4), w[:1000], deterministic=True, bounds=bounds, label="L")
    h2 = hotbin.hist(a[1000:], 12, (-4, 4), w[1000:], deterministic=True, bounds=bounds)
    back = pickle.loads(pickle.dumps(h1))
    assert isinstance(back, Histogram) and back.label == "L" and back.deterministic
    assert _bits(back.values()) == _bits(h1.values())
    assert _bits(back.variances()) == _bits(h1.variances())
    assert _bits((back + h2).values()) == _bits((h1 + h2).values())
    h2d = hotbin.hist2d(a, w, bins=3)
    back = pickle.loads(pickle.dumps(h2d))
    np.testing.assert_array_equal(back.values(), h2d.values())
    assert back.axes == h2d.axes


# --- plots ------------------------------------------------------------------------------------

@pytest.fixture
def figure():
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3), dpi=50)
    FigureCanvasAgg(fig)
    return fig


def _render(fig, tmp_path):
    import matplotlib.image

    path = tmp_path / "plot.png"
    fig.savefig(path)
    img = matplotlib.image.imread(path)
    assert img.shape == (150, 200, 4)
    return img


def test_plot_1d_png(figure, tmp_path, data):
    ax = figure.subplots()
    h = hotbin.hist(data[0], bins=20, label="a", xlabel="value")
    assert hotbin.hist(data[0]).plot(ax=ax, color="red") is ax
    assert ax.get_xlabel() == ""
    h.plot(ax=ax, color="red")
    assert ax.get_xlabel() == "value"
    img = _render(figure, tmp_path)
    red = (img[..., 0] - img[..., 1] > 0.3) & (img[..., 0] - img[..., 2] > 0.3)
    assert red.sum() > 50  # the outline is drawn


def test_plot_2d_png(figure, tmp_path, data):
    ax = figure.subplots()
    hotbin.hist2d(*data, bins=8, label="points").plot(ax=ax, cmap="viridis")
    assert len(figure.axes) == 2  # the image and its colorbar
    assert ax.get_title() == "points"
    img = _render(figure, tmp_path)
    assert (img[..., :3].std(axis=2) > 0.1).sum() > 500  # coloured cells, not a blank page


def test_plot_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ModuleNotFoundError, match=r'pip install "hotbin\[plot\]"'):
        hotbin.hist(np.arange(5)).plot()


# --- flow bins, ==, fill, boost-histogram / hist conversion (issue #13 item 4) ---------------

def _flow_ref(v, edges, w=None):
    """Reference flow histogram: [under, bins..., over]; NaN to overflow; last bin closed."""
    v = np.asarray(v, np.float64)
    e = np.asarray(edges, np.float64)
    idx = np.searchsorted(e, v, side="right")  # 0: under, len(e): over
    idx[v == e[-1]] = e.size - 1
    idx[np.isnan(v)] = e.size
    return np.bincount(idx, weights=w, minlength=e.size + 1)


@pytest.fixture
def messy(rng):
    a = rng.normal(size=3000) * 3
    a[:40] = [np.nan, np.inf, -np.inf, -4.0, 4.0, 0.0] * 6 + [np.nan] * 4
    w = rng.exponential(size=a.size)
    return a, w


@pytest.mark.parametrize("deterministic", [False, True])
def test_flow_bins_1d(backend, messy, deterministic):
    a, w = messy
    h = hotbin.hist(a, bins=8, range=(-4, 4), backend=backend)
    e = h.axes[0].edges
    np.testing.assert_array_equal(h.values(flow=True), _flow_ref(a, e))
    np.testing.assert_array_equal(h.counts(flow=True), _flow_ref(a, e))
    np.testing.assert_array_equal(h.values(), np.histogram(a, 8, (-4, 4))[0])
    assert h.values(flow=True).sum() == a.size
    hw = hotbin.hist(a, 8, (-4, 4), weights=w, backend=backend, deterministic=deterministic)
    np.testing.assert_allclose(hw.values(flow=True), _flow_ref(a, e, w), rtol=1e-12)
    np.testing.assert_allclose(hw.variances(flow=True), _flow_ref(a, e, w * w), rtol=1e-12)
    assert hw.counts(flow=True).shape == (10,)


def test_nan_and_flow_as_boost_histogram(messy):
    bh = pytest.importorskip("boost_histogram")
    a, _ = messy
    a = a[a != 4.0]  # boost's last bin is open at the top, NumPy's (and hotbin's) closed
    h = hotbin.hist(a, bins=[-4, -1, 0, 2, 4])
    ref = bh.Histogram(bh.axis.Variable([-4, -1, 0, 2, 4]))
    ref.fill(a)
    np.testing.assert_array_equal(h.values(flow=True), ref.values(flow=True))


def test_flow_bins_2d(backend, messy, rng):
    x, w = messy
    y = rng.permutation(x)
    h = hotbin.hist2d(x, y, bins=(5, 3), range=[(-3, 3), (-2, 2)], weights=w, backend=backend)
    assert h.values(flow=True).shape == (7, 5) and h.values().shape == (5, 3)
    ex, ey = (ax.edges for ax in h.axes)

    def code(v, e):
        i = np.searchsorted(e, v, side="right")
        i[v == e[-1]] = e.size - 1
        i[np.isnan(v)] = e.size
        return i

    ref = np.zeros((7, 5))
    np.add.at(ref, (code(x, ex), code(y, ey)), w)
    np.testing.assert_allclose(h.values(flow=True), ref, rtol=1e-12)
    np.testing.assert_allclose(h.values(), np.histogram2d(x, y, (5, 3), [(-3, 3), (-2, 2)], weights=w)[0],
                               rtol=1e-12)
    hc = hotbin.hist2d(x, y, bins=4, range=[(-3, 3), (-2, 2)], backend=backend)
    assert hc.values(flow=True).sum() == x.size


def test_integer_axis_flow():
    a = np.array([-5, 0, 3, 7, 2**62, np.iinfo(np.int64).max], np.int64)
    h = hotbin.hist(a, bins=np.array([0, 3, 7], np.int64))
    np.testing.assert_array_equal(h.values(flow=True), [1, 1, 2, 2])
    top = hotbin.hist(a, bins=np.array([0, np.iinfo(np.int64).max], np.int64))
    np.testing.assert_array_equal(top.values(flow=True), [1, 5, 0])


def test_add_keeps_values_outside_the_range(backend, messy):
    a, w = messy
    h = hotbin.hist(a[40:1000], bins=6, backend=backend)  # range from this part's (finite) data
    lo, hi = h.axes[0].edges[[0, -1]]
    b = np.concatenate([a[:40], a[1000:]])  # NaN, inf and values outside h's range
    assert (b < lo).any() and (b > hi).any()
    total = h + hotbin.hist(b, bins=h.axes[0].edges, backend=backend)
    np.testing.assert_array_equal(total.values(flow=True), _flow_ref(a, h.axes[0].edges))
    assert total.values(flow=True).sum() == a.size


def test_equality_compares_contents(messy):
    a, w = messy
    h = hotbin.hist(a, 10, (-4, 4), weights=w)
    assert h == hotbin.hist(a, 10, (-4, 4), weights=w)
    assert h != hotbin.hist(a[1:], 10, (-4, 4), weights=w[1:])
    assert h != hotbin.hist(a, 10, (-4, 4.5), weights=w)
    outside = np.append(a, 100.0)  # differs only in the overflow bin
    assert hotbin.hist(a, 10, (-4, 4)) != hotbin.hist(outside, 10, (-4, 4))
    assert hotbin.hist(a, 10, (-4, 4)).values().tolist() == hotbin.hist(outside, 10, (-4, 4)).values().tolist()
    assert h != hotbin.hist(a, 10, (-4, 4))
    assert (h == 1) is False


@pytest.mark.parametrize("dims", [1, 2])
def test_fill_is_incremental(backend, messy, dims):
    a, w = messy
    b = a[::-1].copy()
    if dims == 1:
        h = hotbin.hist(a[:500], 9, (-3, 3), backend=backend)
        h.fill(a[500:], backend=backend)
        assert h == hotbin.hist(a, 9, (-3, 3), backend=backend)
        hw = hotbin.hist(a[:500], 9, (-3, 3), weights=w[:500], backend=backend)
        assert hw.fill(a[500:], weight=w[500:], backend=backend) is hw
        np.testing.assert_allclose(hw.values(flow=True), hotbin.hist(a, 9, (-3, 3), weights=w).values(flow=True),
                                   rtol=1e-12)
    else:
        h = hotbin.hist2d(a[:500], b[:500], 4, [(-3, 3), (-2, 2)], backend=backend)
        h.fill(a[500:], b[500:], backend=backend)
        assert h == hotbin.hist2d(a, b, 4, [(-3, 3), (-2, 2)], backend=backend)
    with pytest.raises(TypeError, match="fill"):
        h.fill(a, a, a)
    with pytest.raises(ValueError, match="weight"):
        h.fill(*([a] * dims), weight=w)


def test_fill_deterministic_is_bitwise(backend, messy):
    a, w = messy
    bounds = (fixedpoint.max_abs(w), a.size)
    h = hotbin.hist(a[:700], 9, (-3, 3), w[:700], backend=backend, deterministic=True, bounds=bounds)
    h.fill(a[700:2000], weight=w[700:2000], backend=backend)
    h.fill(a[2000:], weight=w[2000:], backend=backend)
    whole = hotbin.hist(a, 9, (-3, 3), w, backend=backend, deterministic=True, bounds=bounds)
    assert h == whole
    assert _bits(h.values(flow=True)) == _bits(whole.values(flow=True))
    small = hotbin.hist(a[:10], 9, (-3, 3), w[:10], deterministic=True)
    with pytest.raises(ValueError, match="bounds"):
        small.fill(a, weight=w * 1e6)


def test_to_boost_histogram_and_hist(messy):
    bh = pytest.importorskip("boost_histogram")
    hist_mod = pytest.importorskip("hist")
    a, w = messy
    for h in (hotbin.hist(a, 7, (-3, 3), xlabel="x"),
              hotbin.hist(a, 7, (-3, 3), weights=w, deterministic=True),
              hotbin.hist2d(a, a[::-1], (3, 4), [(-3, 3), (-2, 2)], weights=w)):
        for cls in (bh.Histogram, hist_mod.Hist):
            b = cls(h)
            assert isinstance(b, cls)
            np.testing.assert_array_equal(b.values(flow=True), h.values(flow=True))
            np.testing.assert_array_equal(b.variances(flow=True), h.variances(flow=True))
            for ax, bax in zip(h.axes, b.axes):
                np.testing.assert_array_equal(bax.edges, ax.edges)
            assert (b.storage_type is bh.storage.Weight) == h.weighted
    assert bh.Histogram(hotbin.hist(a, 7, (-3, 3), xlabel="x")).axes[0].label == "x"
    schema = pytest.importorskip("uhi.schema")
    try:
        import uhi.io.json as uhi_json
        import json
        schema.validate(json.loads(json.dumps(hotbin.hist(a, 5, (-1, 1), weights=w)._to_uhi_(),
                                               default=uhi_json.default)))
    except ModuleNotFoundError:  # the validator's own dependency
        pass


def test_constructor_and_pickle_keep_flow(messy):
    a, w = messy
    h = Histogram(np.array([1, 2, 3]), [0, 1, 2, 3])
    np.testing.assert_array_equal(h.values(flow=True), [0, 1, 2, 3, 0])
    full = Histogram(np.array([5, 1, 2, 3, 4]), [0, 1, 2, 3])
    np.testing.assert_array_equal(full.values(), [1, 2, 3])
    assert (full + full).values(flow=True).tolist() == [10, 2, 4, 6, 8]
    hd = hotbin.hist(a, 5, (-1, 1), weights=w, deterministic=True)
    back = pickle.loads(pickle.dumps(hd))
    assert back == hd and _bits(back.values(flow=True)) == _bits(hd.values(flow=True))


def test_dask_flow_matches_memory(messy):
    da = pytest.importorskip("dask.array")
    a, w = messy
    ref = hotbin.hist(a, 6, (-2, 2), weights=w, deterministic=True)
    got = hotbin.hist(da.from_array(a, chunks=700), 6, (-2, 2), weights=da.from_array(w, chunks=700),
                      deterministic=True)
    assert got == ref
    ref2 = hotbin.hist2d(a, a[::-1], 3, [(-2, 2), (-1, 1)])
    got2 = hotbin.hist2d(da.from_array(a, chunks=900), da.from_array(a[::-1].copy(), chunks=900), 3,
                         [(-2, 2), (-1, 1)])
    assert got2 == ref2


@pytest.mark.parametrize("bins", [1, 3])
def test_integer_range_ends_beyond_2_53_as_numpy(backend, bins):
    """int64 data over integer range ends above 2**53: NumPy keeps ``lo <= v <= hi`` compared
    exactly, and ``hist``, its ``fill`` and its flow bins must too, as ``histogram`` does."""
    a = np.arange(2**53 - 8, 2**53 + 24)
    r = (2**53 + 1, 2**53 + 9)
    want, _ = np.histogram(a, bins, r)
    h = hotbin.hist(a, bins, r, backend=backend)
    assert h.values().tolist() == want.tolist()
    under, over = int(np.count_nonzero(a < r[0])), int(np.count_nonzero(a > r[1]))
    assert h.values(flow=True).tolist() == [under, *want.tolist(), over]
    h.fill(a, backend=backend)
    assert h.values().tolist() == (2 * want).tolist()
    got, _ = hotbin.histogram(np.tile(a, (2, 1)), bins, r, axis=1, backend=backend)
    assert np.asarray(got).tolist() == [want.tolist()] * 2
