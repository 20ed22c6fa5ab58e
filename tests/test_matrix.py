"""Every front door on every backend and on Dask, from one table, against NumPy.

Each row of :data:`DOORS` is a public call and its NumPy oracle; the test runs every row on
every backend (the ``backend`` fixture: cpu, cuda, wgpu where usable) with NumPy input and
with Dask input (chunked unevenly), and compares the answer with the oracle's. A new front
door or a new backend joins the matrix by one row or one name. The data is shaped like real
data: whole numbers, values on and next to edges, constants on an edge, outliers, NaN and
infinities, and int64 beyond 2**53.
"""
import numpy as np
import pytest

import hotbin

from conftest import to_numpy

da = pytest.importorskip("dask.array")

N = 3001  # odd: the Dask chunks below are uneven
RNG = np.random.default_rng(20261205)


def _values():
    """float64 values with edges of (0, 1) in 8 bins, their neighbours, NaN, inf, outliers."""
    e = np.linspace(0, 1, 9)
    v = np.concatenate([RNG.uniform(-0.1, 1.1, N - 3 * e.size - 6), e, np.nextafter(e, -1), np.nextafter(e, 2),
                        [np.nan, np.inf, -np.inf, 1e300, -1e300, 0.5]])
    return RNG.permutation(v)


X = _values()
Y = np.round(RNG.normal(0.5, 0.3, N), 2)  # values rounded to a grid
Z = np.full(N, 0.25)  # a constant on an edge
W = RNG.integers(-3, 9, N).astype(np.float64)  # whole weights: sums exact in any order
W[::97] = np.nan
INTS = RNG.integers(0, 40, N)
BIG = np.int64(2**53) + RNG.integers(-20, 20, N)
CODES = RNG.integers(0, 3, N).astype(np.int32)
IMAGE = RNG.integers(0, 256, (31, 97, 3), dtype=np.uint8)  # 97 columns: 3 uneven chunks
FINITE = np.isfinite(W)


def _cells(x, y, width, height, xr, yr):
    """Each point's cell under the heatmap rule (half-open on both axes), -1 for none."""
    xe, ye = np.linspace(*xr, width + 1), np.linspace(*yr, height + 1)
    with np.errstate(invalid="ignore"):
        ix = np.searchsorted(xe, x, "right") - 1
        iy = np.searchsorted(ye, y, "right") - 1
        ok = (ix >= 0) & (ix < width) & (iy >= 0) & (iy < height) & (x < xr[1]) & (y < yr[1])
    return np.where(ok, iy * width + ix, -1)


def _heatmap_oracle(agg, by=False):
    """NumPy's answer for ``hotbin.heatmap(X, Y, W, agg=agg, width=8, height=6)`` over (0, 1)²."""
    cell = _cells(X, Y, 8, 6, (0.0, 1.0), (0.0, 1.0))
    groups = CODES if by else np.zeros(N, np.int32)
    ncat = 3 if by else 1
    out = np.full((ncat, 48), np.nan)
    for g in range(ncat):
        for c in range(48):
            sel = (cell == c) & (groups == g)
            w = W[sel & FINITE]
            if agg == "count":
                out[g, c] = sel.sum()
            elif w.size:
                out[g, c] = {"sum": np.sum, "mean": np.mean, "min": np.min, "max": np.max,
                             "var": np.var, "std": np.std}[agg](w)
    out = out.reshape(ncat, 6, 8)
    return out if by else out[0]


def _heatmap(agg, by=False):
    def call(a, backend):
        return hotbin.heatmap(a["x"], a["y"], None if agg == "count" else a["w"], agg=agg,
                              by=a["c"] if by else None, width=8, height=6,
                              x_range=(0, 1), y_range=(0, 1), backend=backend).values
    return call


def _luma_oracle(img):
    r, g, b = (img[..., k].astype(np.int64) for k in range(3))
    return (2126 * r + 7152 * g + 722 * b) // 10000


