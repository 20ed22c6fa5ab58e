"""CUDA 2-D binning and fused luma histogram against the cpu backend and integer references.

Every strategy of kernels/spatial.cu (private, tiled with each scatter, direct) must
equal the cpu backend's histogram2d bit for bit: counts, int64 sums and fixed-point
words, on edges, their float neighbours, NaN, inf, out-of-range values and hot cells.
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

from hotbin.core import binning, fixedpoint, reductions  # noqa: E402
from hotbin.backend import cpu  # noqa: E402
from hotbin.backend.cuda import luma as cl, spatial as cs, tuning  # noqa: E402

#: "tiled": the table's scatter (scatter_warps where it applies, else scatter_codes with
#: prefetch); "tiled-block": scatter_codes with prefetch, "tiled-block-noprefetch" without
STRATEGIES = ("private", "tiled", "tiled-block", "tiled-block-noprefetch", "direct")


@pytest.fixture(params=STRATEGIES)
def strategy(request):
    name, *variant = request.param.split("-")
    with tuning.forced(strategy=name, scatter="block" if "block" in variant else None,
                       prefetch="noprefetch" not in variant):
        yield request.param


def _check(x, y, rx, ry, weights=None, scale=None):
    """cuda == cpu, bit for bit (float64 sums: to rounding)."""
    red = reductions.for_weights(None if weights is None else np.asarray(weights), scale)
    ref, kref = cpu.histogram2d(x, y, rx, ry, weights, red)
    w = None if weights is None else cp.asarray(weights)
    got, kgot = cs.histogram2d(cp.asarray(x), cp.asarray(y), rx, ry, w, red)
    got = got.get()
    assert kgot == kref
    assert got.shape == ref.shape and got.dtype == ref.dtype
    if weights is not None and scale is None and np.asarray(weights).dtype.kind == "f":
        # the order of float adds differs
        mag, _ = cpu.histogram2d(x, y, rx, ry, np.abs(weights), reductions.SUM_F64)
        assert np.all(np.abs(got - ref) <= 1e-12 * mag)
    else:
        np.testing.assert_array_equal(got, ref)
    return got, kgot


def _edge_values(edges, dtype):
    """Every edge, its neighbours in ``dtype`` and in float64, NaN, infinities, outside values."""
    e = np.asarray(edges, np.float64)
    vals = [e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf)]
    with np.errstate(over="ignore"):
        ed = e.astype(dtype)
    vals += [ed, np.nextafter(ed, dtype(np.inf)), np.nextafter(ed, dtype(-np.inf))]
    vals.append(np.array([np.nan, np.inf, -np.inf, e[0] - 1, e[-1] + 1, 0.5 * (e[0] + e[-1])]))
    return np.concatenate([np.asarray(v, np.float64) for v in vals]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 5), (300, 200)])
def test_cells_on_edges(strategy, dtype, shape):
    rx = binning.cell_rule(shape[0], -1.3, 2.9, "width")
    ry = binning.cell_rule(shape[1], 10.0, 10.7, "height")
    vx, vy = _edge_values(rx.edges, dtype), _edge_values(ry.edges, dtype)
    # every x value against every y value (a cross product, shuffled)
    x = np.repeat(vx, vy.size)
    y = np.tile(vy, vx.size)
    p = np.random.default_rng(1).permutation(x.size)
    _check(x[p], y[p], rx, ry)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_subnormal_neighbours_of_zero(strategy, dtype):
    """An edge at 0 has subnormal neighbours; CuPy compiles with -ftz=true, the rule must not flush."""
    rx = binning.cell_rule(10, -1, 1, "w")  # edge 5 is exactly 0
    ry = binning.histogram2d_rules(np.zeros(1, dtype), np.zeros(1, dtype), bins=8,
                                   range=[[-1e-30, 1e-30], [-1, 1]])[0]
    info = np.finfo(dtype)
    v = np.array([0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, info.tiny, -info.tiny,
                  info.tiny / 2, -info.tiny / 2, 1e-30, -1e-30, 0.25, -0.25], dtype)
    x = np.repeat(v, v.size)
    y = np.tile(v, v.size)
    _check(x, y, rx, ry)
    _check(y, x, rx, ry)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_histogram2d_rules(strategy, dtype, rng):
    x = (rng.normal(0, 40, 100_003)).astype(dtype) if np.dtype(dtype).kind != "u" else \
        rng.integers(0, 256, 100_003).astype(dtype)
    y = x[::-1].copy()
    rx, ry = binning.histogram2d_rules(x, y, bins=(333, 129), range=[[-30, 50.5], [0, 100]])
    _check(x, y, rx, ry)
    rx, ry = binning.histogram2d_rules(x, y, bins=64, minmax=cpu.minmax)
    _check(x, y, rx, ry)


def test_explicit_edges_binary_search(strategy, rng):
    x = rng.normal(0, 1, 50_001)
    y = rng.normal(0, 1, 50_001).astype(np.float32)
    ex = np.sort(rng.normal(0, 1, 41))
    ey = np.array([-3, -1, -0.5, 0, 0.25, 0.5, 2, 4], np.float32)
    rx, ry = binning.histogram2d_rules(x, y, bins=[ex, ey])
    assert not rx.uniform
    _check(x, y, rx, ry)
    vx = _edge_values(ex, np.float64)
    vy = _edge_values(ey, np.float32)
    _check(np.repeat(vx, vy.size), np.tile(vy, vx.size).astype(np.float64), rx, ry)


def test_mixed_dtypes_and_unaligned_views(strategy, rng):
    x = rng.uniform(-1, 1, 70_001)
    y = rng.uniform(-1, 1, 70_001).astype(np.float32)
    rx = binning.cell_rule(257, -1, 1, "w")
    ry = binning.cell_rule(190, -1, 1, "h")
    ref, kref = cpu.histogram2d(x[1:], y[1:], rx, ry)
    got, kgot = cs.histogram2d(cp.asarray(x)[1:], cp.asarray(y)[1:], rx, ry)
    assert kgot == kref
    np.testing.assert_array_equal(got.get(), ref)
    xs = cp.asarray(x)[::3]  # strided
    ys = cp.asarray(y)[::3]
    ref, kref = cpu.histogram2d(x[::3], y[::3], rx, ry)
    got, kgot = cs.histogram2d(xs, ys, rx, ry)
    assert kgot == kref
    np.testing.assert_array_equal(got.get(), ref)


@pytest.mark.parametrize("hot", [0.0, 0.5, 0.9, 1.0])
def test_hot_cells(strategy, hot, rng):
    n = 1_000_003
    x = rng.uniform(0, 1, n).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    m = rng.random(n) < hot
    x[m] = np.float32(0.4321)
    y[m] = np.float32(0.1234) + rng.uniform(0, 1e-4, m.sum()).astype(np.float32)
    rx = binning.cell_rule(1024, 0, 1, "w")
    ry = binning.cell_rule(1024, 0, 1, "h")
    _check(x, y, rx, ry)


def test_one_cell_more_points_than_a_block(strategy):
    n = 3_000_017
    x = np.full(n, 0.25, np.float32)
    y = np.full(n, 0.75, np.float32)
    x[::7] = np.float32(0.2500001)  # still the same cell, not constant data
    rx = binning.cell_rule(512, 0, 1, "w")
    ry = binning.cell_rule(512, 0, 1, "h")
    got, kept = _check(x, y, rx, ry)
    assert kept == n and got[128, 384] == n


def test_many_chunks_and_weights(strategy, rng, monkeypatch):
    monkeypatch.setattr(cs, "CHUNK", 1 << 14)
    n = 100_000
    x = rng.normal(0.5, 0.3, n)
    y = rng.normal(0.5, 0.3, n).astype(np.float32)
    x[::97] = np.nan
    rx = binning.cell_rule(200, 0, 1, "w")
    ry = binning.cell_rule(180, 0, 1, "h")
    _check(x, y, rx, ry)
    w = rng.normal(0, 10, n)
    _check(x, y, rx, ry, w)
    _check(x, y, rx, ry, rng.integers(-1000, 1000, n))
    s = fixedpoint.scale_for(float(np.abs(w).max()), n)
    _check(x, y, rx, ry, w, s)


@pytest.mark.parametrize("kind", ["f64", "i64", "fixed"])
def test_weighted_hot(strategy, kind, rng):
    n = 600_001
    x = rng.uniform(0, 1, n).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    m = rng.random(n) < 0.9
    x[m], y[m] = 0.5, 0.5
    rx = binning.cell_rule(640, 0, 1, "w")
    ry = binning.cell_rule(480, 0, 1, "h")
    if kind == "i64":
        _check(x, y, rx, ry, rng.integers(-(1 << 40), 1 << 40, n))
        return
    w = rng.standard_cauchy(n)
    w[::1001] = -0.0
    if kind == "f64":
        _check(x, y, rx, ry, w)
        return
    s = fixedpoint.scale_for(float(np.abs(w).max()), n)
    got, _ = _check(x, y, rx, ry, w, s)
    assert np.all((got[1] >= 0) & (got[1] < 1 << 32))  # folded
    again, _ = cs.histogram2d(cp.asarray(x), cp.asarray(y), rx, ry, cp.asarray(w), reductions.fixed(s))
    np.testing.assert_array_equal(again.get(), got)


@pytest.mark.parametrize("scatter", ["warp", "block"])
@pytest.mark.parametrize("weighted", [False, True])
def test_tile_regions_overflow(weighted, scatter, rng):
    """Regions sized far too small (and sorted data): the overflow path keeps every count."""
    n = 400_001
    x = np.sort(rng.uniform(0, 1, n)).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    y[n // 2:] = 0.3
    rx = binning.cell_rule(700, 0, 1, "w")
    ry = binning.cell_rule(300, 0, 1, "h")
    with tuning.forced(strategy="tiled", scatter=scatter,
                       regions=tuning.Regions(slack=-0.7, sigmas=0.0, pad=0, sample=1000)):
        _check(x, y, rx, ry)
        if weighted:
            w = rng.normal(size=n)
            _check(x, y, rx, ry, w)
            _check(x, y, rx, ry, w, fixedpoint.scale_for(float(np.abs(w).max()), n))


def _scatter_used(n, rx, ry, acc="count"):
    """The scatter the tiled strategy launches for these rules (spatial._scatter)."""
    info = cs.device_info(cp.cuda.Device().id)
    tab = tuning.table(info)
    ax = cs._axis(cp.zeros(1, cp.float32), rx, tuning.current().shortcut)[2]
    ay = cs._axis(cp.zeros(1, cp.float32), ry, tuning.current().shortcut)[2]
    return cs._scatter(tab, tuning.current(), -(-(rx.nbins * ry.nbins) >> tab.tile_shift[acc]), ax, ay)


@pytest.mark.parametrize("n", [1, 511, 512, 513, 8 * 512 * 33 + 17, 1_000_003])
@pytest.mark.parametrize("shortcut", [True, False])
def test_warp_scatter_batches_and_tiles(n, shortcut, rng):
    """scatter_warps: every one of 32 tiles, batches of 512 points cut anywhere (the last
    one partial), NaN, infinities, points outside, on every edge; with the shortcut and
    with every value compared to its nearest edge."""
    rx = binning.cell_rule(1024, -2.0, 3.0, "w")  # 2^20 cells: 32 tiles of 2^15
    ry = binning.cell_rule(1024, 10.0, 10.5, "h")
    x = rng.uniform(-2.2, 3.2, n).astype(np.float32)
    y = rng.uniform(9.9, 10.6, n).astype(np.float32)
    k = min(n, rx.edges.size)
    x[:k] = rx.edges[:k]  # every x edge (float32 rounding: either side of the float64 edge)
    y[::7] = ry.edges[rng.integers(0, ry.edges.size, y[::7].size)]
    x[1::97] = np.nan
    y[2::89] = np.inf
    x[3::83] = -np.inf
    p = rng.permutation(n)
    with tuning.forced(strategy="tiled", shortcut=shortcut):
        assert _scatter_used(n, rx, ry) == "warp"
        _check(x[p], y[p], rx, ry)


@pytest.mark.parametrize("kind", ["count", "f64", "i64", "fixed"])
def test_warp_scatter_accumulators_hot(kind, rng):
    """Every accumulator through scatter_warps (grids of at most 32 tiles), 90 % of the points
    in one cell: the hot tile's batches are whole warps of one tile."""
    n = 700_001
    x = rng.uniform(0, 1, n).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    m = rng.random(n) < 0.9
    x[m] = np.float32(0.5) + rng.uniform(0, 1e-4, m.sum()).astype(np.float32)
    y[m] = np.float32(0.25)
    rx = binning.cell_rule(256, 0, 1, "w")
    ry = binning.cell_rule(250, 0, 1, "h")  # 64000 cells: 2 to 8 tiles by accumulator
    with tuning.forced(strategy="tiled"):
        assert _scatter_used(n, rx, ry, kind) == "warp"
        if kind == "count":
            _check(x, y, rx, ry)
            return
        if kind == "i64":
            _check(x, y, rx, ry, rng.integers(-(1 << 40), 1 << 40, n))
            return
        w = rng.standard_cauchy(n)
        w[::1001] = -0.0
        _check(x, y, rx, ry, w, fixedpoint.scale_for(float(np.abs(w).max()), n) if kind == "fixed" else None)


