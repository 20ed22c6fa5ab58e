"""Order statistics per heatmap cell (median, quantile, first, last) against NumPy, cell by cell.

The oracle bins each point with NumPy's searchsorted over the cells' linspace edges and
calls numpy.median / numpy.quantile (method="linear") on each cell's values (NaN weights
left out), or takes the cell's first / last value in the input's order.
"""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hotbin

W, H = 7, 5
QS = [0.0, 0.1, 0.5, 0.9, 1.0, [0.25, 0.75]]


def points(n, dtype=np.float64, seed=3, hot=0.0, nan=0.1, ties=False):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.1, 1.1, n)
    y = rng.uniform(-0.1, 1.1, n)
    k = int(hot * n)
    x[:k], y[:k] = 0.5, 0.5
    dt = np.dtype(dtype)
    if dt.kind == "f":
        w = (rng.integers(-3, 4, n) if ties else rng.normal(0, 100, n)).astype(dt)
        w[rng.random(n) < nan] = np.nan
    else:
        w = rng.integers(-50, 50, n).astype(dt) if ties else rng.integers(np.iinfo(dt).min // 2,
                                                                          np.iinfo(dt).max // 2, n, dtype=dt)
    return x, y, w


def oracle(x, y, w, agg, q=None, by=None, ncat=None):
    """values (float64) and value counts of every cell by NumPy."""
    edges_x, edges_y = np.linspace(0, 1, W + 1), np.linspace(0, 1, H + 1)
    ix = np.searchsorted(edges_x, x, side="right") - 1
    iy = np.searchsorted(edges_y, y, side="right") - 1
    inside = (x >= 0) & (x < 1) & (y >= 0) & (y < 1)
    ok = inside & ~(np.isnan(w) if w.dtype.kind == "f" else np.zeros(w.size, bool))
    cats = [None] if by is None else range(ncat)
    lead = () if q is None or np.ndim(q) == 0 else (len(q),)
    vals = np.full(lead + ((ncat,) if by is not None else ()) + (H, W), np.nan)
    n = np.zeros(((ncat,) if by is not None else ()) + (H, W), np.int64)
    for k, cat in enumerate(cats):
        for r in range(H):
            for c in range(W):
                m = ok & (ix == c) & (iy == r)
                if cat is not None:
                    m &= by == cat
                v = w[m]
                at = (r, c) if cat is None else (k, r, c)
                n[at] = v.size
                if v.size == 0:
                    continue
                with np.errstate(all="ignore"):
                    got = {"median": lambda: np.median(v), "quantile": lambda: np.quantile(v, q),
                           "first": lambda: v[0], "last": lambda: v[-1]}[agg]()
                vals[(Ellipsis,) + at] = np.asarray(got, np.float64)
    return vals, n


def same_bits(a, b):
    a, b = np.asarray(hotbin.backend.to_host(a)), np.asarray(b)
    assert a.shape == b.shape
    assert a.dtype == np.float64
    assert np.array_equal(a.view(np.int64), b.view(np.int64)) or np.array_equal(a, b, equal_nan=True), \
        np.argwhere(~((a == b) | (np.isnan(a) & np.isnan(b))))[:5]


def heat(x, y, w, agg, q=None, **kw):
    return hotbin.heatmap(x, y, w, agg=agg, q=q, width=W, height=H, x_range=(0, 1), y_range=(0, 1), **kw)


CASES = [("median", None)] + [("quantile", q) for q in QS] + [("first", None), ("last", None)]


@pytest.mark.parametrize("agg,q", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("n", [900, 40000])  # NumPy's small path and the kernels
def test_matches_numpy_cell_by_cell(backend, agg, q, dtype, n):
    x, y, w = points(n, dtype, ties=n == 900)
    hm = heat(x, y, w, agg, q, backend=backend)
    want, counts = oracle(x, y, w, agg, q)
    same_bits(hm.values, want)
    assert np.array_equal(hotbin.backend.to_host(hm.value_counts), counts)
    nan = int(np.isnan(w).sum()) if w.dtype.kind == "f" else 0
    inside = (x >= 0) & (x < 1) & (y >= 0) & (y < 1)
    assert hm.dropped == int((~inside).sum())
    assert hm.skipped == int((inside & (np.isnan(w) if nan else False)).sum())
    assert int(np.asarray(hotbin.backend.to_host(hm.counts)).sum()) + hm.skipped + hm.dropped == n


@pytest.mark.parametrize("agg,q", [("median", None), ("quantile", [0.1, 0.9]), ("first", None), ("last", None)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_cell_holds_every_point(backend, agg, q, dtype):
    n = 50000
    x, y, w = points(n, dtype, hot=1.0, nan=0.01)
    hm = heat(x, y, w, agg, q, backend=backend)
    want, _ = oracle(x, y, w, agg, q)
    same_bits(hm.values, want)
    assert np.isnan(np.asarray(hotbin.backend.to_host(hm.values))[..., 0, 0]).all()  # empty cells NaN


@pytest.mark.parametrize("agg,q", [("median", None), ("quantile", 0.9), ("first", None), ("last", None)])
def test_by_category(backend, agg, q):
    n = 30000
    x, y, w = points(n, np.float32)
    codes = np.random.default_rng(5).integers(-1, 4, n)  # -1: no category, skipped
    hm = heat(x, y, w, agg, q, by=codes, backend=backend)
    want, counts = oracle(x, y, w, agg, q, codes, 4)
    same_bits(hm.values, want)
    assert np.array_equal(hotbin.backend.to_host(hm.value_counts), counts)
    inside = (x >= 0) & (x < 1) & (y >= 0) & (y < 1)
    assert hm.skipped == int((inside & (np.isnan(w) | (codes < 0))).sum())


def test_point_order_and_threads_change_no_bit():
    x, y, w = points(60000, np.float64, ties=True)
    p = np.random.default_rng(1).permutation(x.size)
    for agg, q in (("median", None), ("quantile", [0.1, 0.5, 0.97])):
        same_bits(heat(x[p], y[p], w[p], agg, q).values, np.asarray(heat(x, y, w, agg, q).values))


def test_float32_weights_keep_numpys_float32_arithmetic():
    # float32 values whose float64 midpoint differs from the float32 one: NumPy adds in float32
    x = np.full(4, 0.5)
    w = np.array([1.0, 1.0 + 2**-23, 3e38, 3e38], np.float32)
    with np.errstate(over="ignore"):
        same_bits(heat(x[:2], x[:2], w[:2], "median").values[2, 3], np.float64(np.median(w[:2])))
        same_bits(heat(x[2:], x[2:], w[2:], "median").values[2, 3], np.float64(np.median(w[2:])))  # inf
    v = np.array([0.1, 0.7, 0.3], np.float32)
    for q in (0.3, [0.3]):  # a float is weak (float32 lerp), a list float64
        same_bits(heat(x[:3], x[:3], v, "quantile", q).values[..., 2, 3], np.asarray(np.quantile(v, q), np.float64))


def test_dask_uneven_chunks_shuffled_is_bitwise_the_same():
    da = pytest.importorskip("dask.array")
    x, y, w = points(30000, np.float64, ties=True)
    p = np.random.default_rng(2).permutation(x.size)
    chunks = (1000, 7000, 13, 20000, 1987)
    lazy = [da.from_array(a[p], chunks=(chunks,)) for a in (x, y, w)]
    for agg, q in (("median", None), ("quantile", [0.25, 0.75])):
        same_bits(heat(*lazy, agg, q).values, np.asarray(heat(x, y, w, agg, q).values))
    lazy = [da.from_array(a, chunks=(chunks,)) for a in (x, y, w)]
    for agg in ("first", "last"):  # the input's order across chunks
        same_bits(heat(*lazy, agg).values, oracle(x, y, w, agg)[0])


def test_first_last_across_dataframe_partitions():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    x, y, w = points(20000, np.float64)
    df = dd.from_pandas(pd.DataFrame({"x": x, "y": y, "w": w}), npartitions=5)  # chunks of unknown size
    for agg in ("first", "last"):
        hm = hotbin.heatmap("x", "y", "w", data=df, agg=agg, width=W, height=H, x_range=(0, 1), y_range=(0, 1))
        same_bits(hm.values, oracle(x, y, w, agg)[0])


def test_heatmaps_add_exactly():
    x, y, w = points(30000, np.float32)
    for agg, q in (("median", None), ("quantile", [0.1, 0.9]), ("first", None), ("last", None)):
        whole = heat(x, y, w, agg, q)
        first = pickle.loads(pickle.dumps(heat(x[:11111], y[:11111], w[:11111], agg, q)))  # a cluster's share
        parts = first + heat(x[11111:], y[11111:], w[11111:], agg, q)
        same_bits(parts.values, np.asarray(whole.values))
        assert np.array_equal(parts.value_counts, whole.value_counts)


def test_bad_q_is_a_value_error_naming_q():
    x, y, w = points(100)
    for q in (1.5, -0.1, np.nan, [0.5, 2], "half", [[0.5]]):
        with pytest.raises(ValueError, match="q"):
            heat(x, y, w, "quantile", q)
    with pytest.raises(ValueError, match="q: agg='quantile' needs q"):
        heat(x, y, w, "quantile")
    for agg in ("median", "mean", "first"):
        with pytest.raises(ValueError, match="q: only agg='quantile'"):
            heat(x, y, w, agg, 0.5)
    with pytest.raises(ValueError, match="needs weights"):
        hotbin.heatmap(x, y, agg="median")


@pytest.mark.parametrize("agg,flags,fn", [("median", [], np.median),
                                          ("quantile", ["--q", "0.9"], lambda v: np.quantile(v, 0.9))])
def test_cli_against_numpy(tmp_path, agg, flags, fn):
    from hotbin.cli import main

    rng = np.random.default_rng(9)
    n = 2000
    x, y, fare = rng.uniform(0, 1, n), rng.uniform(0, 1, n), np.round(rng.uniform(2, 80, n), 2)
    src = tmp_path / "trips.csv"
    src.write_text("x,y,fare\n" + "".join(f"{a:.17g},{b:.17g},{c:.17g}\n" for a, b, c in zip(x, y, fare)))
    out = tmp_path / "m.npy"
    assert main(["heatmap", str(src), "--x", "x", "--y", "y", "--agg", f"{agg}:fare", *flags, "--width", "4",
                 "--height", "3", "--x-range", "0,1", "--y-range", "0,1", "--chunk-rows", "700",
                 "-o", str(out)]) == 0
    got = np.load(out)
    ix, iy = np.floor(x * 4).astype(int), np.floor(y * 3).astype(int)
    for r in range(3):
        for c in range(4):
            assert got[r, c] == fn(fare[(ix == c) & (iy == r)])


def test_cli_q_is_checked(tmp_path, capsys):
    from hotbin.cli import main

    src = tmp_path / "t.csv"
    src.write_text("x,y,fare\n0.5,0.5,1\n")
    base = ["heatmap", str(src), "--x", "x", "--y", "y", "-o", str(tmp_path / "o.npy")]
    assert main(base + ["--agg", "quantile:fare"]) == 1
    assert "--q" in capsys.readouterr().err
    assert main(base + ["--agg", "quantile:fare", "--q", "1.5"]) == 1
    assert "--q" in capsys.readouterr().err
    assert main(base + ["--agg", "mean:fare", "--q", "0.5"]) == 1


@pytest.mark.cuda
@pytest.mark.parametrize("agg,q", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_cuda_device_arrays_match_numpy(agg, q, dtype):
    cp = pytest.importorskip("cupy")
    x, y, w = points(200000, dtype, hot=0.3, ties=True)
    hm = heat(cp.asarray(x), cp.asarray(y), cp.asarray(w), agg, q)
    assert isinstance(hm.values, cp.ndarray)
    want, counts = oracle(x, y, w, agg, q)
    same_bits(hm.values, want)
    assert np.array_equal(cp.asnumpy(hm.value_counts), counts)
    same_bits(hm.values, np.asarray(heat(x, y, w, agg, q, backend="cpu").values))


def test_wgpu_hands_the_cells_to_the_cpu():
    be = pytest.importorskip("hotbin.backend.wgpu")
    from hotbin.core.binning import cell_rule

    r = cell_rule(4, 0.0, 1.0, "width", False)
    assert be.cells2d(np.zeros(3), np.zeros(3), r, r) is NotImplemented  # documented: the cpu bins them


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300), st.sampled_from(["float32", "float64", "int16", "uint64"]),
       st.one_of(st.none(), st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1, max_size=3)),
       st.integers(0, 2**32 - 1))
def test_any_values_any_q_match_numpy(n, dtype, q, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-0.2, 1.2, n), rng.uniform(-0.2, 1.2, n)
    pool = rng.normal(0, 10.0 ** rng.integers(-3, 30), 5) if dtype.startswith("float") else \
        rng.integers(0, 2**15, 5)
    w = rng.choice(pool, n).astype(dtype)  # few distinct values: ties everywhere
    if dtype.startswith("float") and n:
        w[rng.random(n) < 0.2] = np.nan
    agg = "median" if q is None else "quantile"
    with np.errstate(over="ignore"):
        hm = heat(x, y, w, agg, q)
        want, counts = oracle(x, y, w, agg, q)
    same_bits(hm.values, want)
    assert np.array_equal(hm.value_counts, counts)


@pytest.mark.parametrize("agg, q", [("median", None), ("quantile", 0.9)])
def test_serve_views_hold_the_quantile_of_each_cell(agg, q):
    """``hotbin serve --agg quantile:COL --q Q``: every view's cells are numpy.quantile of their values."""
    from hotbin.serve.dataset import Dataset
    from hotbin.serve.params import View

    rng = np.random.default_rng(5)
    x, y = rng.uniform(0, 4, 3000), rng.uniform(0, 4, 3000)
    w = np.round(rng.gamma(2.0, 3.0, 3000), 1)
    data = Dataset(x, y, w, agg=agg, q=q, backend="cpu", x_range=(0, 4), y_range=(0, 4))
    hm = data.heatmap(View(0.0, 4.0, 0.0, 4.0, 4, 4))
    ix, iy = np.floor(x).astype(int), np.floor(y).astype(int)
    want = np.array([[np.quantile(w[(iy == r) & (ix == c)], 0.5 if q is None else q) for c in range(4)]
                     for r in range(4)])
    np.testing.assert_array_equal(np.asarray(hm.values), want)


def test_serve_refuses_a_quantile_without_q(capsys, tmp_path):
    from hotbin.cli import main

    path = tmp_path / "t.csv"
    path.write_text("x,y,fare\n0,0,1\n1,1,2\n")
    assert main(["serve", str(path), "--x", "x", "--y", "y", "--agg", "quantile:fare", "--no-browser",
                 "--port", "0"]) == 1
    assert "--q" in capsys.readouterr().err


def test_serve_closes_its_socket_when_the_data_fails(capsys, tmp_path):
    """The port is bound before the data is read; a data error closes it (no ResourceWarning,
    which this suite turns into an error)."""
    from hotbin.cli import main

    path = tmp_path / "t.csv"
    path.write_text("x,y,fare\n0,0,a\n1,1,b\n")
    assert main(["serve", str(path), "--x", "x", "--y", "y", "--agg", "median:fare", "--no-browser",
                 "--port", "0"]) == 1
    assert "fare" in capsys.readouterr().err


def test_float64_partials_merge_as_one_sort():
    """Chunks' (cell, key) rows merge by insertion into the largest (the CLI's stream of float64
    values): bit for bit the rows a sort of every pair gives, ties and many cells included."""
    from hotbin.core import order

    rng = np.random.default_rng(11)
    for _ in range(30):
        ncell = int(rng.integers(1, 5000))
        parts = []
        for _ in range(int(rng.integers(2, 6))):
            n = int(rng.integers(0, 2000))
            cells = rng.integers(0, ncell, n)
            keys = order.to_keys(np.round(rng.normal(size=n), 1))  # many equal values
            parts.append(order.sort_pairs(cells, keys, order.cell_bits(ncell)))
        both = np.concatenate(parts, axis=1)
        want = order.sort_pairs(both[0], both[1], order.cell_bits(ncell))
        np.testing.assert_array_equal(order.merge_pairs(parts, order.cell_bits(ncell), np.uint64), want)
