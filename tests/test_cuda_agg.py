"""CUDA heatmap aggregations (issue #16): the values accumulators and categories of the cuda backend.

The primitive (``spatial.histogram2d`` and the staged ``histogram2d`` of the backend) against
the cpu backend's, under every 2-D strategy: ``[sum, n]`` to rounding, ``[min, n]`` and
``[max, n]`` exactly, counts by category exactly; then ``hotbin.heatmap(..., backend="cuda")``
for every agg against the cpu backend and an independent NumPy oracle computed cell by cell.
"""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")


def _devices():
    try:
        return cp.cuda.runtime.getDeviceCount()
    except Exception:  # no driver or no device
        return 0


pytestmark = [pytest.mark.cuda, pytest.mark.skipif(_devices() < 1, reason="no CUDA device")]

import hotbin  # noqa: E402
from hotbin.core import binning, fixedpoint, reductions  # noqa: E402
from hotbin.backend import cpu, cuda  # noqa: E402
from hotbin.backend.cuda import spatial as cs, tuning  # noqa: E402

STRATEGIES = ("private", "tiled", "direct")
AGGS = ("count", "any", "sum", "mean", "min", "max", "std", "var")
VALUES = (reductions.MEAN, reductions.MIN, reductions.MAX)


@pytest.fixture(params=STRATEGIES)
def strategy(request):
    with tuning.forced(strategy=request.param):
        yield request.param


def _check(x, y, rx, ry, w=None, red=reductions.COUNT, by=None, got=None):
    """cuda == cpu: counts, extremes and fixed-point words bit for bit, float sums to rounding."""
    hby = None if by is None else (np.asarray(by[0]), by[1])
    ref, kref = cpu.histogram2d(x, y, rx, ry, w, red, by=hby)
    if got is None:
        dby = None if by is None else (cp.asarray(by[0]), by[1])
        got = cs.histogram2d(cp.asarray(x), cp.asarray(y), rx, ry, None if w is None else cp.asarray(w), red,
                             by=dby)
    g, kgot = got
    g = g.get()
    assert kgot == kref
    assert g.shape == ref.shape and g.dtype == ref.dtype
    if red.acc == "mean":
        np.testing.assert_array_equal(g[1], ref[1])
        absw = np.abs(np.asarray(w, np.float64))
        cen = red.center
        if cen is not None:  # the centered values are (w - c)**2 >= 0
            absw = None
        mag = ref[0] if absw is None else cpu.histogram2d(x, y, rx, ry, absw, reductions.MEAN, by=hby)[0][0]
        # float sums in another order: within 1e-11 of the sum of magnitudes (millions per cell)
        np.testing.assert_array_less(np.abs(g[0] - ref[0]), 1e-11 * np.abs(mag) + 1e-300)
    else:
        np.testing.assert_array_equal(g, ref)
    return g


def _points(rng, n, dtype=np.float32, hot=0.0):
    x = rng.uniform(-0.1, 1.1, n).astype(dtype)
    y = rng.uniform(-0.1, 1.1, n).astype(dtype)
    m = rng.random(n) < hot
    x[m] = dtype(0.4321)
    y[m] = dtype(0.1234) + rng.uniform(0, 1e-4, m.sum()).astype(dtype)
    return x, y


def _rules(nx=300, ny=170):
    return binning.cell_rule(nx, 0, 1, "w"), binning.cell_rule(ny, 0, 1, "h")


# --- the primitive --------------------------------------------------------------------------

@pytest.mark.parametrize("red", VALUES, ids=["mean", "min", "max"])
@pytest.mark.parametrize("wdt", [np.float32, np.float64, np.float16, np.int32, np.uint8])
def test_values_by_weight_dtype(strategy, red, wdt, rng):
    n = 200_003
    x, y = _points(rng, n)
    rx, ry = _rules()
    if np.dtype(wdt).kind == "f":
        w = (rng.standard_normal(n) * 100).astype(wdt)
        w[::17] = np.nan
        w[::101] = -0.0
    else:
        info = np.iinfo(wdt)
        w = rng.integers(info.min, info.max, n, dtype=wdt, endpoint=True)
    g = _check(x, y, rx, ry, w, red)
    if red.identity:  # cells without a value hold the identity
        assert np.all(g[0][g[1] == 0] == red.identity[0])


