"""The crossfilter on the device (kernels/crossfilter.cu) against the host one and NumPy.

The same columns (float32, float64, float16, integers of several widths, bool; NaN, infinities,
values on bin edges and on brush ends, values outside every panel) held by the host
:class:`Crossfilter` (float64 copies, the numba pass) and by :class:`DeviceCrossfilter` (CuPy,
their own dtype, one kernel): every panel's counts bit for bit, the map's rows, their
compaction, the passing rows, under random brushes, boxes and categories, an empty selection
and every row; panels of 1 and 10,000 bins in shared copies, one copy and global atomics; a
served page's answers with CuPy data equal to NumPy data's. Skips without CuPy or a device.
"""
import warnings

import numpy as np
import pytest

cp = pytest.importorskip("cupy")
from hotbin.backend import cuda as cb  # noqa: E402

if not cb.available():
    pytest.skip("cuda backend: no CUDA device", allow_module_level=True)

from hotbin.backend.cuda import crossfilter as kx  # noqa: E402
from hotbin.serve.crossfilter import MAX_BINS, Crossfilter, Filters, Panel  # noqa: E402
from hotbin.serve.crossfilter_gpu import DeviceCrossfilter  # noqa: E402

pytestmark = pytest.mark.cuda
N = 100_003
LABELS = ["a", "b", "c", "d", "e"]


def columns(n, seed):
    """Host columns of every dtype the kernel reads; many values on edges of the panels below
    (multiples of 1/4, whole numbers), NaN and infinities, values outside, 64-bit integers
    past 2^53 (rounded to float64 alike on both sides)."""
    rng = np.random.default_rng(seed)
    f32 = (np.round(rng.normal(0, 3, n) * 4) / 4).astype(np.float32)
    f32[::101] = np.nan
    f32[5::997] = np.inf
    f32[7::991] = -np.inf
    f64 = rng.gamma(2.0, 5.0, n)
    f64[::3] = np.round(f64[::3])
    f64[1::89] = np.nan
    f16 = rng.uniform(-2, 2, n).astype(np.float16)
    big = rng.integers(-3, 3, n) * (2 ** 60) + rng.integers(-5, 5, n)
    return {"f32": f32, "f64": f64, "f16": f16, "i8": rng.integers(-128, 128, n).astype(np.int8),
            "u16": rng.integers(0, 1000, n).astype(np.uint16), "i32": rng.integers(-50, 50, n).astype(np.int32),
            "i64": big.astype(np.int64), "u64": rng.integers(0, 40, n).astype(np.uint64),
            "flag": rng.random(n) < 0.3}


def build(cols, seed, codes=True):
    """The host and the device crossfilters of ``cols`` (box axes float32 and float64; category
    codes -1 .. 5 of 5 labels: two codes in no category)."""
    rng = np.random.default_rng(seed + 1)
    n = len(next(iter(cols.values())))
    x = rng.normal(0, 1, n).astype(np.float32)
    y = rng.normal(0, 1, n)
    c = rng.integers(-1, 6, n) if codes else None
    host = Crossfilter(cols, (x, y), c, LABELS if codes else None, "cat")
    dev = DeviceCrossfilter({k: cp.asarray(v) for k, v in cols.items()}, (cp.asarray(x), cp.asarray(y)),
                            None if c is None else cp.asarray(c), LABELS if codes else None, "cat")
    return host, dev, (x, y, c)


PANELS = [Panel("f32", 40, -6.0, 6.0), Panel("f64", 25, 0.0, 50.0), Panel("i32", 100, -50.0, 50.0),
          Panel("i64", 7, -2.0 ** 61, 2.0 ** 61), Panel("f16", 1, -1.0, 1.0), Panel("u16", 1000, 0.0, 1000.0),
          Panel("flag", 2, 0.0, 1.0), Panel("u64", 9, 3.0, 30.0), Panel("i8", 13, -100.0, 100.0)]


