"""Linked views of Dask data: the same table served from NumPy arrays and from dask arrays
(uneven partitions, an empty one and a one-row one, columns chunked unlike the map's) gives
the same histograms, maps, statistics, cells and drill-down rows, and both equal NumPy's
masks; the drill-down reads only the partitions its page is in."""
import io
import warnings

import numpy as np
import pytest

import hotbin

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("starlette")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
PIL = pytest.importorskip("PIL.Image")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from starlette.testclient import TestClient

from hotbin.serve import Dataset, create_app  # noqa: E402
from hotbin.serve.crossfilter import Crossfilter, Filters, Panel  # noqa: E402
from hotbin.serve.crossfilter_dask import DaskCrossfilter  # noqa: E402
from test_explore import _f, _ok  # noqa: E402  (the NumPy masks and the brushes' query)

N = 20_000
CHUNKS = ((3001, 0, 1, 6998, 10_000),)  # uneven, with an empty and a one-row partition
LABELS = ["cash", "card", "app"]


@pytest.fixture(scope="module", autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(20261205)
    x, y = rng.normal(0, 1, N), rng.normal(0, 1, N)
    fare = np.round(rng.gamma(2.0, 5.0, N), 1)  # many values exactly on brush ends and edges
    fare[rng.integers(0, N, 300)] = np.nan
    dist = rng.exponential(3.0, N)
    seats = rng.integers(0, 9, N)  # integers, every one on an edge
    kind = rng.integers(0, 3, N)
    note = np.array([f"t{i}" for i in range(N)], object)
    df = pd.DataFrame({"x": x, "y": y, "fare": fare, "dist": dist, "seats": seats,
                       "kind": np.array(LABELS)[kind], "note": note})
    return df, kind


def _dataset(df, kind, lazy, table):
    def col(a, chunks=CHUNKS):
        return da.from_array(a, chunks=chunks) if lazy else a

    hist = {"fare": col(df.fare.to_numpy()), "dist": col(df.dist.to_numpy(), 4096),
            "seats": df.seats.to_numpy()}  # a dask column chunked otherwise, a NumPy one
    return Dataset(col(df.x.to_numpy()), col(df.y.to_numpy()), by=col(kind), labels=LABELS,
                   hist=hist, panels={"fare": (25, 0.0, 50.0), "seats": (8, 0.0, 8.0)},
                   table=table, by_name="kind", backend="cpu")


@pytest.fixture(scope="module", params=["table", "columns"])
def clients(request, table):
    """``(memory, dask)`` test clients of the same data; with the input table for the
    drill-down, or with only the columns the server holds."""
    df, kind = table
    given = df if request.param == "table" else None
    with TestClient(create_app(_dataset(df, kind, False, given))) as mem, \
            TestClient(create_app(_dataset(df, kind, True, given))) as lazy:
        yield mem, lazy


CASES = [((), None, None), ((("fare", 10.0, 20.5),), None, None),
         ((("fare", 10.0, 20.5), ("seats", 2.0, 5.0)), None, ["cash", "app"]),
         ((("dist", 1.0, 2.0),), (-1.0, 0.5, -0.25, 1.5), None),
         ((("fare", 3.0, 30.0), ("x", -0.5, 2.0)), (-2.0, 2.0, -1.0, 1.0), ["card", "app"])]


def _both(clients, q):
    got = [c.get(q) for c in clients]
    assert [r.status_code for r in got] == [200, 200], got[1].text
    return got


@pytest.mark.parametrize("brushes, box, cats", CASES)
def test_hist_is_the_memory_servers_and_numpys(clients, table, brushes, box, cats):
    df, kind = table
    for column, bins, rng in [("fare", 25, (0.0, 50.0)), ("dist", None, None),
                              ("seats", 8, (0.0, 8.0)), ("x", 9, (-1.0, 1.0))]:
        q = f"/hist.json?column={column}" + (f"&bins={bins}&lo={rng[0]}&hi={rng[1]}" if bins else "")
        mem, lazy = (r.json() for r in _both(clients, q + _f(brushes, box, cats)))
        assert lazy == mem
        col = df[column].to_numpy()
        if rng is None:  # the column's finite extent, 40 bins
            fin = col[np.isfinite(col)]
            rng, bins = (fin.min(), fin.max()), 40
        ok = _ok(df, kind, [b for b in brushes if b[0] != column], box, cats)
        counts, edges = np.histogram(col[ok], bins, range=rng)
        assert lazy["counts"] == counts.tolist() and lazy["edges"] == edges.tolist()


@pytest.mark.parametrize("brushes, box, cats", CASES[1:])
def test_map_stats_and_cells_are_the_memory_servers_and_numpys(clients, table, brushes, box, cats):
    df, kind = table
    ok = _ok(df, kind, brushes, None, cats)  # the map ignores the box
    vq = "x0=-2.0&x1=2.0&y0=-1.5&y1=2.5&width=40&height=30" + _f(brushes, None, cats)
    hm = hotbin.heatmap(df.x[ok].to_numpy(), df.y[ok].to_numpy(), by=kind[ok], x_range=(-2.0, 2.0),
                        y_range=(-1.5, 2.5), width=40, height=30)
    mem, lazy = (r.json() for r in _both(clients, f"/stats.json?{vq}"))
    assert {k: lazy[k] for k in ("n", "in_view", "max")} == {k: mem[k] for k in ("n", "in_view", "max")}
    assert (lazy["n"], lazy["in_view"], lazy["max"]) == (N, int(hm.counts.sum()), int(hm.counts.max()))
    mem, lazy = (np.asarray(PIL.open(io.BytesIO(r.content)).convert("RGBA"))
                 for r in _both(clients, f"/render.png?{vq}"))
    np.testing.assert_array_equal(lazy, mem)
    np.testing.assert_array_equal(lazy, hm.shade()[::-1])
    j, i = np.unravel_index(np.argmax(hm.counts), hm.counts.shape)
    mem, lazy = (r.json() for r in _both(clients, f"/cell.json?{vq}&i={i}&j={j}"))
    assert lazy == mem and lazy["count"] == hm.counts[j, i]


@pytest.mark.parametrize("brushes, box, cats", CASES)
def test_rows_json_pages_are_the_memory_servers(clients, table, brushes, box, cats):
    df, kind = table
    want = np.flatnonzero(_ok(df, kind, brushes, box, cats))
    for offset, limit in [(0, 5), (int(want.searchsorted(3001)) - 2, 4), (len(want) - 3, 10),
                          (len(want) + 5, 3), (7, 0)]:
        q = f"/rows.json?limit={limit}&offset={offset}{_f(brushes, box, cats)}"
        mem, lazy = (r.json() for r in _both(clients, q))
        assert lazy == mem and lazy["count"] == len(want)
        notes = df.note.to_numpy()[want[offset:offset + limit]]
        assert [r[lazy["columns"].index("x")] for r in lazy["rows"]] == \
            df.x.to_numpy()[want[offset:offset + limit]].tolist()
        if "note" in lazy["columns"]:
            assert [r[-1] for r in lazy["rows"]] == notes.tolist()


@pytest.mark.parametrize("brushes, box, cats", CASES[2:])
def test_rows_csv_is_the_memory_servers(clients, table, brushes, box, cats):
    df, kind = table
    mem, lazy = _both(clients, f"/rows.csv?{_f(brushes, box, cats)[1:]}")
    assert lazy.content == mem.content
    got = pd.read_csv(io.StringIO(lazy.text), keep_default_na=False, na_values=["", "nan"])
    want = df[_ok(df, kind, brushes, box, cats)].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want[list(got.columns)], check_exact=True)


