"""hotbin.explore: the widget's brushes from Python, its selection against the input filtered by
NumPy masks (pandas, polars, pyarrow, DuckDB, dicts), half-open boxes, bad brushes named, the
server gone with the widget (the widget in JupyterLab: test_widget_lab.py)."""
import json
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest

import hotbin

pytest.importorskip("anywidget")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

N = 20_000


@pytest.fixture(scope="module")
def columns():
    """Coordinates on a quarter grid (points on every box bound), fares on whole numbers (on
    every brush bound) with NaNs, a category column, a text column nobody brushes."""
    rng = np.random.default_rng(20261204)
    lon = np.round(rng.normal(0, 1, N) * 4) / 4
    lat = np.round(rng.normal(0, 1, N) * 4) / 4
    fare = np.round(rng.gamma(2.0, 6.0, N))
    fare[::97] = np.nan
    dist = rng.exponential(3.0, N)
    kind = rng.choice(np.array(["bus", "cab", "car"]), N)
    note = np.array([f"row {i}" for i in range(N)])
    return {"lon": lon, "lat": lat, "fare": fare, "dist": dist, "kind": kind, "note": note}


def _table(kind, cols):
    if kind == "pandas":
        return pd.DataFrame(cols, index=np.arange(N) * 3)  # an index that is not the row numbers
    if kind == "polars":
        pl = pytest.importorskip("polars")
        return pl.DataFrame(cols)
    if kind == "pyarrow":
        return pa.table(cols)
    if kind == "duckdb":
        duckdb = pytest.importorskip("duckdb")
        con = duckdb.connect()
        con.register("trips", pa.table(cols))
        return con.sql("select * from trips")
    return dict(cols)


def _filtered(kind, data, mask):
    """The oracle: the input's own boolean filter by a NumPy mask."""
    if kind == "pandas":
        return data[mask]
    if kind == "polars":
        import polars as pl

        return data.filter(pl.Series(mask))
    if kind == "pyarrow":
        return data.filter(pa.array(mask))
    if kind == "duckdb":
        return data.to_arrow_table().filter(pa.array(mask))
    return {k: v[mask] for k, v in data.items()}


def _same(kind, got, want):
    if kind == "pandas":
        pd.testing.assert_frame_equal(got, want)
    elif kind == "polars":
        assert type(got) is type(want) and got.equals(want)
    elif kind in ("pyarrow", "duckdb"):
        assert isinstance(got, pa.Table) and got.schema == want.schema
        pd.testing.assert_frame_equal(got.to_pandas(), want.to_pandas())  # NaN equal to NaN
    else:
        assert got.keys() == want.keys()
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])


KINDS = ["pandas", "polars", "pyarrow", "duckdb", "dict"]


@pytest.fixture(scope="module", params=KINDS)
def widget(request, columns):
    data = _table(request.param, columns)
    w = hotbin.explore(data, x="lon", y="lat", hist=["fare", "dist"], by="kind")
    yield request.param, data, w
    w.close()


def _mask(cols, filters=(), box=None):
    m = np.ones(N, bool)
    for name, (lo, hi) in dict(filters).items():
        m &= (cols[name] >= lo) & (cols[name] < hi)
    if box is not None:
        x0, x1, y0, y1 = box
        m &= (cols["lon"] >= x0) & (cols["lon"] < x1) & (cols["lat"] >= y0) & (cols["lat"] < y1)
    return m


def test_filters_set_and_read_and_selection_is_the_filtered_input(widget, columns):
    kind, data, w = widget
    w.box = None
    w.filters = {"fare": [10, 20]}
    assert w.filters == {"fare": [10.0, 20.0]} and w.box is None
    mask = _mask(columns, {"fare": (10, 20)})
    assert 0 < mask.sum() < N and (columns["fare"] == 10).any() and (columns["fare"] == 20).any()
    _same(kind, w.selection(), _filtered(kind, data, mask))
    np.testing.assert_array_equal(w.rows(), np.flatnonzero(mask))  # input order
    w.filters = {"fare": [10, 20], "dist": [1.5, 4.0]}
    _same(kind, w.selection(), _filtered(kind, data, _mask(columns, w.filters)))
    w.filters = {}
    _same(kind, w.selection(), _filtered(kind, data, np.ones(N, bool)))


def test_box_is_half_open(widget, columns):
    kind, data, w = widget
    box = [-0.5, 0.75, -0.25, 1.0]  # on the quarter grid: points lie on every bound
    lon, lat = columns["lon"], columns["lat"]
    assert ((lon == -0.5) & (lat >= -0.25) & (lat < 1)).any() and ((lat == 1.0) & (lon >= -0.5)).any()
    w.filters, w.box = {}, box
    mask = _mask(columns, box=box)
    got = w.rows()
    np.testing.assert_array_equal(got, np.flatnonzero(mask))
    assert not np.isin(np.flatnonzero((lon == 0.75) | (lat == 1.0)), got).any()  # upper bounds out
    assert np.isin(np.flatnonzero(mask & ((lon == -0.5) | (lat == -0.25))), got).all()  # lower in
    w.filters = {"fare": [5, 30], "kind": ["bus", "car"]}
    _same(kind, w.selection(), _filtered(kind, data, _mask(columns, {"fare": (5, 30)}, box)
                                         & np.isin(columns["kind"], ["bus", "car"])))
    w.box = None
    w.filters = {}