@pytest.mark.parametrize("red", VALUES, ids=["mean", "min", "max"])
@pytest.mark.parametrize("hot", [0.0, 0.9, 1.0])
def test_values_hot_cell(strategy, red, hot, rng):
    n = 1_000_003
    x, y = _points(rng, n, hot=hot)
    w = rng.standard_cauchy(n).astype(np.float32)
    w[::1000] = np.nan
    _check(x, y, *_rules(1024, 1024), w, red)


def test_one_cell_all_points(strategy, rng):
    n = 3_000_017
    x = np.full(n, 0.25, np.float32)
    y = np.full(n, 0.75, np.float32)
    x[::7] = np.float32(0.2500001)
    w = rng.normal(size=n).astype(np.float32)
    for red in VALUES:
        g = _check(x, y, *_rules(512, 512), w, red)
        assert g[1, 128, 384] == n and g[1].sum() == n
    assert _check(x, y, *_rules(512, 512), w, red)[0, 128, 384] == w.max()


@pytest.mark.parametrize("cdt", [np.int8, np.uint8, np.int16, np.uint32, np.int64, np.uint64, np.bool_])
def test_counts_by_category(strategy, cdt, rng):
    n = 300_001
    x, y = _points(rng, n, hot=0.5)
    ncat = 2 if cdt is np.bool_ else 7
    if cdt is np.bool_:
        codes = rng.random(n) < 0.3
    else:
        info = np.iinfo(cdt)
        codes = rng.integers(-3 if info.min < 0 else 0, ncat + 3, n).astype(cdt)
        codes[::1009] = info.max
        codes[::1013] = info.min
    g = _check(x, y, *_rules(), by=(codes, ncat))
    assert g.shape == (ncat + 1, 300, 170)
    # one category at a time equals the counts of its points
    full, _ = cpu.histogram2d(x[codes == 1], y[codes == 1], *_rules())
    np.testing.assert_array_equal(g[1], full)


@pytest.mark.parametrize("red", [reductions.MEAN, reductions.MAX], ids=["mean", "max"])
def test_values_by_category_large_grid(strategy, red, rng):
    """(ncat + 1) x cells beyond shared memory: tiled and direct, many tiles."""
    n = 400_003
    x, y = _points(rng, n, hot=0.3)
    codes = rng.integers(-1, 9, n).astype(np.int32)
    w = rng.normal(size=n)
    w[::31] = np.nan
    _check(x, y, *_rules(640, 480), w, red, by=(codes, 8))


def test_zero_categories_and_empty(strategy):
    rx, ry = _rules(10, 10)
    e = np.empty(0, np.float32)
    for red in VALUES:
        g, kept = cs.histogram2d(cp.asarray(e), cp.asarray(e), rx, ry, cp.asarray(e), red)
        ref, _ = cpu.histogram2d(e, e, rx, ry, e, red)
        assert kept == 0 and g.shape == (2, 10, 10)
        np.testing.assert_array_equal(g.get(), ref)
    x = np.array([0.5, 0.2, 2.0], np.float32)
    _check(x, x, rx, ry, by=(np.array([0, 5, 1]), 0))
    _check(x, x, rx, ry, np.array([1.0, np.nan, 3.0]), reductions.MIN, by=(np.array([0, 5, 1]), 2))


