"""The stream executor (hotbin.exec.stream): heatmaps over a source of record batches, a batch at a
time, equal to the same heatmap of the whole arrays in memory (exact aggregations bit for bit,
float sums bitwise with deterministic=True), and the CLI's chunks counted through it."""
import gc
import weakref

import numpy as np
import pytest

import hotbin
from hotbin.exec.executor import Executor
from hotbin.exec.local import executor as local_executor
from hotbin.exec.ops import Op, histogram2d
from hotbin.exec.stream import Batches, Stream
from hotbin.core.binning import cell_rule

W, H = 7, 5


class Source:
    """Columns cut into batches at ``cuts`` (each loop a new pass; ``extent``: a stand-in query)."""

    def __init__(self, cols, cuts, query=False):
        self.cols, self.cuts, self.loops, self.queries = cols, cuts, 0, 0
        if query:
            self.extent = self._extent

    def __iter__(self):
        self.loops += 1
        n = len(self.cols[0])
        for a, b in zip(self.cuts[:-1], self.cuts[1:]):
            yield [c[a:b] for c in self.cols], b / max(n, 1)

    def _extent(self, axes):
        self.queries += 1
        out = []
        for k in axes:
            v = self.cols[k][np.isfinite(self.cols[k])]
            out.append((float(v.min()), float(v.max())) if v.size else None)
        return out


@pytest.fixture
def points():
    rng = np.random.default_rng(11)
    n = 2000
    x, y = rng.normal(0, 1, n), rng.uniform(-3, 3, n)
    w = np.round(rng.gamma(2, 5, n), 3)
    w[::13] = np.nan  # no value: skipped
    x[::29] = np.nan  # no coordinate: dropped
    y[5] = np.inf
    by = rng.integers(0, 3, n)
    by[1700:] = rng.integers(3, 5, n - 1700)  # categories 3 and 4 only in the later batches
    by[::31] = -1  # no category
    return x, y, w, by


CUTS = {
    "uneven": [0, 1, 1, 300, 301, 1699, 1700, 2000],  # with an empty batch and one of one row
    "one": [0, 2000],
}


def _columns(points, cuts, query=False):
    src = Source(list(points), cuts, query)
    b = Batches(src)
    x, y, w = (b.column(k) for k in range(3))
    return src, b, x, y, w, b.column(3, np.int64, labels=range(5))


def _same(got, want, exact=True):
    for f in ("counts", "values", "points", "value_counts"):
        g, v = getattr(got, f), getattr(want, f)
        if exact or v.dtype.kind != "f":
            assert g.dtype == v.dtype and g.shape == v.shape, f
            np.testing.assert_array_equal(g, v, err_msg=f, strict=True)
        else:
            np.testing.assert_allclose(g, v, rtol=1e-13, atol=0, equal_nan=True, err_msg=f)
    assert (got.dropped, got.skipped, got.x_range, got.y_range, got.x_closed, got.y_closed, got.categories) \
        == (want.dropped, want.skipped, want.x_range, want.y_range, want.x_closed, want.y_closed, want.categories)


def test_a_stream_is_an_executor(points):
    assert isinstance(Stream(Batches(Source(list(points), CUTS["one"]))), Executor)
    assert not Stream(Batches(Source(list(points), CUTS["one"]))).lazy


EXACT = ("count", "any", "min", "max", "median", "quantile", "first", "last")


@pytest.mark.parametrize("cuts", CUTS)
@pytest.mark.parametrize("agg", EXACT)
@pytest.mark.parametrize("by", [False, True])
def test_exact_aggregations_equal_memory_bit_for_bit(points, cuts, agg, by):
    x, y, w, codes = points
    src, b, xs, ys, ws, bys = _columns(points, CUTS[cuts])
    weighted = agg not in ("count", "any")
    q = 0.3 if agg == "quantile" else None
    got = hotbin.heatmap(xs, ys, ws if weighted else None, agg=agg, by=bys if by else None, width=W, height=H, q=q)
    want = hotbin.heatmap(x, y, w if weighted else None, agg=agg, by=codes if by else None, width=W, height=H, q=q)
    _same(got, want)
    assert b.rows == len(x)


@pytest.mark.parametrize("agg", ["count", "max", "first", "median"])
def test_every_backend_runs_the_batches_as_in_memory(points, backend, agg):
    """The batches on each backend (cpu, cuda, wgpu), partials merged on its device: the cells of
    the same heatmap in memory on that backend, bit for bit."""
    x, y, w, codes = points
    _, _, xs, ys, ws, bys = _columns(points, CUTS["uneven"])
    weighted = agg != "count"
    got = hotbin.heatmap(xs, ys, ws if weighted else None, agg=agg, by=bys, width=W, height=H, backend=backend)
    want = hotbin.heatmap(x, y, w if weighted else None, agg=agg, by=codes, width=W, height=H, backend=backend)
    _same(got, want)


