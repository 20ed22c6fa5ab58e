"""hotbin.explore in a real JupyterLab driven by headless Chromium (skipped without one): the
page loads in the widget's iframe, brushes set from Python before and after it loads move the
page's, a brush dragged on the page is the kernel's ``w.filters``, over HTTP and over the comm."""
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from conftest import chromium

pytest.importorskip("anywidget")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("pandas")

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
    "w2 = hotbin.explore(df, x='lon', y='lat', hist=['fare', 'dist'], height=560)\n"
    "w2.url = 'http://127.0.0.1:9/'  # as for a browser on another machine: nothing answers there\n"
    "w2.filters = {'dist': [1, 2]}\n"
    "w2",
    "print('STATE2', json.dumps(w2.filters), len(w2.selection()))",
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
    return chromium(1400, 1000)


def _pictures():
    d = pathlib.Path(os.environ.get("HOTBIN_ARTIFACTS") or pathlib.Path(__file__).parent / "artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _frame_page(d, script, k=0):
    """``script``'s value inside the ``k``-th widget's iframe (the driver back on the notebook
    after)."""
    frame = d.find_elements("css selector", "iframe.hotbin-explore")[k]
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


def _range(text):
    """The numbers of a panel's brush label, ``[lo, hi)`` written with the panel's digits."""
    import re

    return [float(v.replace(",", "")) for v in re.findall(r"-?[\d,]*\.?\d+(?:e[-+]?\d+)?", text or "")]


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
        _wait("the notebook", lambda: len(d.find_elements("css selector", ".jp-Notebook .jp-Cell")) == 6, 90)
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
        assert d.find_element("css selector", "iframe.hotbin-explore").get_attribute("data-transport") == "http"
        brushed = "return document.querySelector('.panel[data-column=fare] .panel-range').textContent"
        assert _range(_wait("the brush set before the page loaded", lambda: _frame_page(d, brushed), 30)) \
            == [10, 20]
        d.execute_script("document.querySelector('iframe.hotbin-explore').scrollIntoView()")
        time.sleep(1.0)
        d.save_screenshot(str(_pictures() / "widget-1-jupyterlab.png"))

        _run_cell(d, 2)  # w.filters = {'fare': [5, 15]} from Python: the page's brush moves
        with_url = f"return [{brushed[len('return '):]}, location.hash]"

        def moved():
            label, url_hash = _frame_page(d, with_url)
            return url_hash if _range(label) == [5, 15] else None

        state = _wait("the brush set from Python on the page", moved, 60)
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

        # the page over the widget's comm: transport "auto", and the browser cannot reach the
        # server's URL (as on JupyterHub), so the page's requests travel over the comm
        _run_cell(d, 4)
        ready = ("const p = document.querySelectorAll('#side .panel canvas'); "
                 "return p.length === 2 && document.body.dataset.shown && !document.body.dataset.busy && "
                 "document.querySelector('.panel[data-column=dist] .panel-range').textContent")
        assert _range(_wait("the page over the comm", lambda: _frame_page(d, ready, 1), 120)) == [1, 2]
        frame = d.find_elements("css selector", "iframe.hotbin-explore")[1]
        assert frame.get_attribute("data-transport") == "comm" and frame.get_attribute("src").startswith("blob:")
        status = _frame_page(d, "return document.getElementById('status').textContent", 1)
        want = int(((dist >= 1) & (dist < 2)).sum())
        assert f"{want:,}" in status, status  # the map's count of the rows passing the brush
        d.execute_script("arguments[0].scrollIntoView()", frame)
        d.switch_to.frame(frame)
        try:  # a brush dragged on the page over the comm reaches the kernel too
            canvas = d.find_element("css selector", ".panel[data-column=fare] canvas")
            w = canvas.size["width"]
            ActionChains(d).move_to_element_with_offset(canvas, -w // 2 + 70, 0).click_and_hold() \
                .move_by_offset(50, 0).release().perform()
        finally:
            d.switch_to.default_content()
        _run_cell(d, 5)
        out = _wait("the second widget's filters", lambda: "STATE2" in _output(d, 5) and _output(d, 5), 60)
        filters = json.loads(out.split("STATE2", 1)[1].rsplit("}", 1)[0] + "}")
        assert set(filters) == {"fare", "dist"} and filters["dist"] == [1.0, 2.0], out
        lo, hi = filters["fare"]
        want = int(((fare >= lo) & (fare < hi) & (dist >= 1) & (dist < 2)).sum())
        assert out.split()[-1] == str(want), out
        time.sleep(1.0)
        d.save_screenshot(str(_pictures() / "widget-4-over-the-comm.png"))
    finally:
        d.quit()
