"""The wgpu backend's heatmap aggregations (issue #16): categories and min/max on the device.

``histogram2d`` with ``by=`` (counts per category) and the ``min`` / ``max`` accumulators run
in WGSL (kernels/cell.wgsl, hist.wgsl, extreme.wgsl); each result is checked bit for bit
against the cpu backend and against an independent NumPy oracle, cell by cell (searchsorted on
the edges, ``np.minimum.at``). Sums and means run in fixed point on the device
(tests/test_wgpu_fixed.py); every agg of ``hotbin.heatmap`` is checked through the front door
against ``backend="cpu"``.

Runs on any WebGPU adapter (lavapipe in CI); skipped cleanly without wgpu-py or an adapter.
Small inputs: the whole file takes seconds.
"""
import numpy as np
import pytest

import hotbin
from hotbin.core import reductions as R
from hotbin.backend import cpu as C
from hotbin.core.binning import histogram2d_rules

pytest.importorskip("wgpu", reason="wgpu-py not installed")
from hotbin.backend import wgpu as W  # noqa: E402
from hotbin.backend.wgpu import device as D, extreme as E  # noqa: E402

if not W.available():
    pytest.skip("no WebGPU adapter (install mesa-vulkan-drivers for lavapipe)", allow_module_level=True)

pytestmark = pytest.mark.wgpu

from wgpu_counters import counters  # noqa: E402,F401  (autouse)

RANGE = [(0.0, 1.0), (0.0, 1.0)]
#: the input dtypes compared with the cpu backend too (each other one would cost a numba
#: compilation on a cold CI machine; the oracle checks every dtype)
CPU_CODES = {np.dtype(np.int64)}
CPU_WEIGHTS = {np.dtype(np.float32)}
#: a grid whose cells (times 4 categories) fit workgroup memory, and one that does not
GRIDS = [(16, 24), (300, 200)]


@pytest.fixture
def rng():
    return np.random.default_rng(20261216)


@pytest.fixture
def few_groups(monkeypatch):
    """Three workgroups: every invocation strides over many points (long runs)."""
    monkeypatch.setattr(D.gpu(), "workgroups", 3)


def points(rng, n, hot=0.0):
    """float32 points in [0, 1)^2, a fraction ``hot`` of them in one cell, some outside."""
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    h = rng.random(n) < hot
    x[h], y[h] = 0.31, 0.77
    x[::101], y[::103] = np.nan, 1.5
    return x, y


def oracle(x, y, bins, w=None, acc="count", by=None):
    """(partial, kept) from NumPy alone: cells by searchsorted on NumPy's edges, the
    category clamp, then bincount / minimum.at / maximum.at cell by cell."""
    nx, ny = bins
    idx = []
    for v, nb, (lo, hi) in ((x, nx, RANGE[0]), (y, ny, RANGE[1])):
        e = np.linspace(lo, hi, nb + 1)
        v = np.asarray(v, np.float64).reshape(-1)
        i = np.searchsorted(e, v, side="right") - 1
        idx.append(np.where(np.isnan(v) | (v >= hi), -1, i))
    ok = (idx[0] >= 0) & (idx[0] < nx) & (idx[1] >= 0) & (idx[1] < ny)
    cell = idx[0] * ny + idx[1]
    shape = (nx, ny)
    if by is not None:
        codes, ncat = np.asarray(by[0]).reshape(-1).astype(np.int64), by[1]
        cat = np.where((codes >= 0) & (codes < ncat), codes, ncat)
        cell, shape = cat * nx * ny + cell, (ncat + 1, nx, ny)
    ncell = int(np.prod(shape))
    kept = int(ok.sum())
    if acc == "count":
        return np.bincount(cell[ok], minlength=ncell).reshape(shape), kept
    v = np.asarray(w).reshape(-1).astype(np.float64)
    ok &= ~np.isnan(v)
    n = np.bincount(cell[ok], minlength=ncell).astype(np.float64)
    ext = np.full(ncell, np.inf if acc == "min" else -np.inf)
    (np.minimum if acc == "min" else np.maximum).at(ext, cell[ok], v[ok])
    return np.stack([ext, n]).reshape((2,) + shape), kept


def check(x, y, bins, w=None, red=R.COUNT, by=None):
    """wgpu == the oracle (== the cpu backend for CPU_CODES and CPU_WEIGHTS), bitwise, and
    computed on the device."""
    rx, ry = histogram2d_rules(x, y, bins, RANGE)
    got = W.histogram2d(x, y, rx, ry, w, red, by=by)
    assert got is not NotImplemented
    refs = [oracle(x, y, bins, w, red.acc, by)]
    if ((by is None or by[0].dtype in CPU_CODES)
            and (w is None or w.dtype.newbyteorder("=") in CPU_WEIGHTS)):
        refs.append(C.histogram2d(x, y, rx, ry, w, red, by=by))
    for part, kept in refs:
        assert got[0].shape == part.shape
        assert got[0].dtype == red.dtype
        np.testing.assert_array_equal(got[0].view(np.int64),
                                      np.asarray(part, red.dtype).view(np.int64))
        assert got[1] == kept
    return got