@pytest.mark.parametrize("agg", ["count", "sum", "mean", "var", "std"])
def test_float_sums_equal_memory_bitwise_when_deterministic(points, agg):
    x, y, w, codes = points
    if agg == "count":  # a weighted count needs finite weights in fixed point
        w = np.nan_to_num(w)
    _, _, xs, ys, ws, bys = _columns((x, y, w, codes), CUTS["uneven"])
    got = hotbin.heatmap(xs, ys, ws, agg=agg, by=bys, width=W, height=H, deterministic=True)
    want = hotbin.heatmap(x, y, w, agg=agg, by=codes, width=W, height=H, deterministic=True)
    _same(got, want)


@pytest.mark.parametrize("agg", ["count", "sum", "mean", "var", "std"])
def test_float_sums_equal_memory_to_rounding(points, agg):
    """Without deterministic the batches' sums add in another order: equal to the last bits."""
    x, y, w, _ = points
    _, _, xs, ys, ws, _ = _columns(points, CUTS["uneven"])
    _same(hotbin.heatmap(xs, ys, ws, agg=agg, width=W, height=H),
          hotbin.heatmap(x, y, w, agg=agg, width=W, height=H), exact=False)


def test_first_and_last_follow_row_order_across_batches():
    """Every point in one cell: first is row 0's value, last the last row's, whatever batch they
    are in (a NaN weight is no value); an oracle in plain NumPy."""
    n = 50
    x, y = np.zeros(n), np.zeros(n)
    w = np.arange(n, dtype=np.float64)
    w[0] = w[-1] = np.nan
    src = Source([x, y, w], [0, 1, 1, 7, 30, 49, 50])
    b = Batches(src)
    xs, ys, ws = (b.column(k) for k in range(3))
    kw = dict(width=1, height=1, x_range=(-1, 1), y_range=(-1, 1))
    assert hotbin.heatmap(xs, ys, ws, agg="first", **kw).values[0, 0] == w[1]
    assert hotbin.heatmap(xs, ys, ws, agg="last", **kw).values[0, 0] == w[-2]


def test_counts_against_numpy_and_one_pass(points):
    """A count is one pass over the batches, the ranges from the source's query (no pass), the
    counts numpy.histogram2d's."""
    x, y, _, _ = points
    src, b, xs, ys, _, _ = _columns(points, CUTS["uneven"], query=True)
    hm = hotbin.heatmap(xs, ys, width=W, height=H)
    assert (src.loops, src.queries) == (1, 1)
    ok = np.isfinite(x) & np.isfinite(y)
    want, _, _ = np.histogram2d(y[ok], x[ok], bins=(H, W), range=(hm.y_range, hm.x_range))
    np.testing.assert_array_equal(hm.counts, want.astype(np.int64))
    assert hm.dropped == (~ok).sum()


def test_extents_percentiles_and_stats_against_numpy(points):
    x, y, w, _ = points
    for query in (False, True):
        src, b, xs, ys, ws, _ = _columns(points, CUTS["uneven"], query=query)
        ex = Stream(b)
        fx, fy = x[np.isfinite(x)], y[np.isfinite(y)]
        assert ex.finite_extents([xs, ys]) == [(fx.min(), fx.max()), (fy.min(), fy.max())]
        assert src.loops == (0 if query else 1)
    assert ex.percentiles([xs], (5, 95)) == [(np.percentile(fx, 5, method="lower"),
                                             np.percentile(fx, 95, method="higher"))]
    fin = np.where(np.isnan(w), 0, w)
    m, n = ex.stats(ex.each(lambda a: np.where(np.isnan(a), 0, a), ws))
    assert (m, n) == (np.abs(fin).max(), len(w))
    assert ex.extents([ys]) == [(y[~np.isnan(y)].min(), np.inf)]


def test_run_folds_the_batches_partials_as_one_block(points):
    """Stream.run of an Op: the Local executor's result on the whole arrays (counts and tally)."""
    x, y, _, _ = points
    _, b, xs, ys, _, _ = _columns(points, CUTS["uneven"])
    rules = (cell_rule(H, -3.0, 3.0, "height", False), cell_rule(W, -2.0, 2.0, "width", False))
    op = Op(histogram2d, rules, (H, W), tally=True)
    got = Stream(b).run(op, ys, xs)
    want = local_executor(None, y, x).run(op, y, x)
    for g, v in zip(got, want):
        np.testing.assert_array_equal(g, v, strict=True)