@pytest.mark.parametrize("acc", ["mean", "fixed"])
def test_centered(strategy, acc, rng):
    """Pass 2 of the variance: (w - center[cell])**2, NaN still skipped; fixed point bit for bit."""
    n = 200_003
    x, y = _points(rng, n, hot=0.6)
    codes = rng.integers(0, 4, n).astype(np.int16)
    w = (rng.normal(size=n) * 7 + 3).astype(np.float32)
    w[::13] = np.nan
    rx, ry = _rules(90, 70)
    center = rng.normal(size=(4, 90, 70)) * 5
    base = reductions.MEAN if acc == "mean" else reductions.fixed(fixedpoint.scale_for(4 * 60.0 ** 2, n))
    red = reductions.centered(base, center)
    for host_center in (True, False):
        r = red if host_center else reductions.centered(base, cp.asarray(center))
        got = cs.histogram2d(cp.asarray(x), cp.asarray(y), rx, ry, cp.asarray(w), r, by=(cp.asarray(codes), 3))
        if acc == "fixed":
            np.testing.assert_array_equal(
                got[0].get(), cpu.histogram2d(x, y, rx, ry, w, red, by=(codes, 3))[0])
        else:
            _check(x, y, rx, ry, w, red, by=(codes, 3), got=got)


def test_many_chunks(strategy, rng, monkeypatch):
    """Keys and counts over chunks are finished once."""
    monkeypatch.setattr(cs, "CHUNK", 1 << 14)
    n = 100_000
    x, y = _points(rng, n, hot=0.4)
    w = rng.normal(size=n)
    codes = rng.integers(0, 3, n).astype(np.int8)
    for red in VALUES:
        _check(x, y, *_rules(200, 180), w, red, by=(codes, 3))


def test_staged_slabs_merge_by_combine(rng):
    """Host data larger than a slab: partials of the backend primitive merge as red.combine."""
    n = 300_000
    x, y = _points(rng, n, dtype=np.float64, hot=0.3)
    w = rng.normal(size=n).astype(np.float32)
    w[::7] = np.nan
    codes = rng.integers(0, 5, n).astype(np.int8)
    rx, ry = _rules(64, 48)
    with tuning.forced(stage_bytes=1 << 20):
        for red in VALUES + (reductions.COUNT,):
            ww = None if red is reductions.COUNT else w
            got = cuda.histogram2d(x, y, rx, ry, ww, red, by=(codes, 5))
            _check(x, y, rx, ry, ww, red, by=(codes, 5), got=got)


def test_non_contiguous(strategy, rng):
    n = 150_001
    x, y = _points(rng, 3 * n, dtype=np.float64)
    w = rng.normal(size=3 * n).astype(np.float32)
    codes = rng.integers(0, 4, 3 * n).astype(np.int64)
    rx, ry = _rules()
    for red in VALUES:
        got = cuda.histogram2d(cp.asarray(x)[::3], cp.asarray(y)[1::3], rx, ry, cp.asarray(w)[2::3], red,
                               by=(cp.asarray(codes)[::3], 4))
        _check(x[::3], y[1::3], rx, ry, w[2::3], red, by=(codes[::3], 4), got=got)