def test_warp_scatter_huge_counts_in_one_cell():
    """2^25 + 3 points in one cell through scatter_warps: the shared counters of
    accumulate_tiles and the tile-local 16-bit codes hold it, the result is exact."""
    n = (1 << 25) + 3
    x = cp.full(n, 0.3, cp.float32)
    y = cp.full(n, 0.7, cp.float32)
    x[::5] = cp.float32(0.30001)  # still the same cell, not constant data
    rx = binning.cell_rule(1024, 0, 1, "w")
    ry = binning.cell_rule(1024, 0, 1, "h")
    with tuning.forced(strategy="tiled"):
        assert _scatter_used(n, rx, ry) == "warp"
        got, kept = cs.histogram2d(x, y, rx, ry)
    assert kept == n and int(got[307, 716]) == n and int(got.sum()) == n


def test_empty_and_all_dropped(strategy):
    rx = binning.cell_rule(10, 0, 1, "w")
    ry = binning.cell_rule(10, 0, 1, "h")
    e = np.empty(0, np.float32)
    got, kept = cs.histogram2d(cp.asarray(e), cp.asarray(e), rx, ry)
    assert kept == 0 and got.shape == (10, 10) and int(got.sum()) == 0
    x = np.array([np.nan, 1.0, -0.1, 2.0] * 1000, np.float32)
    _check(x, x, rx, ry)