def test_bad_brushes_are_errors_naming_them(widget):
    _, _, w = widget
    w.filters, w.box = {"fare": [1, 2]}, None
    with pytest.raises(ValueError, match="'nope'"):
        w.filters = {"nope": [1, 2]}
    with pytest.raises(ValueError, match="'fare'"):
        w.filters = {"fare": [3, 1]}
    with pytest.raises(ValueError, match="'fare'"):
        w.filters = {"fare": [1, 2, 3]}
    with pytest.raises(ValueError, match="'kind'.*'taxi'|'taxi'"):
        w.filters = {"kind": ["taxi"]}
    with pytest.raises(ValueError, match="box"):
        w.box = [1, 0, 0, 1]
    assert w.filters == {"fare": [1.0, 2.0]} and w.box is None  # unchanged
    w.filters = {}


def test_an_update_from_the_page_is_checked_like_one_from_python(widget, columns):
    """The comm delivers the page's state through set_state: the same checks apply."""
    kind, data, w = widget
    w.set_state({"filters": {"dist": [2, 3]}, "box": [-1, 1, -1, 1]})
    assert w.filters == {"dist": [2.0, 3.0]} and w.box == [-1.0, 1.0, -1.0, 1.0]
    _same(kind, w.selection(), _filtered(kind, data, _mask(columns, {"dist": (2, 3)}, [-1, 1, -1, 1])))
    with pytest.raises(ValueError, match="'nope'"):
        w.set_state({"filters": {"nope": [0, 1]}})
    w.filters, w.box = {}, None


def test_the_page_is_served_with_the_brushes(widget, columns):
    _, _, w = widget
    with urllib.request.urlopen(f"{w.url}hist.json?column=fare&bins=10&lo=0&hi=50&f.dist=1,4") as r:
        got = json.load(r)
    fare = columns["fare"][(columns["dist"] >= 1) & (columns["dist"] < 4)]
    counts, edges = np.histogram(fare, 10, (0, 50))
    assert got["counts"] == counts.tolist() and got["edges"] == edges.tolist()


def _free(url):
    host, port = url.split("//")[1].strip("/").split(":")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        return True
    return False


def _servers():
    """The threads of servers: uvicorn's and the render thread (not the process's cpu pools)."""
    return {t for t in threading.enumerate() if t.name.startswith(("hotbin-serve", "hotbin-render"))}


def test_close_stops_the_server_and_its_threads(columns):
    import gc

    gc.collect()  # earlier tests' widgets stop now, not while this one counts threads
    before = _servers()
    w = hotbin.explore(pd.DataFrame(columns), x="lon", y="lat", hist=["fare"])
    with urllib.request.urlopen(w.url + "stats.json") as r:
        assert json.load(r)["n"] == N
    assert len(_servers() - before) == 2
    w.close()
    assert w.closed and _servers() == before
    assert _free(w.url)
    w.close()  # twice: nothing left to do


def test_a_collected_widget_stops_its_server(columns):
    import gc
    import weakref

    before = _servers()
    w = hotbin.explore(pa.table(columns), x="lon", y="lat", hist=["dist"])
    url, ref = w.url, weakref.ref(w)
    super(type(w), w).close()  # the widget's comm closed, its registry entry gone; no stop()
    del w
    gc.collect()
    assert ref() is None
    assert _servers() == before and _free(url)


def test_import_hotbin_loads_no_widget_and_a_missing_extra_is_named():
    code = ("import sys, hotbin\n"
            "assert not {'anywidget', 'starlette', 'uvicorn', 'hotbin.serve'} & set(sys.modules)\n"
            "sys.modules['anywidget'] = None\n"
            "try:\n    hotbin.explore({'x': [1.0], 'y': [2.0]}, x='x', y='y')\n"
            "except ModuleNotFoundError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert 'pip install "hotbin[explore]"' in r.stdout and "anywidget" in r.stdout


def test_bad_arguments_are_named(columns):
    df, before = pd.DataFrame(columns), _servers()
    with pytest.raises(ValueError, match="'nope'"):
        hotbin.explore(df, x="lon", y="lat", hist=["nope"])
    with pytest.raises(ValueError, match="'note'"):  # text is not a number to histogram
        hotbin.explore(df, x="lon", y="lat", hist=["note"])
    with pytest.raises(ValueError, match="bins"):
        hotbin.explore(df, x="lon", y="lat", hist={"fare": 0})
    with pytest.raises(TypeError, match="data"):
        hotbin.explore(None, x="lon", y="lat")
    assert _servers() == before  # no server left running by a failed call


def test_the_comm_relays_only_paths_of_the_page(widget, columns):
    """transport="comm": the page's requests reach the kernel's server through the widget; a URL
    elsewhere, an absolute path or a header injection is refused, nothing fetched."""
    _, _, w = widget
    sent = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))  # the comm, recorded
    try:
        w._answer("a", "hist.json?column=fare&bins=10&lo=0&hi=50&f.dist=1,4")
        w._answer("b", "hist.json?column=nope")
        for k, bad in enumerate(["http://example.com/", "//example.com/x", "/etc/passwd",
                                 "info.json\r\nHost: evil", "\\\\server\\share"]):
            w._answer(f"bad{k}", bad)
    finally:
        del w.send
    (ok, body), (missing, err) = sent[:2]
    assert ok["status"] == 200 and ok["headers"]["Content-Type"].startswith("application/json")
    fare = columns["fare"][(columns["dist"] >= 1) & (columns["dist"] < 4)]
    assert json.loads(bytes(body[0]))["counts"] == np.histogram(fare, 10, (0, 50))[0].tolist()
    assert missing["status"] == 400 and "nope" in json.loads(bytes(err[0]))["error"]
    assert [c["id"] for c, _ in sent[2:]] == [f"bad{k}" for k in range(5)]
    assert all("not a path of the page" in c["error"] and b is None for c, b in sent[2:])