def test_bad_brushes_are_400_on_dask_data(clients):
    for c in clients:
        r = c.get("/hist.json?column=fare&f.nope=1,2")
        assert r.status_code == 400 and "nope" in r.json()["error"]


def test_the_drill_down_reads_only_its_pages_partitions(table):
    """A page of rows reads the partitions that hold it, not the others."""
    df, kind = table
    read = []

    def col(a):
        def seen(block, block_info=None):
            read.append(block_info[0]["chunk-location"][0])
            return block
        return da.from_array(a, chunks=CHUNKS).map_blocks(seen, dtype=a.dtype)

    data = Dataset(col(df.x.to_numpy()), col(df.y.to_numpy()), hist={"fare": col(df.fare.to_numpy())},
                   backend="cpu")
    ok = _ok(df, kind, [("fare", 5.0, 15.0)])
    f = data.linked.filters({"fare": (5.0, 15.0)})
    data.linked.rows(f, 1, 0)  # the pass, and the first page
    read.clear()
    offset = int(ok[:4000].sum()) + 10  # a row of the fourth partition
    got = data.linked.rows(f, 3, offset)
    assert got["count"] == ok.sum() and set(read) == {3}
    np.testing.assert_array_equal([r[0] for r in got["rows"]],
                                  df.x.to_numpy()[np.flatnonzero(ok)[offset:offset + 3]])