def oracle(cols, xyc, f: Filters, panel: Panel):
    """numpy.histogram of the panel's column (as float64) over the rows passing every brush
    of ``f`` but the panel's own."""
    x, y, c = np.asarray(xyc[0], np.float64), xyc[1], xyc[2]  # the box compared in float64
    n = len(x)
    ok = np.ones(n, bool)
    for name, lo, hi in f.ranges:
        if name != panel.column:
            v = np.asarray(cols[name], np.float64)
            ok &= (v >= lo) & (v < hi)
    if f.box is not None:
        x0, x1, y0, y1 = f.box
        ok &= (x >= x0) & (x < x1) & (y >= y0) & (y < y1)
    if f.cats is not None and panel.column != "cat":
        ok &= np.isin(c, f.cats)
    v = np.asarray(cols[panel.column], np.float64)[ok]
    return np.histogram(v, panel.bins, (panel.lo, panel.hi))[0]


def random_filters(rng, cols, xyc, k):
    """Brushes on ``k`` random columns, ends taken from the data (values on the ends, and one
    ulp off them), a box sometimes, categories sometimes."""
    names = list(cols)
    ranges = []
    for name in rng.choice(names, k, replace=False):
        v = np.asarray(cols[name], np.float64)
        v = v[np.isfinite(v)]
        lo, hi = np.sort(rng.choice(v, 2))
        if rng.random() < 0.3:
            lo = np.nextafter(lo, -np.inf) if rng.random() < 0.5 else np.nextafter(lo, np.inf)
        if not lo < hi:
            hi = lo + 1.0
        ranges.append((str(name), float(lo), float(hi)))
    box = None
    if rng.random() < 0.5:
        x0, x1 = np.sort(rng.choice(xyc[0], 2)).astype(np.float64)
        box = (float(x0), float(x1) + 0.5, -1.0, float(rng.uniform(0, 2)))
    cats = tuple(sorted(set(rng.integers(0, 5, rng.integers(0, 4)).tolist()))) if rng.random() < 0.5 else None
    return Filters(tuple(sorted(ranges)), cats, box)


def same(host, dev, f, panels, arrays):
    """Every answer of ``dev`` equals ``host``'s under ``f``."""
    want, got = host.histograms(f, panels), dev.histograms(f, panels)
    for p, w, g in zip(panels, want, got):
        assert isinstance(g, np.ndarray) and g.dtype == np.int64, p
        np.testing.assert_array_equal(g, w, err_msg=str(p))
    np.testing.assert_array_equal(cp.asnumpy(dev.passing(f)), host.passing(f))
    assert dev.map_count(f) == host.map_count(f)
    rows = host.map_rows(f)
    drows = dev.map_rows(f)
    assert (rows is None) == (drows is None)
    if rows is not None:
        np.testing.assert_array_equal(cp.asnumpy(drows), rows)
    cut, dcut = host.subset(f, arrays), dev.subset(f, [None if a is None else cp.asarray(a) for a in arrays])
    assert (cut is None) == (dcut is None)
    if cut is not None:
        for a, b in zip(cut, dcut):
            assert (a is None) == (b is None)
            if a is not None:
                assert b.dtype == a.dtype
                np.testing.assert_array_equal(cp.asnumpy(b), a)
    return got


@pytest.fixture(params=["shared", "one copy", "global"])
def layout(request, monkeypatch):
    """The panels' counts in 32 (or fewer) private copies, in one copy past the budget, or in
    global atomics (bins that fit in no block's shared memory)."""
    if request.param == "one copy":
        monkeypatch.setattr(kx, "PRIVATE_BYTES", 0)
    elif request.param == "global":
        monkeypatch.setattr(kx, "copies_for", lambda slots, smem: 0)
    return request.param


@pytest.mark.parametrize("seed", range(4))
def test_random_brushes_equal_the_host_and_numpy(seed, layout):
    cols = columns(N, seed)
    host, dev, xyc = build(cols, seed)
    host.prebin(PANELS[:4])
    dev.prebin(PANELS[:4])
    rng = np.random.default_rng(seed)
    arrays = [xyc[0], xyc[1], cols["f64"], None]
    for k in (0, 1, 2, 4, 9):
        f = random_filters(rng, cols, xyc, k)
        got = same(host, dev, f, PANELS, arrays)
        for p, g in zip(PANELS[:3], got):
            np.testing.assert_array_equal(g, oracle(cols, xyc, f, p), err_msg=f"{p} {f}")