# --- counts by category ---------------------------------------------------------------

@pytest.mark.parametrize("bins", GRIDS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_counts_by_category(rng, bins, dtype):
    """Codes of every integer width; negative and too-large codes go to category ncat."""
    x, y = points(rng, 20_011)
    lo = -3 if np.dtype(dtype).kind == "i" else 0
    codes = rng.integers(lo, 6, x.size).astype(dtype)
    codes[::17] = np.iinfo(dtype).max
    check(x, y, bins, by=(codes, 4))


@pytest.mark.parametrize("hot", [0.9, 1.0])
@pytest.mark.parametrize("bins", GRIDS)
def test_counts_by_category_hot_cell(rng, hot, bins, few_groups):
    x, y = points(rng, 50_003, hot)
    codes = rng.integers(0, 3, x.size).astype(np.int8)
    codes[rng.random(x.size) < hot] = 2
    check(x, y, bins, by=(codes, 3))


def test_counts_by_category_edge_cases(rng):
    x, y = points(rng, 5_000)
    check(x, y, (7, 5), by=(np.full(x.size, 9, np.int16), 2))  # every code out of range
    check(x, y, (7, 5), by=(rng.integers(0, 2, x.size).astype(np.bool_), 2))
    check(x, y, (7, 5), by=(rng.integers(0, 3, x.size), 1))
    check(x, y, (7, 5), by=(rng.integers(-2, 4, x.size), 3))
    empty = np.empty(0, np.float32)
    g, kept = check(empty, empty, (7, 5), by=(np.empty(0, np.int8), 3))
    assert g.shape == (4, 7, 5) and kept == 0


def test_counts_by_category_layouts(rng, monkeypatch):
    """Strided and big-endian inputs; inputs split across several storage bindings."""
    monkeypatch.setattr(D.gpu(), "chunk_bytes", 4096)
    x, y = points(rng, 30_002)
    codes = rng.integers(-1, 5, x.size)
    check(x[::2], y[::2], (9, 11), by=(codes[::2], 4))
    check(x.astype(">f4"), y, (9, 11), by=(codes.astype(">i2"), 4))
    check(x, y, (9, 11), by=(codes.astype(np.int8), 4))


# --- min and max --------------------------------------------------------------------------

def weights_of(rng, n, dtype):
    w = rng.normal(size=n) * 100
    if np.dtype(dtype).kind in "iub":
        info = np.iinfo(np.uint8 if dtype == np.bool_ else dtype)
        w = rng.integers(max(info.min, -30000), min(info.max, 30000), n, endpoint=True)
    return w.astype(dtype)


@pytest.mark.parametrize("red", [R.MIN, R.MAX], ids=["min", "max"])
@pytest.mark.parametrize("bins", GRIDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int16,
                                   np.uint16, np.bool_])
def test_extremes(rng, red, bins, dtype):
    x, y = points(rng, 20_011)
    check(x, y, bins, weights_of(rng, x.size, dtype), red)


@pytest.mark.parametrize("red", [R.MIN, R.MAX], ids=["min", "max"])
def test_extremes_wide_weights(rng, red):
    """float64 and 32/64-bit integer weights: on the device when every one is a float32
    (one host check), else the cpu backend's result."""
    x, y = points(rng, 10_007)
    f = rng.normal(size=x.size).astype(np.float32)
    for w in (f.astype(np.float64), (f * 1000).astype(np.int32),
              np.int64([2**40, -3] * 5003 + [1])):
        check(x, y, (13, 9), w, red)
    for w in (np.float64([0.1]), np.int64([2**40 + 1]), np.uint32([2**24 + 1]), np.complex64([1])):
        assert E.f32_weights(w) is None
    assert E.f32_weights(np.float64([np.nan, np.inf, -0.0, 2.0**-149])) is not None
    w = rng.normal(size=x.size)
    rx, ry = histogram2d_rules(x, y, (13, 9), RANGE)
    assert W.histogram2d(x, y, rx, ry, w, red) is NotImplemented
    got = hotbin.backend.load("wgpu").histogram2d(x, y, rx, ry, w, red)
    np.testing.assert_array_equal(got[0], oracle(x, y, (13, 9), w, red.acc)[0])