def test_dask_dataframe_columns_are_rows_by_position(table):
    """Columns of a dask DataFrame (partitions of unknown length, an index that is not the row
    number): brushes and the drill-down take rows by their place in the input."""
    dd = pytest.importorskip("dask.dataframe")
    df, kind = table
    df = df[["x", "y", "fare", "dist"]].set_axis(np.arange(N)[::-1])
    ddf = dd.from_pandas(df, npartitions=4, sort=False)
    data = Dataset(ddf.x.to_dask_array(), ddf.y.to_dask_array(),
                   hist={"fare": ddf.fare, "dist": ddf.dist}, backend="cpu")
    f = data.linked.filters({"fare": (10.0, 20.5)}, (-1.0, 1.0, -1.0, 1.0))
    ok = _ok(df, kind, [("fare", 10.0, 20.5)], (-1.0, 1.0, -1.0, 1.0))
    got = data.linked.rows(f, 6, 11)
    assert got["count"] == ok.sum() and got["columns"] == ["x", "y", "fare", "dist"]
    np.testing.assert_array_equal(got["rows"], df.to_numpy()[np.flatnonzero(ok)[11:17]])
    ok = _ok(df, kind, [], (-1.0, 1.0, -1.0, 1.0))  # the panel of fare ignores fare's brush
    assert data.linked.hist(f, Panel("fare", 10, 0.0, 50.0))["counts"] == \
        np.histogram(df.fare[ok], 10, (0.0, 50.0))[0].tolist()


def test_dask_crossfilter_over_big_partitions_equals_the_hosts():
    """Partitions past 65,536 rows run the host pass's chunked path; columns of other dtypes
    are compared as float64, as the host's copies."""
    rng = np.random.default_rng(5)
    n = 150_001
    a, b = np.round(rng.normal(0, 2, n), 2), rng.gamma(2, 2, n).astype(np.float32)
    x, y, codes = rng.normal(0, 1, n), rng.normal(0, 1, n), rng.integers(-1, 3, n)
    a[::1000] = np.nan
    chunks = ((70_000, 1, 80_000),)
    host = Crossfilter({"a": a, "b": b}, (x, y), codes, LABELS, "kind")
    lazy = DaskCrossfilter({"a": da.from_array(a, chunks=chunks), "b": b},
                           tuple(da.from_array(v, chunks=chunks) for v in (x, y)),
                           da.from_array(codes, chunks=chunks), LABELS, "kind")
    pre = [Panel("a", 30, -4.0, 4.0), Panel("b", 50, 0.0, 20.0)]
    for cf in (host, lazy):
        cf.prebin(pre)
    f = Filters((("a", -1.0, 1.5), ("b", 1.0, 6.0)), (0, 2), (-1.0, 1.2, -0.8, 1.0))
    panels = pre + [Panel("a", 7, -0.5, 0.5)]
    for g, h in zip(lazy.histograms(f, panels), host.histograms(f, panels)):
        np.testing.assert_array_equal(g, h)
    box = (x >= -1) & (x < 1.2) & (y >= -0.8) & (y < 1.0)
    shown = (a >= -1) & (a < 1.5) & (b >= 1) & (b < 6) & np.isin(codes, [0, 2])
    np.testing.assert_array_equal(lazy.passing(f), np.flatnonzero(box & shown))
    assert lazy.map_count(f) == host.map_count(f) == shown.sum()
    for c, full in zip(lazy.subset(f, [x, y, codes]), (x, y, codes)):
        np.testing.assert_array_equal(c.compute(), full[shown])
    assert lazy.data_range("b") == host.data_range("b")