def test_brush_ends_compare_float32_values_in_float64():
    """A float32 value equal to a brush end passes at lo and fails at hi; one ulp of float64
    below it is a different bound (no rounding of the bound to float32)."""
    v = np.float32(0.1)
    cols = {"a": np.array([v, v, np.nextafter(v, np.float32(1)), 0.0], np.float32),
            "b": np.arange(4.0)}
    host, dev, xyc = build(cols, 0, codes=False)
    p = [Panel("b", 4, 0.0, 4.0)]
    for lo, hi, want in ((float(v), 1.0, [1, 1, 1, 0]), (0.0, float(v), [0, 0, 0, 1]),
                         (np.nextafter(float(v), 2.0), 1.0, [0, 0, 1, 0])):
        f = Filters((("a", float(lo), float(hi)),))
        np.testing.assert_array_equal(dev.histograms(f, p)[0], want)
        same(host, dev, f, p, [xyc[0], None])


def test_float32_values_bin_by_the_float64_edges():
    """float32(0.7) is below the float64 edge 0.7000000000000001 of 10 bins over [0, 1] and
    above its float32 rounding: bin 6, as the host's float64 copy of it (float32 edges: 7)."""
    a = np.array([0.7, 0.7, 0.3, 0.1, 1.0, 0.0, -0.0, np.nextafter(np.float32(1), np.float32(2))], np.float32)
    host, dev, xyc = build({"a": a}, 2, codes=False)
    p = [Panel("a", 10, 0.0, 1.0)]
    want = np.histogram(a.astype(np.float64), 10, (0.0, 1.0))[0]
    assert want[6] == 2
    f = Filters((("a", 0.0, 0.9),))
    np.testing.assert_array_equal(dev.histograms(f, p)[0], want)
    same(host, dev, f, p, [xyc[0], None])


def test_empty_selection_and_every_row(layout):
    cols = columns(N, 9)
    cols = {k: v for k, v in cols.items() if k not in ("f32", "f64")}  # no NaN: a brush can hold every row
    host, dev, xyc = build(cols, 9)
    panels = [Panel("i32", 10, -50.0, 50.0), Panel("u16", 1, 0.0, 1000.0), Panel("f16", MAX_BINS, -2.0, 2.0)]
    arrays = [xyc[0], xyc[1], None, xyc[2].astype(np.int32)]
    none = Filters((("i32", 1000.0, 2000.0),))  # no row: every other panel empty, its own full
    got = same(host, dev, none, panels, arrays)
    assert got[0].sum() == N and got[1].sum() == 0 and got[2].sum() == 0
    assert dev.passing(none).size == 0 and dev.subset(none, [cp.asarray(xyc[0])])[0].size == 0
    every = Filters((("i32", -50.0, 50.0), ("u16", 0.0, 1000.0)), (0, 1, 2, 3, 4))
    ok = (xyc[2] >= 0) & (xyc[2] < 5)
    got = same(host, dev, every, panels, arrays)
    assert got[1].tolist() == [int(ok.sum())]  # one bin: every row passing the categories
    every_row = Filters((("i32", -50.0, 50.0),))
    np.testing.assert_array_equal(cp.asnumpy(dev.passing(every_row)), np.arange(N))
    assert dev.map_count(every_row) == N


def test_many_panels_of_max_bins_and_panels_asked_besides():
    """Panels of 10,000 bins whose slots fit in no shared memory (global atomics), and panels
    binned on first ask (besides the prebinned ones)."""
    cols = columns(N, 3)
    host, dev, xyc = build(cols, 3)
    big = [Panel(c, MAX_BINS, lo, hi) for c, lo, hi in (("f32", -6.0, 6.0), ("f64", 0.0, 60.0),
                                                           ("u16", 0.0, 1000.0), ("i32", -50.0, 50.0),
                                                           ("f16", -2.0, 2.0), ("i8", -128.0, 128.0))]
    assert kx.copies_for(sum(p.bins for p in big), 227 << 10) == 0
    host.prebin(big[:2])
    dev.prebin(big[:2])
    f = Filters((("f64", 3.0, 20.0), ("i8", -30.0, 90.0)), (1, 3), (-1.0, 1.0, -2.0, 0.5))
    same(host, dev, f, big, [xyc[0], xyc[1], None, None])
    f2 = Filters((("f32", -1.0, 2.25),))
    got = same(host, dev, f2, big[2:] + [Panel("u64", 1, 0.0, 40.0)], [xyc[1]])
    assert got[-1].sum() == np.count_nonzero((cols["f32"] >= -1.0) & (cols["f32"] < 2.25))