def test_rules_from_the_extent_and_no_string_rules(points):
    _, b, *_ = _columns(points, CUTS["uneven"])
    ex = Stream(b)

    def build(arrays, minmax):
        return [cell_rule(6, *(float(v) for v in minmax(arrays[0])), "width", True)]

    codes = b.column(3, np.int64)  # integers from -1 (no category) to 4
    np.testing.assert_array_equal(ex.rules(build, [codes])[0].edges, np.linspace(-1, 4, 7))
    with pytest.raises(ValueError, match="bins: the string rule 'auto' needs all the data"):
        ex.check_bins(["auto", 4])


def test_no_batch_is_the_empty_heatmap():
    e = np.zeros(0)
    b = Batches(Source([e, e, e], [0]))
    xs, ys, ws = (b.column(k) for k in range(3))
    hm = hotbin.heatmap(xs, ys, ws, agg="mean", width=3, height=2)
    want = hotbin.heatmap(e, e, e, agg="mean", width=3, height=2)
    _same(hm, want)
    assert b.rows == 0


def test_a_batch_at_a_time():
    """Batches made as they are read are freed as the pass moves on: at most two alive."""
    alive, most = [0], [0]

    def gone():
        alive[0] -= 1

    class Made:
        def __iter__(self):
            rng = np.random.default_rng(0)
            for _ in range(20):
                cols = [rng.normal(size=1000), rng.normal(size=1000)]
                alive[0] += 1
                most[0] = max(most[0], alive[0])
                weakref.finalize(cols[0], gone)
                yield cols, 0.0
                del cols
                gc.collect()

    b = Batches(Made())
    hm = hotbin.heatmap(b.column(0), b.column(1), width=4, height=4, x_range=(-5, 5), y_range=(-5, 5))
    assert int(hm.counts.sum()) + hm.dropped == 20_000 and most[0] <= 2


def test_columns_of_another_stream_or_arrays_are_refused(points):
    x, _, _, _ = points
    _, _, xs, _, _, _ = _columns(points, CUTS["one"])
    _, _, _, ys, _, _ = _columns(points, CUTS["one"])
    with pytest.raises(TypeError, match="y: expected a column of the same stream .* another stream"):
        hotbin.heatmap(xs, ys)
    with pytest.raises(TypeError, match="y: expected a column of the same stream .* ndarray"):
        hotbin.heatmap(xs, x)


# --- the CLI: hotbin heatmap counts its chunks through the stream executor ------------------------

@pytest.fixture(scope="module")
def trips(tmp_path_factory):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    pytest.importorskip("duckdb")
    rng = np.random.default_rng(5)
    n = 3000
    df = pd.DataFrame({"lon": rng.uniform(-20, 20, n), "lat": rng.uniform(-5, 88, n),
                       "fare": np.round(rng.gamma(2, 6, n), 2), "vendor": rng.choice(["VTS", "CMT"], n),
                       "zone": rng.integers(0, 3, n)})
    df.loc[::97, "fare"] = np.nan  # no value: skipped
    df.loc[::131, "lon"] = np.nan  # no coordinate: dropped
    df.loc[2990:, "vendor"] = "AAA"  # a category only the last chunk holds (sorts first)
    df.loc[2995:, "zone"] = 5  # integer categories 3, 4 empty, 5 in the last chunk only
    df.loc[10:20, "lon"] = 200.0  # off the Web Mercator map
    df.loc[30:35, "lat"] = 89.5
    path = tmp_path_factory.mktemp("trips") / "trips.csv"
    df.to_csv(path, index=False)
    return df, path


def _cli(path, out, *extra):
    from hotbin.cli import main

    assert main([str(v) for v in ["heatmap", path, "--x", "lon", "--y", "lat", "--width", W, "--height", H,
                                  "--chunk-rows", 333, "-o", out, *extra]]) == 0
    return np.load(out)


CLI = [("count", None, ()), ("any", None, ()), ("min", "fare", ()), ("max", "fare", ()),
       ("median", "fare", ()), ("quantile", "fare", ("--q", "0.3")), ("first", "fare", ()),
       ("last", "fare", ()), ("count", None, ("--by", "vendor")), ("count", None, ("--by", "zone")),
       ("first", "fare", ("--by", "vendor")), ("max", "fare", ("--clip", "1,99")),
       ("count", None, ("--clip", "0.5,99.5"))]


