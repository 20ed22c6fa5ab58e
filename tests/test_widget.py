"""hotbin.explore: the widget's brushes from Python, its selection against the input filtered by
NumPy masks (pandas, polars, pyarrow, DuckDB, dicts), half-open boxes, bad brushes named, the
server gone with the widget; and the widget in a real JupyterLab driven by headless Chromium."""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
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


# --- the widget in a real JupyterLab, in headless Chromium ---------------------------------

NOTEBOOK_CELLS = [
    "import numpy as np, pandas as pd, hotbin\n"
    "rng = np.random.default_rng(7)\n"
    "n = 200_000\n"
    "lon = np.concatenate([rng.normal(-73.98, 0.03, n // 2), rng.normal(-73.87, 0.02, n // 2)])\n"
    "lat = np.concatenate([rng.normal(40.75, 0.03, n // 2), rng.normal(40.77, 0.01, n // 2)])\n"
    "df = pd.DataFrame({'lon': lon, 'lat': lat, 'fare': rng.gamma(2.0, 7.0, n),\n"
    "                   'dist': rng.exponential(3.0, n)})\n"
    "w = hotbin.explore(df, x='lon', y='lat', hist=['fare', 'dist'], height=560)\n"
    "w",
    "w.filters = {'fare': [10, 20]}",
    "w.filters = {'fare': [5, 15]}",
    "import json; print('STATE', json.dumps(w.filters), len(w.selection()))",
]


def _notebook(path):
    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{k}", "metadata": {},
              "outputs": [], "source": src} for k, src in enumerate(NOTEBOOK_CELLS)]
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                      "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what, fn, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = fn()
        except Exception:  # not there yet (a stale element, a frame still loading)
            got = None
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab on a free port, with its own config, data and runtime folders; killed after."""
    pytest.importorskip("jupyterlab")
    pytest.importorskip("ipykernel")
    token, port = os.urandom(12).hex(), _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), IPYTHONDIR=str(tmp_path / "ipython"),
               JUPYTER_PLATFORM_DIRS="1")
    (tmp_path / "work").mkdir()
    _notebook(tmp_path / "work" / "explore.ipynb")
    news = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)  # no toast asking about Jupyter news over the widget
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    log = open(tmp_path / "jupyter.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={tmp_path / 'work'}", f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
         f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        def up():
            if proc.poll() is not None:
                raise AssertionError((tmp_path / "jupyter.log").read_text()[-3000:])
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    return r.status == 200
            except (urllib.error.URLError, OSError):
                return False

        deadline = time.monotonic() + 90
        while not up():
            assert time.monotonic() < deadline, "JupyterLab did not start"
            time.sleep(0.3)
        yield f"{base}/lab/tree/explore.ipynb?token={token}", tmp_path
    finally:  # the kernels first (they hold the widget's server), then the server itself
        try:
            with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=5) as r:
                kernels = json.load(r)
            for k in kernels:
                req = urllib.request.Request(f"{base}/api/kernels/{k['id']}?token={token}", method="DELETE")
                urllib.request.urlopen(req, timeout=20).close()
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(10)
        log.close()


def _browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    chrome = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    driver = shutil.which("chromedriver")
    if not (chrome and driver):
        pytest.skip("no headless Chromium here (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1400,1000", "--force-device-scale-factor=1"):
        opts.add_argument(a)
    opts.binary_location = chrome
    return webdriver.Chrome(service=Service(driver), options=opts)


def _pictures():
    d = pathlib.Path(os.environ.get("HOTBIN_ARTIFACTS") or pathlib.Path(__file__).parent / "artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _frame_page(d, script):
    """``script``'s value inside the widget's iframe (the driver back on the notebook after)."""
    frame = d.find_element("css selector", "iframe.hotbin-explore")
    d.switch_to.frame(frame)
    try:
        return d.execute_script(script)
    finally:
        d.switch_to.default_content()


def _run_cell(d, k):
    """Runs the notebook's cell ``k`` (click its editor, Shift+Enter)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    cell = d.find_elements("css selector", ".jp-Notebook .jp-Cell")[k]
    editor = cell.find_element("css selector", ".jp-InputArea-editor")
    ActionChains(d).click(editor).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
    return cell