#: (name, call(inputs, backend), oracle(), tolerance: 0 for exact)
DOORS = [
    ("histogram", lambda a, b: hotbin.histogram(a["x"], 8, (0, 1), backend=b),
     lambda: np.histogram(X, 8, (0, 1)), 0),
    ("histogram-weights", lambda a, b: hotbin.histogram(a["x"], 8, (0, 1), weights=a["w0"], backend=b),
     lambda: np.histogram(X, 8, (0, 1), weights=np.nan_to_num(W)), 0),
    ("histogram-grid-data-range", lambda a, b: hotbin.histogram(a["y"], 13, backend=b),
     lambda: np.histogram(Y, 13), 0),
    ("histogram-constant-on-edge", lambda a, b: hotbin.histogram(a["z"], 4, (0, 1), backend=b),
     lambda: np.histogram(Z, 4, (0, 1)), 0),
    ("histogram-int64-2**53", lambda a, b: hotbin.histogram(a["big"], 5, (2**53 - 9, 2**53 + 11), backend=b),
     lambda: np.histogram(BIG, 5, (2**53 - 9, 2**53 + 11)), 0),
    ("histogram_bin_edges", lambda a, b: hotbin.histogram_bin_edges(a["y"], 7),
     lambda: np.histogram_bin_edges(Y, 7), 0),
    ("hist", lambda a, b: hotbin.hist(a["x"], 8, (0, 1), backend=b).values(),
     lambda: np.histogram(X, 8, (0, 1))[0], 0),
    ("histogram2d", lambda a, b: hotbin.histogram2d(a["x"], a["y"], [8, 5], [(0, 1), (0, 1)], backend=b),
     lambda: np.histogram2d(X, Y, [8, 5], [(0, 1), (0, 1)]), 0),
    ("histogramdd", lambda a, b: hotbin.histogramdd(a["xyz"], [4, 3, 2], [(0, 1), (0, 1), (0, 0.5)], backend=b),
     lambda: np.histogramdd(np.stack([X, Y, Z], 1), [4, 3, 2], [(0, 1), (0, 1), (0, 0.5)]), 0),
    ("bincount", lambda a, b: hotbin.bincount(a["i"], backend=b), lambda: np.bincount(INTS), 0),
    ("bincount-weights", lambda a, b: hotbin.bincount(a["i"], weights=a["w0"], minlength=50, backend=b),
     lambda: np.bincount(INTS, weights=np.nan_to_num(W), minlength=50), 0),
    ("cumsum", lambda a, b: hotbin.cumsum(a["i"], backend=b), lambda: np.cumsum(INTS), 0),
    ("cumsum-exclusive", lambda a, b: hotbin.cumsum(a["i"], exclusive=True, backend=b),
     lambda: np.concatenate([[0], np.cumsum(INTS)[:-1]]), 0),
    ("luminance", lambda a, b: hotbin.luminance(a["img"]), lambda: _luma_oracle(IMAGE), 0),
    ("luminance_histogram", lambda a, b: hotbin.luminance_histogram(a["img"], backend=b),
     lambda: np.bincount(_luma_oracle(IMAGE).ravel(), minlength=256), 0),
    ("heatmap-count", _heatmap("count"), lambda: _heatmap_oracle("count"), 0),
    ("heatmap-count-by", _heatmap("count", True), lambda: _heatmap_oracle("count", True), 0),
    *[(f"heatmap-{agg}", _heatmap(agg), lambda agg=agg: _heatmap_oracle(agg), 0 if agg in ("sum", "min", "max") else 1e-12)
      for agg in ("sum", "mean", "min", "max", "var", "std")],
    *[(f"heatmap-{agg}-by", _heatmap(agg, True), lambda agg=agg: _heatmap_oracle(agg, True), 0 if agg != "mean" else 1e-12)
      for agg in ("sum", "mean", "max")],
]


def _inputs(dask):
    """The inputs of every row, as NumPy or as unevenly chunked Dask arrays."""
    a = {"x": X, "y": Y, "z": Z, "w": W, "w0": np.nan_to_num(W), "i": INTS, "big": BIG, "c": CODES,
         "xyz": np.stack([X, Y, Z], 1), "img": IMAGE}
    if not dask:
        return a
    chunks = (1000, 1500, 501)
    out = {k: da.from_array(v, chunks=(chunks,) + v.shape[1:]) for k, v in a.items() if k != "img"}
    out["img"] = da.from_array(IMAGE, chunks=(31, (40, 40, 17), 3))
    return out


def _host(r):
    if isinstance(r, tuple):
        return tuple(_host(v) for v in r)
    if isinstance(r, list):
        return [_host(v) for v in r]
    if hasattr(r, "compute") and not isinstance(r, np.ndarray):
        r = r.compute()
    return np.asarray(to_numpy(r))


def _same(got, want, tol, name):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            _same(g, w, tol, name)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    if tol:
        np.testing.assert_allclose(got, want, rtol=tol, atol=0, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(got.astype(want.dtype) if got.dtype.kind in "iuf" and want.dtype.kind == "f"
                                      else got, want, err_msg=name)


@pytest.mark.parametrize("dask", [False, True], ids=["numpy", "dask"])
@pytest.mark.parametrize("name, call, oracle, tol", DOORS, ids=[d[0] for d in DOORS])
def test_every_door_on_every_backend(backend, name, call, oracle, tol, dask):
    a = _inputs(dask)
    got = call(a, backend)
    if dask and name not in ("hist",) and not name.startswith("heatmap"):
        # arrays from Dask inputs stay lazy (result objects, hist and heatmap, compute)
        leaves = got if isinstance(got, (tuple, list)) else (got,)
        assert any(hasattr(v, "dask") for v in leaves), f"{name}: a Dask input gave computed arrays"
    _same(_host(got), oracle(), tol, name)


def test_the_table_covers_every_front_door():
    """A front door left out of the table fails here: the matrix is the list of doors."""
    doors = {"histogram", "histogram2d", "histogramdd", "histogram_bin_edges", "bincount", "cumsum", "hist",
             "heatmap", "luminance", "luminance_histogram"}
    named = {d[0].split("-")[0] for d in DOORS}
    assert doors <= named, doors - named


@pytest.mark.parametrize("door", ["histogram", "histogram2d", "histogramdd"])
def test_empty_float_weights_give_float_sums(backend, door):
    """Empty input with float weights: float64 zeros, as NumPy (NumPy's bincount of nothing is int64)."""
    e = np.array([])
    call = {"histogram": lambda: (hotbin.histogram(e, 3, (0, 1), weights=e, backend=backend),
                                  np.histogram(e, 3, (0, 1), weights=e)),
            "histogram2d": lambda: (hotbin.histogram2d(e, e, 3, [(0, 1)] * 2, weights=e, backend=backend),
                                    np.histogram2d(e, e, 3, [(0, 1)] * 2, weights=e)),
            "histogramdd": lambda: (hotbin.histogramdd([e, e, e], 3, [(0, 1)] * 3, weights=e, backend=backend),
                                    np.histogramdd([e, e, e], 3, [(0, 1)] * 3, weights=e))}[door]
    got, want = call()
    got = to_numpy(got[0])
    assert got.dtype == want[0].dtype == np.float64
    np.testing.assert_array_equal(got, want[0])