@pytest.mark.parametrize("agg, value, extra", CLI)
def test_cli_exact_aggregations_equal_memory_bit_for_bit(trips, tmp_path, agg, value, extra):
    """Ten chunks of 333 rows: the cells of hotbin.heatmap on all the rows in memory, bit for bit."""
    df, path = trips
    got = _cli(path, tmp_path / "out.npy", "--agg", agg if value is None else f"{agg}:{value}", *extra)
    kw = dict(zip(extra[::2], extra[1::2]))
    by = kw.get("--by")
    clip = tuple(float(v) for v in kw["--clip"].split(",")) if "--clip" in kw else None
    q = float(kw["--q"]) if "--q" in kw else None
    want = hotbin.heatmap("lon", "lat", value, agg=agg, by=by, data=df, width=W, height=H, clip=clip, q=q)
    np.testing.assert_array_equal(got, want.counts if agg == "count" and by is None else want.values,
                                  strict=True)


def test_cli_projected_equals_memory(trips, tmp_path):
    """--project mercator: the points on the map in Web Mercator metres, the ranges those of the
    map's points (the data layer's query, in degrees, projected), as hotbin.heatmap in memory."""
    from hotbin.render.project import MAX_LAT, mercator

    df, path = trips
    got = _cli(path, tmp_path / "out.npy", "--agg", "last:fare", "--project", "mercator")
    lon, lat = df.lon.to_numpy(), df.lat.to_numpy()
    on = (np.abs(lon) <= 180) & (np.abs(lat) <= MAX_LAT)
    mx, my = mercator(np.where(on, lon, np.nan), np.where(on, lat, np.nan))
    ok = on & np.isfinite(lon)
    x_range = tuple(float(v) for v in mercator(np.array([lon[ok].min(), lon[ok].max()]), 0.0)[0])
    y_range = tuple(float(v) for v in mercator(0.0, np.array([lat[ok].min(), lat[ok].max()]))[1])
    want = hotbin.heatmap(mx, my, df.fare.to_numpy(), agg="last", width=W, height=H, x_range=x_range,
                          y_range=y_range, closed=True)
    np.testing.assert_array_equal(got, want.values, strict=True)


def test_cli_counts_once_through_the_stream_executor(trips, tmp_path, monkeypatch):
    """One hotbin.heatmap call over the stream's columns (not one per chunk merged with +), its
    counting pass one kernel call per chunk; var takes a second pass (the squares about the means)."""
    from hotbin.exec import ops
    from hotbin.exec.stream import Column

    mod = __import__("sys").modules["hotbin.heatmap"]
    real_heatmap, real_kernel, calls, chunks = mod.heatmap, ops.histogram2d, [], []

    def heatmap(x, *a, **k):
        calls.append(type(x))
        return real_heatmap(x, *a, **k)

    def kernel(be, op, data, w, red):
        chunks.append(len(data[0]))
        return real_kernel(be, op, data, w, red)

    monkeypatch.setattr(mod, "heatmap", heatmap)
    monkeypatch.setattr(ops, "histogram2d", kernel)
    monkeypatch.setattr(hotbin.Heatmap, "__add__", _no_sum_of_heatmaps)
    df, path = trips
    _cli(path, tmp_path / "out.npy", "--agg", "var:fare")
    assert calls == [Column]
    assert chunks == 2 * ([333] * 9 + [len(df) - 9 * 333])


def _no_sum_of_heatmaps(*_):
    raise AssertionError("the CLI merges partials by the reductions, not heatmaps by +")


def test_cli_cluster_folds_the_shares_partials(trips, tmp_path, monkeypatch):
    """--scheduler local: each share's batches folded on a worker (its rows numbered after the
    shares before it), the shares' partials folded once (no heatmaps added): last and the median
    of every category are those of hotbin.heatmap in memory, bit for bit."""
    pytest.importorskip("distributed")
    monkeypatch.setattr(hotbin.Heatmap, "__add__", _no_sum_of_heatmaps)
    df, _ = trips
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, (a, b) in enumerate([(0, 2000), (2000, 2001), (2001, len(df))]):  # one share of one row
        df.iloc[a:b].to_csv(folder / f"part{i}.csv", index=False)
    for agg in ("last", "median"):
        got = _cli(folder, tmp_path / f"{agg}.npy", "--agg", f"{agg}:fare", "--by", "zone", "--scheduler", "local")
        want = hotbin.heatmap("lon", "lat", "fare", agg=agg, by="zone", data=df, width=W, height=H)
        np.testing.assert_array_equal(got, want.values, strict=True)