def test_data_range_and_columns_stay_in_their_dtype():
    cols = columns(1000, 4)
    host, dev, _ = build(cols, 4)
    for name in cols:
        assert dev.data_range(name) == host.data_range(name), name
    assert dev.cols[0].dtype == np.float32 and dev.cols[list(cols).index("f16")].dtype == np.float32
    assert dev.cols[list(cols).index("i64")].dtype == np.int64
    nan = DeviceCrossfilter({"z": cp.full(5, cp.nan)}, (cp.zeros(5), cp.zeros(5)))
    assert nan.data_range("z") == (0.0, 1.0)


def test_pass_launch_counts_every_row_once():
    """The kernel alone: state bytes and counts of rows passing, failing and in no bin."""
    n = 70_001
    a = cp.arange(n, dtype=cp.float64) % 10
    bins = (a * 2).astype(cp.uint16)  # 20 bins; rows with a >= 5 in "none" for a 10-bin panel
    binned = cp.where(a < 5, bins, 10).astype(cp.uint16)
    state, counts = kx.crossfilter_pass(n, [(a, 2.0, 7.0, 1)], None, 0, [(binned, 0, 10), (binned, 1, 10)])
    av = cp.asnumpy(a)
    ok = (av >= 2) & (av < 7)
    np.testing.assert_array_equal(cp.asnumpy(state), np.where(ok, 3, 0))
    want_other = np.bincount((av[ok] * 2).astype(int)[av[ok] < 5], minlength=10)
    want_own = np.bincount((av * 2).astype(int)[av < 5], minlength=10)
    np.testing.assert_array_equal(cp.asnumpy(counts), np.concatenate([want_other, want_own]))


def test_served_hist_with_cupy_data_equals_numpy_data():
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")  # starlette's TestClient
    pytest.importorskip("pyarrow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from starlette.testclient import TestClient
    from hotbin.serve import Dataset, create_app

    cols = columns(50_000, 11)
    hist = {"f32": cols["f32"], "f64": cols["f64"], "i32": cols["i32"]}
    rng = np.random.default_rng(11)
    x, y = rng.normal(0, 1, 50_000).astype(np.float32), rng.normal(0, 1, 50_000)
    kind = rng.integers(0, 3, 50_000)
    kw = dict(labels=["p", "q", "r"], panels={"f32": (40, -6.0, 6.0)}, by_name="kind")
    host = Dataset(x, y, by=kind, hist=hist, backend="cpu", **kw)
    dev = Dataset(cp.asarray(x), cp.asarray(y), by=cp.asarray(kind), backend="cuda",
                  hist={k: cp.asarray(v) for k, v in hist.items()}, **kw)
    assert isinstance(dev.linked.cf, DeviceCrossfilter) and not isinstance(host.linked.cf, DeviceCrossfilter)
    queries = ["/hist.json?column=f32", "/hist.json?column=f64&bins=30&lo=0&hi=60&f.f32=-1,2.5",
               "/hist.json?column=i32&bins=100&lo=-50&hi=50&f.f64=2,9&f.kind=p,r&x0=-1&x1=1&y0=-1&y1=0.5",
               "/hist.json?column=f32&f.f32=0,1&f.i32=-10,10",
               "/stats.json?x0=-2&x1=2&y0=-2&y1=2&width=64&height=48&f.f64=5,10&f.kind=q",
               "/rows.json?limit=5&offset=3&f.f32=-0.5,0.5&f.kind=q,r&x0=-1&x1=1&y0=-1&y1=1"]
    with TestClient(create_app(host)) as hc, TestClient(create_app(dev)) as dc:
        for q in queries:
            want, got = hc.get(q), dc.get(q)
            assert want.status_code == got.status_code == 200, q
            want, got = want.json(), got.json()
            want.pop("ms", None)
            got.pop("ms", None)
            assert got == want, q
    ok = (cols["f32"] >= 0) & (cols["f32"] < 1) & (cols["i32"] >= -10) & (cols["i32"] < 10)
    want = np.histogram(cols["f64"][ok], 30, (0, 60))[0]
    got = dev.linked.hist(dev.linked.filters({"f32": (0, 1), "i32": (-10, 10)}), dev.linked.panel("f64", 30, 0, 60))
    assert got["counts"] == want.tolist()