def _output(d, k):
    cell = d.find_elements("css selector", ".jp-Notebook .jp-Cell")[k]
    return " ".join(o.text for o in cell.find_elements("css selector", ".jp-OutputArea-output"))


@pytest.mark.slow
def test_the_widget_in_jupyterlab(jupyterlab):
    """Open the notebook, run the cell that makes the widget: the page loads in its iframe with
    both histogram panels; a brush set from Python moves the page's brush; a brush dragged on
    the page is the widget's ``filters`` in the kernel."""
    from selenium.webdriver.common.action_chains import ActionChains

    url, tmp = jupyterlab
    d = _browser()
    try:
        d.set_page_load_timeout(60)
        d.get(url)
        _wait("the notebook", lambda: len(d.find_elements("css selector", ".jp-Notebook .jp-Cell")) == 4, 90)
        _wait("the kernel", lambda: d.find_elements(
            "css selector", ".jp-Notebook-ExecutionIndicator[data-status='idle']") or
            "Idle" in d.find_element("css selector", ".jp-StatusBar-Widget, #jp-main-statusbar").text, 90)
        _run_cell(d, 0)
        _run_cell(d, 1)  # w.filters = {'fare': [10, 20]}, before the page in the iframe has loaded
        _wait("the widget's iframe", lambda: d.find_elements("css selector", "iframe.hotbin-explore"), 180)
        panels = _wait("the page's histogram panels", lambda: _frame_page(
            d, "const p = document.querySelectorAll('#side .panel canvas'); "
               "return p.length === 2 && [...p].every(c => c.width > 0) && "
               "!document.body.dataset.busy && [...document.querySelectorAll('#side .panel')]"
               ".map(e => e.dataset.column)"), 120)
        assert panels == ["fare", "dist"]
        brushed = "return document.querySelector('.panel[data-column=fare] .panel-range').textContent"
        assert _wait("the brush set before the page loaded", lambda: _frame_page(d, brushed), 30) \
            .replace(",", "") == "[10.0 20.0)"
        d.execute_script("document.querySelector('iframe.hotbin-explore').scrollIntoView()")
        time.sleep(1.0)
        d.save_screenshot(str(_pictures() / "widget-1-jupyterlab.png"))

        _run_cell(d, 2)  # w.filters = {'fare': [5, 15]} from Python: the page's brush moves
        state = _wait("the brush set from Python on the page", lambda: _frame_page(
            d, brushed + " === '[5.0, 15.0)' && location.hash"), 60)
        assert "f.fare=5" in state, state  # the page's URL holds it too
        time.sleep(1.0)
        d.save_screenshot(str(_pictures() / "widget-2-brushed-from-python.png"))

        # a brush dragged on the dist panel reaches the kernel
        frame = d.find_element("css selector", "iframe.hotbin-explore")
        d.switch_to.frame(frame)
        try:
            canvas = d.find_element("css selector", ".panel[data-column=dist] canvas")
            w = canvas.size["width"]
            ActionChains(d).move_to_element_with_offset(canvas, -w // 2 + 70, 0).click_and_hold() \
                .move_by_offset(60, 0).release().perform()
        finally:
            d.switch_to.default_content()
        _run_cell(d, 3)
        out = _wait("the kernel's filters", lambda: "STATE" in _output(d, 3) and _output(d, 3), 60)
        filters = json.loads(out.split("STATE", 1)[1].rsplit("}", 1)[0] + "}")
        assert filters["fare"] == [5.0, 15.0] and set(filters) == {"fare", "dist"}, out
        lo, hi = filters["dist"]
        assert 0 <= lo < hi
        rng = np.random.default_rng(7)  # the notebook's data, filtered here by NumPy
        n = 200_000
        rng.normal(size=n // 2), rng.normal(size=n // 2), rng.normal(size=n // 2), rng.normal(size=n // 2)
        fare, dist = rng.gamma(2.0, 7.0, n), rng.exponential(3.0, n)
        want = int(((fare >= 5) & (fare < 15) & (dist >= lo) & (dist < hi)).sum())
        assert out.split()[-1] == str(want), out
        d.save_screenshot(str(_pictures() / "widget-3-brushed-on-the-page.png"))
    finally:
        d.quit()