def test_tile_regions_overflow_values(rng):
    """Regions far too small: the overflow path takes the values (and centers) exactly."""
    n = 300_001
    x = np.sort(rng.uniform(0, 1, n)).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    y[n // 2:] = 0.3
    w = rng.normal(size=n)
    w[::11] = np.nan
    rx, ry = _rules(700, 300)
    with tuning.forced(strategy="tiled", regions=tuning.Regions(slack=-0.7, sigmas=0.0, pad=0, sample=1000)):
        for red in VALUES:
            _check(x, y, rx, ry, w, red)
        _check(x, y, rx, ry, w, reductions.centered(reductions.MEAN, rng.normal(size=(700, 300))))


# --- the heatmap ----------------------------------------------------------------------------

def _oracle(x, y, w, agg, width, height, x_range, y_range, codes=None, ncat=None):
    """agg of each cell by NumPy alone: cells by searchsorted on linspace edges, then per cell."""
    xe, ye = np.linspace(*x_range, width + 1), np.linspace(*y_range, height + 1)
    ix = np.searchsorted(xe, x, side="right") - 1
    iy = np.searchsorted(ye, y, side="right") - 1
    ok = (ix >= 0) & (ix < width) & (iy >= 0) & (iy < height)
    cell = iy * width + ix
    ncell = width * height
    if codes is not None:  # counts by category
        ok &= (codes >= 0) & (codes < ncat)
        g = codes[ok].astype(np.int64)
        return np.bincount(g * ncell + cell[ok], minlength=ncat * ncell).reshape(ncat, height, width)
    if agg in ("count", "any"):
        c = np.bincount(cell[ok], minlength=ncell).astype(np.float64)
        return (c > 0 if agg == "any" else c).astype(np.float64).reshape(height, width)
    ok &= ~np.isnan(w)
    c, v = cell[ok], np.asarray(w[ok], np.float64)
    n = np.bincount(c, minlength=ncell)
    out = np.full(ncell, np.nan)
    has = n > 0
    if agg in ("min", "max"):
        r = np.full(ncell, np.inf if agg == "min" else -np.inf)
        (np.minimum if agg == "min" else np.maximum).at(r, c, v)
        out[has] = r[has]
    else:
        s = np.bincount(c, v, minlength=ncell)
        if agg == "sum":
            out[has] = s[has]
        else:
            m = np.where(has, s / np.maximum(n, 1), 0.0)
            if agg == "mean":
                out[has] = m[has]
            else:
                q = np.bincount(c, (v - m[c]) ** 2, minlength=ncell)
                out[has] = (q / np.maximum(n, 1))[has]
                if agg == "std":
                    out = np.sqrt(out)
    return out.reshape(height, width)


def _data(rng, n, wdt=np.float32, hot=0.0):
    x = rng.uniform(-1.2, 3.4, n)
    y = rng.uniform(10.0, 12.7, n)
    m = rng.random(n) < hot
    x[m] = 0.777 + rng.uniform(0, 1e-4, m.sum())
    y[m] = 11.111
    w = (rng.standard_normal(n) * 50 + 10).astype(wdt)
    if np.dtype(wdt).kind == "f":
        w[::29] = np.nan
    return x, y, w


KW = dict(width=130, height=90, x_range=(-1.0, 3.0), y_range=(10.1, 12.5))


def _close(got, want, rtol):
    """Equal (rtol 0: exactly), NaN where ``want`` is NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    if rtol == 0:
        np.testing.assert_array_equal(got, want)
        return
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=rtol, atol=1e-9)


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("hot", [0.0, 1.0])
def test_heatmap_every_agg(strategy, agg, hot, rng):
    x, y, w = _data(rng, 250_003, hot=hot)
    hw = None if agg in ("count", "any") else w
    got = hotbin.heatmap(cp.asarray(x), cp.asarray(y), None if hw is None else cp.asarray(hw), agg=agg,
                         backend="cuda", **KW)
    ref = hotbin.heatmap(x, y, hw, agg=agg, backend="cpu", **KW)
    assert isinstance(got.values, cp.ndarray)
    exact = agg in ("count", "any", "min", "max")
    _close(got.values.get(), ref.values, 0 if exact else 1e-10)
    np.testing.assert_array_equal(got.counts.get(), ref.counts)
    assert (got.dropped, got.skipped) == (ref.dropped, ref.skipped)
    _close(got.values.get(), _oracle(x, y, hw, agg, **KW), 0 if exact else 1e-9)


@pytest.mark.parametrize("wdt", [np.float64, np.int32, np.int64])
@pytest.mark.parametrize("agg", ["mean", "min", "max", "std"])
def test_heatmap_weight_dtypes(agg, wdt, rng):
    x, y, w = _data(rng, 100_001, wdt=wdt, hot=0.5)
    got = hotbin.heatmap(cp.asarray(x), cp.asarray(y), cp.asarray(w), agg=agg, backend="cuda", **KW)
    ref = hotbin.heatmap(x, y, w, agg=agg, backend="cpu", **KW)
    _close(got.values.get(), ref.values, 0 if agg in ("min", "max") else 1e-10)
    _close(got.values.get(), _oracle(x, y, w, agg, **KW), 0 if agg in ("min", "max") else 1e-9)


@pytest.mark.parametrize("cdt", [np.int8, np.int64])
@pytest.mark.parametrize("agg", ["count", "mean", "max"])
def test_heatmap_by(strategy, agg, cdt, rng):
    x, y, w = _data(rng, 200_003, hot=0.5)
    codes = rng.integers(0, 8, x.size).astype(cdt)
    hw = None if agg == "count" else w
    got = hotbin.heatmap(cp.asarray(x), cp.asarray(y), None if hw is None else cp.asarray(hw), agg=agg,
                         by=cp.asarray(codes), backend="cuda", **KW)
    ref = hotbin.heatmap(x, y, hw, agg=agg, by=codes, backend="cpu", **KW)
    assert got.values.shape == (8, 90, 130) and got.categories == ref.categories
    _close(got.values.get(), ref.values, 1e-10 if agg == "mean" else 0)
    np.testing.assert_array_equal(got.counts.get(), ref.counts)
    assert (got.dropped, got.skipped) == (ref.dropped, ref.skipped)
    if agg == "count":
        np.testing.assert_array_equal(got.values.get(), _oracle(x, y, None, agg, codes=codes, ncat=8, **KW))


@pytest.mark.parametrize("agg", ["sum", "mean", "std", "var"])
def test_heatmap_deterministic_equals_cpu_bitwise(agg, rng):
    x, y, w = _data(rng, 300_007, wdt=np.float64, hot=0.7)
    got = hotbin.heatmap(cp.asarray(x), cp.asarray(y), cp.asarray(w), agg=agg, deterministic=True,
                         backend="cuda", **KW)
    ref = hotbin.heatmap(x, y, w, agg=agg, deterministic=True, backend="cpu", **KW)
    np.testing.assert_array_equal(got.values.get().view(np.int64), ref.values.view(np.int64))
    again = hotbin.heatmap(cp.asarray(x[::-1]), cp.asarray(y[::-1]), cp.asarray(w[::-1]), agg=agg,
                           deterministic=True, backend="cuda", **KW)
    np.testing.assert_array_equal(again.values.get().view(np.int64), ref.values.view(np.int64))


@pytest.mark.parametrize("agg", ["var", "std"])
def test_heatmap_centered_pass_close_to_cpu(agg, rng):
    x, y, w = _data(rng, 300_007, hot=0.9)
    w = w + np.float32(1e4)  # a large mean: the centered pass keeps the small variance
    got = hotbin.heatmap(cp.asarray(x), cp.asarray(y), cp.asarray(w), agg=agg, backend="cuda", **KW)
    ref = hotbin.heatmap(x, y, w, agg=agg, backend="cpu", **KW)
    _close(got.values.get(), ref.values, 1e-12 if agg == "std" else 2e-12)


def test_heatmap_empty_and_all_nan(rng):
    e = cp.empty(0, cp.float64)
    for agg in AGGS:
        hm = hotbin.heatmap(e, e, None if agg in ("count", "any") else e, agg=agg, backend="cuda", **KW)
        ref = hotbin.heatmap(np.empty(0), np.empty(0), None if agg in ("count", "any") else np.empty(0), agg=agg,
                             backend="cpu", **KW)
        _close(hm.values.get(), ref.values, 0)
    x, y, _ = _data(rng, 1000)
    nan = cp.full(1000, cp.nan, cp.float32)
    hm = hotbin.heatmap(cp.asarray(x), cp.asarray(y), nan, agg="max", backend="cuda", **KW)
    assert bool(cp.isnan(hm.values).all()) and int(hm.counts.sum()) == 0 and hm.skipped == 1000 - hm.dropped


def test_heatmap_non_contiguous(rng):
    x, y, w = _data(rng, 300_000)
    got = hotbin.heatmap(cp.asarray(x)[::2], cp.asarray(y)[1::2], cp.asarray(w)[::2], agg="mean",
                         backend="cuda", **KW)
    ref = hotbin.heatmap(x[::2], y[1::2], w[::2], agg="mean", backend="cpu", **KW)
    _close(got.values.get(), ref.values, 1e-10)