# --- luma -----------------------------------------------------------------------------

def _luma_ref(img):
    img = np.asarray(img)
    if img.ndim == 3:
        img = img[None]
    r, g, b = (img[..., k].astype(np.int64) for k in range(3))
    lv = (2126 * r + 7152 * g + 722 * b) // 10000
    return np.stack([np.bincount(lv[i].ravel(), minlength=256) for i in range(img.shape[0])])


@pytest.mark.parametrize("c", [3, 4])
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 37, 53), (2, 7, 1), (5, 16, 16), (1, 1031, 997)])
def test_luma_random(c, shape, rng):
    img = rng.integers(0, 256, shape + (c,), dtype=np.uint8)
    got = cl.luma_histogram(cp.asarray(img))
    assert got.dtype == cp.int64 and got.shape == (shape[0], 256)
    np.testing.assert_array_equal(got.get(), _luma_ref(img))


@pytest.mark.parametrize("c", [3, 4])
def test_luma_gray_levels_and_white(c):
    v = np.arange(256, dtype=np.uint8)
    img = np.stack([v, v, v] + ([255 - v] if c == 4 else []), axis=-1).reshape(1, 16, 16, c)
    got = cl.luma_histogram(cp.asarray(img)).get()
    np.testing.assert_array_equal(got, np.ones((1, 256), np.int64))
    white = np.full((2, 64, 33, c), 255, np.uint8)
    got = cl.luma_histogram(cp.asarray(white)).get()
    assert got[:, 255].tolist() == [64 * 33] * 2 and got.sum() == 2 * 64 * 33


def test_luma_layouts_and_batches(rng):
    img = rng.integers(0, 256, (4, 50, 61, 4), dtype=np.uint8)
    got = cl.luma_histogram(cp.asarray(img)[:, ::2, 1:])  # strided view
    np.testing.assert_array_equal(got.get(), _luma_ref(img[:, ::2, 1:]))
    one = cl.luma_histogram(cp.asarray(img[0]))  # (H, W, C)
    np.testing.assert_array_equal(one.get(), _luma_ref(img[0]))
    rgb = cp.asarray(img)[..., :3]  # non-contiguous RGB
    np.testing.assert_array_equal(cl.luma_histogram(rgb).get(), _luma_ref(img[..., :3]))
    many = rng.integers(0, 256, (300, 5, 3, 3), dtype=np.uint8)  # odd image sizes: unaligned starts
    np.testing.assert_array_equal(cl.luma_histogram(cp.asarray(many)).get(), _luma_ref(many))


def test_luma_bad_input():
    with pytest.raises(TypeError, match="img"):
        cl.luma_histogram(cp.zeros((1, 2, 2, 4), cp.float32))
    with pytest.raises(ValueError, match="img"):
        cl.luma_histogram(cp.zeros((1, 2, 2, 2), cp.uint8))