@pytest.mark.parametrize("red", [R.MIN, R.MAX], ids=["min", "max"])
@pytest.mark.parametrize("bins", GRIDS)
def test_extremes_nan_inf_and_categories(rng, red, bins):
    """NaN weights are no value (not counted, the point still kept); a cell whose every
    weight is NaN holds the identity and n = 0; +-inf, subnormals and extremes are values."""
    x, y = points(rng, 20_011)
    w = (rng.normal(size=x.size) * 1e3).astype(np.float32)
    w[::7] = np.nan
    w[5::31] = np.resize(np.float32([np.inf, -np.inf, 1e-45, -3e38, 3.4e38]), w[5::31].size)
    hot = (x < 0.25) & (y < 0.25)
    w[hot] = np.nan
    codes = rng.integers(-1, 5, x.size)
    g, _ = check(x, y, bins, w, red)
    assert (g[1][:bins[0] // 4, :bins[1] // 4] == 0).all()
    assert (g[0][:bins[0] // 4, :bins[1] // 4] == red.identity[0]).all()
    check(x, y, bins, w, red, by=(codes, 4))
    check(x, y, bins, w, red, by=(codes.astype(np.int8), 4))


@pytest.mark.parametrize("red", [R.MIN, R.MAX], ids=["min", "max"])
@pytest.mark.parametrize("hot", [0.9, 1.0])
@pytest.mark.parametrize("bins", GRIDS)
def test_extremes_hot_cell(rng, red, hot, bins, few_groups):
    x, y = points(rng, 50_003, hot)
    w = rng.normal(size=x.size).astype(np.float32)
    w[::13] = np.nan
    check(x, y, bins, w, red)


def test_extremes_smallest_workgroup_storage(rng, monkeypatch):
    """WebGPU's guaranteed 16 KiB of workgroup memory: the cached global path sooner."""
    monkeypatch.setattr(D.gpu(), "wg_words", 4096)
    x, y = points(rng, 20_011, 0.5)
    w = rng.normal(size=x.size).astype(np.float32)
    for bins in ((40, 40), (2, 1000)):
        check(x, y, bins, w, R.MAX)
        check(x, y, bins, w, R.MIN, by=(rng.integers(0, 3, x.size), 3))


def test_extremes_layouts_and_empty(rng, monkeypatch):
    monkeypatch.setattr(D.gpu(), "chunk_bytes", 4096)
    x, y = points(rng, 30_002)
    w = rng.normal(size=(x.size, 2)).astype(np.float32)
    check(x[::2], y[::2], (9, 11), w[::2, 1], R.MIN)
    check(x, y, (9, 11), w[:, 0].astype(">f4"), R.MAX, by=(rng.integers(0, 4, x.size)[::-1], 3))
    empty = np.empty(0, np.float32)
    for red in (R.MIN, R.MAX):
        g, kept = check(empty, empty, (7, 5), empty, red)
        assert kept == 0 and (g[0] == red.identity[0]).all() and (g[1] == 0).all()
    far = np.full(100, 5.0, np.float32)  # no point in a cell
    check(far, far, (7, 5), w[:100, 0], R.MAX)


def test_signed_zeros_are_ordered():
    """-0.0 orders below +0.0 (IEEE 754 minimum/maximum): a cell holding both has min -0.0
    and max +0.0, whatever the order (the cpu backend keeps the first it sees)."""
    x = np.full(6, 0.5, np.float32)
    rx, ry = histogram2d_rules(x, x, (1, 1), RANGE)
    for w in (np.float32([-0.0, 0.0, 0.0, np.nan, 0.0, 0.0]), np.float32([0.0, -0.0] * 3)):
        lo = W.histogram2d(x, x, rx, ry, w, R.MIN)[0][0, 0, 0]
        hi = W.histogram2d(x, x, rx, ry, w, R.MAX)[0][0, 0, 0]
        assert lo == 0 and np.signbit(lo) and hi == 0 and not np.signbit(hi)


# --- the front door -------------------------------------------------------------------

@pytest.mark.parametrize("agg", ["count", "any", "sum", "mean", "min", "max", "std", "var"])
@pytest.mark.parametrize("by", [False, True])
def test_heatmap_every_agg(rng, agg, by, counters):
    """hotbin.heatmap(..., backend="wgpu") == backend="cpu" for every agg (all on the device but
    std / var's centred pass); float sums (sum, mean, std, var, the weighted count) to rounding:
    the device sums in fixed point, the cpu in float64."""
    if counters == "atomic64" and agg not in ("count", "min", "max"):
        pytest.skip("the fallback does not depend on the counters")
    x, y = points(rng, 20_011, 0.3)
    w = (rng.normal(size=x.size) * 10).astype(np.float32)
    w[::11] = np.nan
    kw = dict(agg=agg, width=24, height=16, x_range=(0, 1), y_range=(0, 1),
              by=rng.integers(-1, 4, x.size) if by else None)
    ww = None if agg in ("count", "any") else w
    got = hotbin.heatmap(x, y, ww, backend="wgpu", **kw)
    want = hotbin.heatmap(x, y, ww, backend="cpu", **kw)
    for attr in ("values", "counts", "points"):
        if attr == "values" and agg in ("sum", "mean", "std", "var"):
            np.testing.assert_allclose(got.values, want.values, rtol=1e-11, atol=1e-12)
        else:
            np.testing.assert_array_equal(getattr(got, attr), getattr(want, attr), err_msg=attr)
    assert (got.dropped, got.skipped) == (want.dropped, want.skipped)
    if agg == "count" and not by:
        sums = hotbin.heatmap(x, y, np.nan_to_num(w), backend="wgpu", **kw)  # weighted count
        np.testing.assert_allclose(
            sums.values, hotbin.heatmap(x, y, np.nan_to_num(w), backend="cpu", **kw).values,
            rtol=1e-11)