def test_brushes_on_a_distributed_cluster(table):
    """The passes' tasks run on a cluster's workers (a distributed.Client in this process)."""
    distributed = pytest.importorskip("distributed")
    df, kind = table
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2,
                            dashboard_address=":0"), distributed.get_task_stream() as tasks:
        data = _dataset(df, kind, True, None)
        f = data.linked.filters({"fare": (10.0, 20.5), "kind": ["card"]}, (-1.0, 1.0, -1.0, 1.0))
        got = data.linked.hist(f, data.linked.panel("seats"))
        rows = data.passing({"fare": (10.0, 20.5), "kind": ["card"]}, (-1.0, 1.0, -1.0, 1.0))
    ran = {str(t["key"]) for t in tasks.data}
    assert any("_block_counts" in k for k in ran) and any("_passing_rows" in k for k in ran)
    ok = _ok(df, kind, [("fare", 10.0, 20.5)], (-1.0, 1.0, -1.0, 1.0), ["card"])
    assert got["counts"] == np.histogram(df.seats[ok], 8, (0.0, 8.0))[0].tolist()
    np.testing.assert_array_equal(rows, np.flatnonzero(ok))


@pytest.mark.slow  # a local cluster of processes starts and reads the file
def test_cli_serve_on_a_local_cluster_answers_brushes(tmp_path):
    """``hotbin serve --scheduler local --hist ...``: the category, the histograms' brushes and the
    box filter the map, the linked histograms and the drill-down, as NumPy's masks of the file's rows."""
    import json
    import re
    import signal
    import subprocess
    import sys
    import urllib.request

    pytest.importorskip("distributed")
    rng = np.random.default_rng(8)
    n = 5000
    x, y, v = rng.uniform(-74.1, -73.8, n), rng.uniform(40.6, 40.9, n), np.round(rng.uniform(0, 9, n), 1)
    kind = rng.choice(["yellow", "green"], n)
    path = tmp_path / "trips.csv"
    pd.DataFrame({"lon": x, "lat": y, "fare": v, "kind": kind}).to_csv(path, index=False)
    proc = subprocess.Popen([sys.executable, "-m", "hotbin", "serve", str(path), "--x", "lon", "--y", "lat",
                             "--agg", "mean:fare", "--by", "kind", "--hist", "fare:9:0:9", "--hist", "lat:6:40.6:40.9",
                             "--port", "0", "--no-browser", "--scheduler", "local"], stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while not (found := re.search(r"(http://127\.0\.0\.1:\d+/)", lines[-1] if lines else "")):
            lines.append(proc.stderr.readline())
            assert lines[-1], "".join(lines)
        url = found.group(1)

        def get(q):
            with urllib.request.urlopen(url + q, timeout=60) as r:
                return json.load(r)

        box, green = "x0=-74&x1=-73.9&y0=40.7&y1=40.8", kind == "green"
        inbox = (x >= -74) & (x < -73.9) & (y >= 40.7) & (y < 40.8)
        stats = get(f"stats.json?{box}&width=50&height=40&f.kind=green&f.fare=1,3")
        shown = green & (v >= 1) & (v < 3)
        assert stats["in_view"] == (shown & inbox).sum()
        hist = get(f"hist.json?column=fare&bins=9&lo=0&hi=9&f.kind=green&{box}")
        assert hist["counts"] == np.histogram(v[green & inbox], 9, (0, 9))[0].tolist()
        # the server's own panels (--hist), each filtered by every brush but its own
        fare = get(f"hist.json?column=fare&f.kind=green&f.lat=40.65,40.85&{box}")
        assert fare["counts"] == np.histogram(v[green & inbox & (y >= 40.65) & (y < 40.85)], 9, (0, 9))[0].tolist()
        lat = get(f"hist.json?column=lat&f.kind=green&f.lat=40.65,40.85&f.fare=1,3&{box}")
        assert lat["counts"] == np.histogram(y[shown & inbox], 6, (40.6, 40.9))[0].tolist()
        rows = get(f"rows.json?{box}&f.kind=green&f.fare=1,3&limit=4&offset=2")
        want = np.flatnonzero(shown & inbox)
        assert rows["count"] == want.size and rows["columns"] == ["lon", "lat", "fare", "kind"]
        assert [r[0] for r in rows["rows"]] == x[want[2:6]].tolist()
    finally:
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 0 and "Traceback" not in rest, rest
