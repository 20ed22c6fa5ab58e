"""``hotbin serve`` over HTTP: every view equals ``hotbin.heatmap`` of the same ranges and size,
bad parameters are 400s that leave the server alive, tiles are the XYZ extents, 50 concurrent
clients against a real uvicorn, stale jobs dropped; and the page in a real headless Chromium
(skipped when none is installed; CI installs Debian's chromium and chromium-driver)."""
import asyncio
import base64
import io
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import warnings

import numpy as np
import pytest

import hotbin
from conftest import chromium
from hotbin.render.project import mercator, tile_bounds

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
PIL = pytest.importorskip("PIL.Image")
with warnings.catch_warnings():  # starlette >= 1 warns when only httpx (not httpx2) is there
    warnings.simplefilter("ignore", DeprecationWarning)
    from starlette.testclient import TestClient

from hotbin.serve import Dataset, Shading, background, create_app  # noqa: E402
from hotbin.serve.encode import png_bytes  # noqa: E402
from hotbin.serve.worker import Busy, Gone, Worker  # noqa: E402

N = 60_000
VIEW = dict(x0=-2.0, x1=2.0, y0=-1.5, y1=2.5, width=160, height=120)


def _q(**p):
    return "&".join(f"{k}={v}" for k, v in p.items())


def _decode(content):
    return np.asarray(PIL.open(io.BytesIO(content)).convert("RGBA"))


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(20261201)
    x, y = rng.normal(0, 1, N), rng.normal(0.5, 1.2, N)
    x[:500] = np.round(x[:500] * 4) / 4  # points exactly on cell edges and on the view's bounds
    y[:500] = np.round(y[:500] * 4) / 4
    x[500:510] = np.nan
    return x, y, rng.gamma(2.0, 3.0, N), rng.integers(0, 3, N)


@pytest.fixture(scope="module")
def client(points):
    x, y, _, _ = points
    with TestClient(create_app(Dataset(x, y))) as c:
        yield c


@pytest.mark.parametrize("view", [VIEW, dict(x0=-0.5, x1=0.75, y0=0.25, y1=1.0, width=97, height=61),
                                  dict(x0=-50.0, x1=50.0, y0=-50.0, y1=50.0, width=64, height=64),
                                  dict(x0=3.0, x1=4.0, y0=30.0, y1=31.0, width=8, height=8)])
@pytest.mark.parametrize("how, cmap", [("eq_hist", "inferno"), ("log", "viridis")])
def test_render_is_the_heatmap_of_the_view(client, points, view, how, cmap):
    x, y = points[:2]
    r = client.get(f"/render.png?{_q(**view, how=how, cmap=cmap)}")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    hm = hotbin.heatmap(x, y, x_range=(view["x0"], view["x1"]), y_range=(view["y0"], view["y1"]),
                        width=view["width"], height=view["height"])
    img = _decode(r.content)
    np.testing.assert_array_equal(img, hm.shade(how=how, cmap=cmap)[::-1])  # north up
    np.testing.assert_array_equal(img[::-1, :, 3] > 0, hm.counts > 0)
    stats = json.loads(r.headers["x-hotbin-stats"])
    assert stats["n"] == N and stats["in_view"] == hm.counts.sum() and stats["max"] == hm.counts.max()
    s = client.get(f"/stats.json?{_q(**view)}").json()
    assert {k: s[k] for k in ("n", "in_view", "max")} == {"n": N, "in_view": int(hm.counts.sum()),
                                                          "max": int(hm.counts.max())}
    assert s["ms"] >= 0


def test_every_backend_serves_the_same_view(points, backend):
    x, y = points[:2]
    hm = hotbin.heatmap(x, y, x_range=(VIEW["x0"], VIEW["x1"]), y_range=(VIEW["y0"], VIEW["y1"]),
                        width=VIEW["width"], height=VIEW["height"], backend="cpu")
    with TestClient(create_app(Dataset(x, y, backend=backend))) as c:
        r = c.get(f"/render.png?{_q(**VIEW)}")
        np.testing.assert_array_equal(_decode(r.content), hm.shade()[::-1])
        stats = json.loads(r.headers["x-hotbin-stats"])
        assert (stats["in_view"], stats["max"]) == (hm.counts.sum(), hm.counts.max())
        j, i = np.unravel_index(np.argmax(hm.counts), hm.counts.shape)
        assert c.get(f"/cell.json?{_q(**VIEW, i=i, j=j)}").json()["count"] == hm.counts[j, i]


def test_stats_without_a_view_are_the_whole_data(client, points):
    s = client.get("/stats.json").json()
    assert s["n"] == N and s["in_view"] == N - 10  # all but the NaN points
    info = client.get("/info.json").json()
    x0, x1, y0, y1 = info["home"]
    x, y = points[:2]
    assert x0 < np.nanmin(x) and x1 > np.nanmax(x) and y0 < y.min() and y1 > y.max()
    assert info["hows"] == list(hotbin.render.shade.HOWS) and "inferno" in info["cmaps"]
    assert len(info["colorbar"]) > 1 and info["categories"] is None and info["tiles"] is False


def test_cells_from_the_cache_and_without(client, points):
    x, y = points[:2]
    view = dict(VIEW, width=33, height=29)
    hm = hotbin.heatmap(x, y, x_range=(view["x0"], view["x1"]), y_range=(view["y0"], view["y1"]),
                        width=33, height=29)
    j, i = np.unravel_index(np.argmax(hm.counts), hm.counts.shape)
    cold = client.get(f"/cell.json?{_q(**view, i=i, j=j)}").json()  # a 1 x 1 heatmap of the cell
    client.get(f"/render.png?{_q(**view)}")
    warm = client.get(f"/cell.json?{_q(**view, i=i, j=j)}").json()  # the cached view's cell
    assert cold == warm
    assert warm["count"] == hm.counts[j, i] > 0 and warm["value"] == hm.values[j, i]
    assert warm["x"] == list(hm.x_edges[i:i + 2]) and warm["y"] == list(hm.y_edges[j:j + 2])
    assert client.get(f"/cell.json?{_q(**view, i=0, j=0)}").json()["count"] == hm.counts[0, 0]


BAD = ["x0=nan", "x1=inf", "y0=-inf", "x0=abc", "x0=2&x1=1", "y0=1&y1=1", "width=0", "height=-3",
       "width=1.5", "width=9000", "width=4000&height=4000", "how=nope", "cmap=nope", "cmap=",
       "x2=1", "x0=-1e308&x1=1e308", "width=99999999999999999999"]


@pytest.mark.parametrize("query", BAD)
@pytest.mark.parametrize("path", ["/render.png", "/stats.json", "/cell.json"])
def test_bad_parameters_are_400_json(client, query, path):
    if path != "/render.png" and query.startswith(("how", "cmap")):
        query = "x2=1"
    r = client.get(f"{path}?{query}" + ("&i=0&j=0" if path == "/cell.json" else ""))
    assert r.status_code == 400, (path, query, r.text)
    assert r.headers["content-type"] == "application/json" and "Traceback" not in r.text
    assert r.json()["error"]
    assert client.get("/stats.json").status_code == 200  # alive


@pytest.mark.parametrize("cell", ["i=-1&j=0", "i=160&j=0", "i=0&j=120", "i=a&j=0", "j=0"])
def test_bad_cells_are_400(client, cell):
    r = client.get(f"/cell.json?{_q(**VIEW)}&{cell}")
    assert r.status_code == 400 and r.json()["error"]


def test_only_the_page_its_assets_and_views(client):
    page = client.get("/")
    assert page.status_code == 200 and "viewer.js" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    names = re.findall(r'<(?:script|link)[^>]* (?:src|href)="static/([^"]+)"', page.text)
    assert "viewer.js" in names and "viewer.css" in names, names
    for name in names:  # every script and stylesheet the page loads, with its type
        r = client.get(f"/static/{name}")
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        assert r.status_code == 200 and r.headers["content-type"].startswith(kind), name
    for path in ("/static/..%2Fapp.py", "/static/../app.py", "/static/app.py", "/etc/passwd",
                 "/render.png/../../x", "/tiles/0/0/0.png"):
        r = client.get(path)
        assert r.status_code == 404 and "error" in r.json(), path
    r = client.post("/render.png")
    assert r.status_code == 405 and "error" in r.json()


def test_an_unexpected_failure_is_one_json_line(points, monkeypatch):
    x, y = points[:2]
    app = create_app(Dataset(x[:100], y[:100]))

    def broken(view, filters=None):
        raise RuntimeError("a bug")

    monkeypatch.setattr(app.state.renderer, "aggregate", broken)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/render.png?width=10&height=10")
        assert r.status_code == 500 and r.json() == {"error": "internal error: RuntimeError"}
        assert c.get("/").status_code == 200


def test_host_names_are_checked_when_asked(points):
    x, y = points[:2]
    app = create_app(Dataset(x[:100], y[:100]), allowed_hosts=["127.0.0.1", "localhost"])
    with TestClient(app, base_url="http://127.0.0.1:8000") as ok:
        assert ok.get("/stats.json").status_code == 200
    with TestClient(app, base_url="http://attacker.example") as bad:
        assert bad.get("/stats.json").status_code == 400


def test_tiles_are_the_xyz_extents_in_web_mercator():
    rng = np.random.default_rng(7)
    lon, lat = rng.normal(-73.97, 0.05, 20000), rng.normal(40.75, 0.05, 20000)
    data = Dataset(lon, lat, project="mercator")
    xm, ym = mercator(lon, lat)
    with TestClient(create_app(data)) as c:
        assert c.get("/info.json").json()["crs"] == "EPSG:3857"
        for z, tx, ty in [(0, 0, 0), (10, 301, 385), (12, 1205, 1539), (3, 7, 7)]:
            r = c.get(f"/tiles/{z}/{tx}/{ty}.png")
            assert r.status_code == 200
            x0, x1, y0, y1 = tile_bounds(z, tx, ty)
            hm = hotbin.heatmap(xm, ym, x_range=(x0, x1), y_range=(y0, y1), width=256, height=256)
            img = _decode(r.content)
            assert img.shape == (256, 256, 4)
            np.testing.assert_array_equal(img[::-1, :, 3] > 0, hm.counts > 0)
            assert json.loads(r.headers["x-hotbin-stats"])["in_view"] == hm.counts.sum()
        assert hotbin.heatmap(xm, ym, x_range=tile_bounds(10, 301, 385)[:2],
                              y_range=tile_bounds(10, 301, 385)[2:], width=8, height=8).counts.sum() > 0
        for bad in ("31/0/0", "2/4/0", "2/0/4", "a/0/0", "1/-1/0", "1/0/0x"):
            r = c.get(f"/tiles/{bad}.png")
            assert r.status_code == 400 and ("outside" in r.json()["error"] or "whole" in r.json()["error"])
        assert c.get("/tiles/1/0/0.png?how=nope").status_code == 400


def test_values_and_categories(points):
    x, y, w, cat = points
    labels = ["bus", "car", "tram"]
    data = Dataset(x, y, w, cat, labels=labels, agg="mean")
    view = dict(VIEW, width=40, height=30)
    hm = hotbin.heatmap(x, y, w, agg="mean", by=cat, x_range=(view["x0"], view["x1"]),
                        y_range=(view["y0"], view["y1"]), width=40, height=30)
    with TestClient(create_app(data)) as c:
        info = c.get("/info.json?cmap=viridis").json()
        assert [k["label"] for k in info["categories"]] == labels
        assert all(re.fullmatch("#[0-9a-f]{6}", k["color"]) for k in info["categories"])
        img = _decode(c.get(f"/render.png?{_q(**view)}").content)
        np.testing.assert_array_equal(img, hm.shade()[::-1])
        j, i = np.unravel_index(np.argmax(hm.counts), hm.counts.shape)
        cell = c.get(f"/cell.json?{_q(**view, i=i, j=j)}").json()
        assert cell["count"] == hm.counts[j, i]
        assert list(cell["categories"]) == labels  # every category, an empty one's mean as null
        for k, lab in enumerate(labels):
            v = hm.values[k, j, i]
            assert cell["categories"][lab] == (pytest.approx(v) if np.isfinite(v) else None)
        empty = np.argwhere(np.isnan(hm.values) & (hm.counts > 0))[0]  # a category absent from a cell
        cell = c.get(f"/cell.json?{_q(**view, i=empty[2], j=empty[1])}").json()
        assert cell["categories"][labels[empty[0]]] is None and len(cell["categories"]) == 3


def test_views_of_many_categories_are_bounded(points):
    x, y, _, _ = points
    data = Dataset(x[:1000], y[:1000], by=np.arange(1000) % 20, labels=[f"k{i}" for i in range(20)])
    with TestClient(create_app(data)) as c:
        r = c.get("/render.png?width=1500&height=1200")
        assert r.status_code == 400 and "categories" in r.json()["error"]
        assert c.get("/render.png?width=500&height=400").status_code == 200


def test_png_bytes_decode_to_the_picture():
    rng = np.random.default_rng(3)
    for shape in [(800, 1280, 4), (1, 1, 4), (130, 7, 3), (300, 200, 1), (256, 256, 2)]:
        img = (rng.integers(0, 5, shape) * 50).astype(np.uint8)
        out = np.asarray(PIL.open(io.BytesIO(png_bytes(img))))
        np.testing.assert_array_equal(out.reshape(shape), img)


def test_worker_drops_jobs_whose_client_left_and_bounds_the_queue():
    async def scenario():
        worker, gate, ran = Worker(max_pending=3), threading.Event(), []  # a left job waits too
        first = asyncio.ensure_future(worker.run(lambda: gate.wait(5) and ran.append("first")))
        await asyncio.sleep(0.05)

        async def gone():
            return {"type": "http.disconnect"}

        with pytest.raises(Gone):
            await worker.run(lambda: ran.append("stale"), gone)
        second = asyncio.ensure_future(worker.run(lambda: ran.append("second")))
        await asyncio.sleep(0.05)
        with pytest.raises(Busy):
            await worker.run(lambda: ran.append("third"))
        gate.set()
        await first
        await second
        worker.close()
        return ran

    assert asyncio.run(scenario()) == ["first", "second"]


def test_fifty_concurrent_clients_against_uvicorn(points):
    x, y = points[:2]
    app = create_app(Dataset(x, y))
    rng = np.random.default_rng(1)
    with background(app) as url:
        results, views = [None] * 50, []
        for k in range(50):
            x0, y0 = rng.uniform(-2, 1), rng.uniform(-2, 1)
            views.append(dict(x0=x0, x1=x0 + rng.uniform(0.1, 2), y0=y0, y1=y0 + 1, width=200, height=150))

        def fetch(k):
            path = "render.png" if k % 2 else "stats.json"
            try:
                with urllib.request.urlopen(f"{url}{path}?{_q(**views[k])}", timeout=60) as r:
                    results[k] = (r.status, r.headers.get("X-Hotbin-Stats") or r.read().decode())
            except Exception as exc:  # an HTTP error is a failure of the test, not of a thread
                results[k] = (getattr(exc, "code", None), repr(exc))

        threads = [threading.Thread(target=fetch, args=(k,)) for k in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        for k, (status, body) in enumerate(results):
            assert status == 200, body
            v = views[k]
            hm = hotbin.heatmap(x, y, x_range=(v["x0"], v["x1"]), y_range=(v["y0"], v["y1"]),
                                width=200, height=150)
            assert json.loads(body)["in_view"] == hm.counts.sum()
        with urllib.request.urlopen(url, timeout=10) as r:  # still serving
            assert r.status == 200


@pytest.mark.parametrize("lazy", [[], ["--scheduler", "local"]], ids=["memory", "dask"])
def test_cli_serves_a_file_and_stops_on_ctrl_c(tmp_path, lazy):
    if lazy:
        pytest.importorskip("distributed")
    rng = np.random.default_rng(5)
    n = 5000
    x, y, v = rng.uniform(-74.1, -73.8, n), rng.uniform(40.6, 40.9, n), rng.uniform(0, 9, n)
    kind = rng.choice(["yellow", "green"], n)
    path = tmp_path / "trips.csv"
    with open(path, "w") as f:
        f.write("lon,lat,fare,kind\n")
        f.writelines(f"{a!r},{b!r},{c!r},{k}\n" for a, b, c, k in zip(x.tolist(), y.tolist(), v.tolist(), kind))
        f.write("oops,40.7,1,green\n")
    proc = subprocess.Popen([sys.executable, "-m", "hotbin", "serve", str(path), "--x", "lon", "--y", "lat",
                             "--agg", "mean:fare", "--by", "kind", "--port", "0", "--no-browser", *lazy],
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while True:
            line = proc.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
            found = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
            if found:
                break
        url = found.group(1)
        assert "skipped 1 row" in "".join(lines)
        with urllib.request.urlopen(f"{url}info.json", timeout=30) as r:
            info = json.load(r)
        assert [k["label"] for k in info["categories"]] == ["green", "yellow"] and info["agg"] == "mean"
        x0, x1, y0, y1 = -74.0, -73.9, 40.7, 40.8
        with urllib.request.urlopen(f"{url}stats.json?{_q(x0=x0, x1=x1, y0=y0, y1=y1, width=50, height=40)}",
                                    timeout=30) as r:
            stats = json.load(r)
        hm = hotbin.heatmap(x, y, x_range=(x0, x1), y_range=(y0, y1), width=50, height=40)
        assert stats["n"] == n and stats["in_view"] == hm.counts.sum() and stats["max"] == hm.counts.max()
    finally:
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=30)[1]  # reads the rest of stderr and closes it
    assert proc.returncode == 0 and "Traceback" not in rest, rest


def test_cli_errors_are_one_line():
    r = subprocess.run([sys.executable, "-m", "hotbin", "serve", "--no-browser"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and "give an INPUT" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "hotbin", "serve", "--demo", "--agg", "mean", "--no-browser"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "needs a value column" in r.stderr


# --- the page in a real browser ------------------------------------------------------------

def _browser():
    return chromium(1200, 800, console=True)


def _artifacts():
    d = pathlib.Path(os.environ.get("HOTBIN_ARTIFACTS") or pathlib.Path(__file__).parent / "artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _settled(d, timeout=60):
    """Waits until the picture shown is the view in the URL hash, and returns that view."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = d.execute_script("return [location.hash, document.body.dataset.shown || '', "
                               "document.body.dataset.busy || '']")
        view = dict(re.findall(r"(x0|x1|y0|y1)=([^&]+)", got[0]))
        shown = dict(re.findall(r"(x0|x1|y0|y1|width|height)=([^&]+)", got[1]))
        if view and not got[2] and all(shown.get(k) == v for k, v in view.items()):
            return {k: float(v) for k, v in view.items()}, int(shown["width"]), int(shown["height"])
        time.sleep(0.05)
    raise AssertionError(f"the page did not show the view of its URL: {got}")


def _canvas(d):
    data = d.execute_script("return document.getElementById('canvas').toDataURL('image/png')")
    return _decode(base64.b64decode(data.split(",", 1)[1]))


def test_page_in_headless_chromium():
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    from selenium.webdriver.common.keys import Keys

    from hotbin.cli.demo import demo_points

    x, y = demo_points(400_000, 2026)  # cities, roads and countryside: a picture worth looking at
    art = _artifacts()
    with background(create_app(Dataset(x, y), Shading("eq_hist", "inferno"))) as url:
        d = _browser()
        try:
            d.get(url)
            home, w, h = _settled(d)
            before = _canvas(d)
            d.save_screenshot(str(art / "serve-1-home.png"))
            canvas = d.find_element("id", "canvas")
            ActionChains(d).scroll_from_origin(ScrollOrigin.from_element(canvas, 80, -40), 0, -500).perform()
            zoomed, _, _ = _settled(d)
            assert zoomed["x1"] - zoomed["x0"] < 0.8 * (home["x1"] - home["x0"])
            ActionChains(d).move_to_element(canvas).click_and_hold().move_by_offset(-150, 90) \
                .release().perform()
            view, w, h = _settled(d)
            assert view["x0"] > zoomed["x0"] and view["y0"] > zoomed["y0"]  # dragged left and down
            after = _canvas(d)
            d.save_screenshot(str(art / "serve-2-zoomed-dragged.png"))
            assert after.shape == before.shape and (after != before).any(axis=2).mean() > 0.05
            with urllib.request.urlopen(f"{url}stats.json?{_q(**view, width=w, height=h)}") as r:
                stats = json.load(r)
            hm = hotbin.heatmap(x, y, x_range=(view["x0"], view["x1"]), y_range=(view["y0"], view["y1"]),
                                width=w, height=h)
            assert (stats["in_view"], stats["max"]) == (hm.counts.sum(), hm.counts.max())
            assert f"{int(hm.counts.sum()):,}" in d.find_element("id", "status").text
            j, i = np.unravel_index(np.argmax(hm.counts), hm.counts.shape)  # hover the fullest cell
            ox = round((i + 0.5) * canvas.size["width"] / w - canvas.size["width"] / 2)
            oy = round((h - j - 0.5) * canvas.size["height"] / h - canvas.size["height"] / 2)
            ActionChains(d).move_to_element_with_offset(canvas, ox, oy).perform()
            tip = d.find_element("id", "tip")
            for _ in range(100):
                cell = d.execute_script("return document.body.dataset.cell")
                if tip.is_displayed() and cell:
                    break
                time.sleep(0.05)
            ci, cj = map(int, cell.split(","))
            assert abs(ci - i) <= 1 and abs(cj - j) <= 1  # the cell under the pointer
            assert tip.text.startswith(f"count {int(hm.counts[cj, ci]):,}\n"), tip.text
            d.save_screenshot(str(art / "serve-3-hover.png"))
            ActionChains(d).key_down(Keys.SHIFT).move_to_element_with_offset(canvas, ox - 150, oy - 90) \
                .click_and_hold().move_by_offset(300, 180).release().key_up(Keys.SHIFT).perform()
            boxed, _, _ = _settled(d)
            assert boxed["x1"] - boxed["x0"] < 0.6 * (view["x1"] - view["x0"])
            d.find_element("id", "cmap").send_keys("viridis")
            _settled(d)
            d.find_element("id", "reset").click()
            again, _, _ = _settled(d)
            assert again == home and "cmap=viridis" in d.current_url
            d.save_screenshot(str(art / "serve-4-reset-viridis.png"))
            box = canvas.rect  # pinch: two touches spread from 100 to 300 pixels apart
            mx, my = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

            def touch(kind, spread):
                d.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": kind, "touchPoints": [
                    {"x": mx + k * spread / 2, "y": my, "id": int(k > 0)} for k in (-1, 1)][:2 if spread else 0]})

            touch("touchStart", 100)
            for s in range(110, 310, 10):
                touch("touchMove", s)
            touch("touchEnd", 0)
            pinched, _, _ = _settled(d)
            assert (pinched["x1"] - pinched["x0"]) / (home["x1"] - home["x0"]) == pytest.approx(1 / 3, rel=0.02)
            burst = ActionChains(d)  # a burst of views without waiting: the last one is shown
            for k in range(8):
                burst.scroll_from_origin(ScrollOrigin.from_element(canvas, 40 * k - 160, 20 * k - 80), 0,
                                         120 if k % 3 else -200)
            burst.perform()
            last, w, h = _settled(d)
            with urllib.request.urlopen(f"{url}stats.json?{_q(**last, width=w, height=h)}") as r:
                assert json.load(r)["in_view"] == hotbin.heatmap(
                    x, y, x_range=(last["x0"], last["x1"]), y_range=(last["y0"], last["y1"]),
                    width=w, height=h).counts.sum()
            d.get(f"{url}#{_q(**boxed, how='log', cmap='magma')}")  # a link reopens its view
            reopened, _, _ = _settled(d)
            assert reopened == boxed
            d.save_screenshot(str(art / "serve-5-link.png"))
            errors = [e for e in d.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
            assert not errors, errors
        finally:
            d.quit()


def test_dataset_of_dask_arrays_equals_memory():
    """Data larger than memory: dask columns stay lazy, every view is a Dask job, same cells."""
    da = pytest.importorskip("dask.array")
    from hotbin.serve.params import View

    rng = np.random.default_rng(21)
    x, y, w = rng.random(30000), rng.random(30000), rng.normal(size=30000)
    codes = rng.integers(0, 3, 30000)
    lazy = Dataset(*(da.from_array(a, chunks=7000) for a in (x, y, w, codes)), agg="mean")
    mem = Dataset(x, y, w, codes, agg="mean", backend="cpu")
    assert lazy.n == mem.n and lazy.labels == mem.labels == (0, 1, 2)
    clipped = [Dataset(da.from_array(x, chunks=7000), da.from_array(y, chunks=7000), clip=(3, 97)),
               Dataset(x, y, clip=(3, 97), backend="cpu")]  # the home view: the same percentiles
    assert clipped[0].home == clipped[1].home == tuple(
        np.percentile(a, q, method=m) for a in (x, y) for q, m in ((3, "lower"), (97, "higher")))
    view = View(0.1, 0.7, 0.2, 0.9, 60, 40)
    a, b = lazy.heatmap(view), mem.heatmap(view)
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_allclose(a.values, b.values, rtol=1e-12, equal_nan=True)


# --- the server's guards: Host names, stalled connections ---------------------------------------

def _get(url, path, host=None, timeout=10):
    """``(status, body)`` of GET ``path`` with the Host header ``host`` (default: the URL's)."""
    import http.client
    import urllib.parse

    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.putrequest("GET", path, skip_host=host is not None)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def _can_bind(host):
    import socket

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, 0))
    except OSError:
        return False
    return True


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.31.4.15", "::1"])
def test_host_check_holds_on_every_loopback_address(points, host):
    if not _can_bind(host):
        pytest.skip(f"cannot listen on {host} here")
    x, y = points[:2]
    with background(create_app(Dataset(x[:1000], y[:1000], backend="cpu")), host=host) as url:
        port = int(url.rsplit(":", 1)[1].strip("/"))
        literal = f"[{host}]" if ":" in host else host
        assert url == f"http://{literal}:{port}/"
        for ok in (None, f"{literal}:{port}", literal, f"localhost:{port}", "LOCALHOST", "127.0.0.1"):
            status, body = _get(url, "/stats.json", ok)
            assert status == 200 and json.loads(body)["n"] == 1000, (ok, body)
        for bad in ("evil.com", f"evil.com:{port}", f"{host}.evil.com", f"localhost.evil.com:{port}",
                    f"{literal}:{port}@evil.com", "10.0.0.1", "[::2]", f"{literal}:x", "[::1"):
            status, body = _get(url, "/stats.json", bad)
            assert status == 400 and b'"n"' not in body, (bad, body)


def _serve_cli(*args, host_pattern=r"127\.0\.0\.1"):
    """A ``hotbin serve`` subprocess and the URL it printed."""
    proc = subprocess.Popen([sys.executable, "-m", "hotbin", "serve", *args, "--port", "0", "--no-browser"],
                            stderr=subprocess.PIPE, text=True)
    lines = []
    while True:
        line = proc.stderr.readline()
        if not line:
            proc.kill()
            proc.communicate(timeout=30)
            raise AssertionError("".join(lines))
        lines.append(line)
        found = re.search(rf"(http://{host_pattern}:\d+/)", line)
        if found:
            return proc, found.group(1)


def _stop(proc):
    proc.send_signal(signal.SIGINT)
    rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 0 and "Traceback" not in rest, rest


@pytest.fixture(scope="module")
def trips(tmp_path_factory):
    """A small CSV of longitudes and latitudes, and its columns."""
    rng = np.random.default_rng(11)
    n = 4000
    lon, lat = rng.uniform(-74.1, -73.8, n), rng.uniform(40.6, 40.9, n)
    path = tmp_path_factory.mktemp("trips") / "trips.csv"
    with open(path, "w") as f:
        f.write("lon,lat\n")
        f.writelines(f"{a!r},{b!r}\n" for a, b in zip(lon.tolist(), lat.tolist()))
    return path, lon, lat


@pytest.mark.parametrize("host", ["127.0.0.2", "::1"])
def test_cli_url_answers_on_any_loopback_and_refuses_other_hosts(trips, host):
    if not _can_bind(host):
        pytest.skip(f"cannot listen on {host} here")
    path, lon, _ = trips
    literal = f"[{host}]" if ":" in host else host
    proc, url = _serve_cli(str(path), "--x", "lon", "--y", "lat", "--host", host,
                           host_pattern=re.escape(literal))
    try:
        with urllib.request.urlopen(f"{url}stats.json", timeout=30) as r:  # the printed URL's host
            assert r.status == 200 and json.load(r)["n"] == lon.size
        port = url.rsplit(":", 1)[1].strip("/")
        for bad in ("evil.com", f"evil.com:{port}"):  # DNS rebinding: a name that resolves here
            status, body = _get(url, "/stats.json", bad, timeout=30)
            assert status == 400 and b'"n"' not in body, (bad, body)
    finally:
        _stop(proc)


def _stalled(url, n, head=b"GET /stats.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "):
    """``n`` connections that sent the start of a request head and stop there."""
    import socket

    host, port = url[len("http://"):-1].rsplit(":", 1)
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(head)
        s.setblocking(False)
        socks.append(s)
    return socks


def _served_once(url, n):
    """``n`` keep-alive connections that got one answer, then sent the start of another request."""
    socks = _stalled(url, n, b"GET /stats.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    for s in socks:
        s.setblocking(True)
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += s.recv(65536)
        head, body = reply.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200")
        size = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        while len(body) < size:
            body += s.recv(65536)
        s.sendall(b"GET /stats.json HTTP/1.1\r\n")
        s.setblocking(False)
    return socks


def _closed(socks, timeout):
    """When each socket was closed by the server (monotonic seconds; None: still open at ``timeout``)."""
    import selectors

    sel = selectors.DefaultSelector()
    for k, s in enumerate(socks):
        sel.register(s, selectors.EVENT_READ, k)
    out = [None] * len(socks)
    deadline = time.monotonic() + timeout
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
            try:
                data = key.fileobj.recv(4096)
            except ConnectionResetError:
                data = b""
            except BlockingIOError:
                continue
            if not data:  # EOF: the server closed it
                out[key.data] = time.monotonic()
                sel.unregister(key.fileobj)
    sel.close()
    return out


def _enough_files(n):
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))
        except (ValueError, OSError):
            pass
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < n:
        pytest.skip(f"{n} open files are not allowed here")


def test_stalled_connections_time_out_and_lock_nobody_out(points):
    """1,100 half-open connections (more than the old limit of 1,000 connections) and a few that
    trickle a byte at a time: a normal client is still served at once, and every stalled
    connection is closed by the server once its request head is late."""
    _enough_files(2 * 1100 + 200)
    x, y = points[:2]
    timeout = 3.0
    with background(create_app(Dataset(x[:1000], y[:1000], backend="cpu")), head_timeout=timeout,
                    most_waiting=5000) as url:
        t0 = time.monotonic()
        socks = _stalled(url, 1100) + _stalled(url, 5, b"")  # some send nothing at all
        trickle = _stalled(url, 5) + _served_once(url, 5)  # some after a first answer (keep-alive)
        opened = time.monotonic()
        with urllib.request.urlopen(f"{url}stats.json", timeout=timeout) as r:
            assert r.status == 200 and json.load(r)["n"] == 1000
        assert _closed(socks, 0.01) == [None] * len(socks)  # served while they all stall
        for k in range(3):  # a byte every 0.4 s does not keep a connection open
            for s in trickle:
                try:
                    s.send(b"x")
                except OSError:
                    pass
            time.sleep(0.4)
        closed = _closed(socks + trickle, timeout + 10)
        assert all(c is not None for c in closed), sum(c is None for c in closed)
        assert min(closed) >= t0 + 0.9 * timeout  # by the timeout, not before
        assert max(closed) <= opened + timeout + 5
        for s in socks + trickle:
            s.close()
        with urllib.request.urlopen(f"{url}stats.json", timeout=10) as r:  # still serving
            assert r.status == 200


def test_the_oldest_stalled_connections_make_room_for_new_ones(points):
    """At most ``most_waiting`` connections wait for a request head; past that the oldest is
    closed at once, so half-open connections cannot use up the server's file descriptors."""
    x, y = points[:2]
    with background(create_app(Dataset(x[:1000], y[:1000], backend="cpu")), head_timeout=60,
                    most_waiting=8) as url:
        socks = []
        for k in range(20):
            socks += _stalled(url, 1)
            time.sleep(0.01)  # one at a time: the server sees them in this order
        with urllib.request.urlopen(f"{url}stats.json", timeout=10) as r:
            assert r.status == 200 and json.load(r)["n"] == 1000
        closed = _closed(socks, 1)
        assert [c is not None for c in closed] == [True] * 13 + [False] * 7  # the client was the 21st
        for s in socks:
            s.close()


# --- categories of a cell, the home view's ranges -----------------------------------------------

def test_a_cell_lists_every_category_zeros_included(points):
    x, y, w, cat = points
    labels = ["bus", "car", "tram"]
    view = dict(VIEW, width=40, height=30)
    xe, ye = np.linspace(view["x0"], view["x1"], 41), np.linspace(view["y0"], view["y1"], 31)
    per = np.stack([np.histogram2d(y[cat == k], x[cat == k], bins=(ye, xe))[0] for k in range(3)])
    nz = (per > 0).sum(axis=0)
    j, i = np.argwhere(nz == 2)[0]  # a cell where one category has no point
    with TestClient(create_app(Dataset(x, y, by=cat, labels=labels))) as c:
        for warm in (False, True):  # from a 1 x 1 heatmap of the cell, then from the cached view
            if warm:
                c.get(f"/render.png?{_q(**view)}")
            cell = c.get(f"/cell.json?{_q(**view, i=i, j=j)}").json()
            assert cell["categories"] == {lab: int(per[k, j, i]) for k, lab in enumerate(labels)}
            assert cell["count"] == per[:, j, i].sum()


def _home(c):
    return tuple(c.get("/info.json").json()["home"])


def test_home_view_is_the_given_ranges_and_the_grid_follows_their_aspect(points):
    x, y = points[:2]
    xr, yr = (-1.0, 1.5), (0.0, 2.0)
    with TestClient(create_app(Dataset(x, y, x_range=xr, y_range=yr))) as c:
        assert _home(c) == xr + yr
        r = c.get("/render.png")  # no size: 1280 across, square cells
        hm = hotbin.heatmap(x, y, x_range=xr, y_range=yr, width=1280, height=1024)
        np.testing.assert_array_equal(_decode(r.content), hm.shade()[::-1])
        assert c.get("/stats.json").json()["in_view"] == hm.counts.sum()
        assert _decode(c.get("/render.png?width=100").content).shape[:2] == (80, 100)
        assert _decode(c.get("/render.png?height=50").content).shape[:2] == (50, 62)
        tall = c.get("/render.png?x0=0&x1=0.001&y0=0&y1=100")  # capped, still square-ish
        assert tall.status_code == 200 and _decode(tall.content).shape[:2] == (8192, 1)
        assert _decode(c.get("/render.png?width=30&height=20").content).shape[:2] == (20, 30)
    with TestClient(create_app(Dataset(x, y))) as c:  # no ranges: the default size
        assert _decode(c.get("/render.png").content).shape[:2] == (800, 1280)


def test_home_view_of_clip_is_the_percentiles(points):
    x, y = points[:2]
    fx = x[np.isfinite(x)]
    for clip, xr in (((1.0, 99.0), None), ((2.5, 90.0), (-1.0, 1.0))):
        with TestClient(create_app(Dataset(x, y, x_range=xr, clip=clip))) as c:
            want_x = xr or (np.percentile(fx, clip[0], method="lower"), np.percentile(fx, clip[1], method="higher"))
            want_y = (np.percentile(y, clip[0], method="lower"), np.percentile(y, clip[1], method="higher"))
            assert _home(c) == tuple(want_x) + tuple(want_y)
            assert _decode(c.get("/render.png").content).shape[:2] == (800, 1280)


def test_home_view_ranges_are_in_degrees_when_projected():
    rng = np.random.default_rng(8)
    lon, lat = rng.normal(-73.97, 0.05, 5000), rng.normal(40.75, 0.05, 5000)
    xr, yr = (-74.0, -73.9), (40.7, 40.8)
    (xm0, xm1), (ym0, ym1) = mercator(np.array(xr), np.array(yr))
    with TestClient(create_app(Dataset(lon, lat, project="mercator", x_range=xr, y_range=yr))) as c:
        assert _home(c) == (xm0, xm1, ym0, ym1)
        xm, ym = mercator(lon, lat)
        height = round(1280 * (ym1 - ym0) / (xm1 - xm0))
        hm = hotbin.heatmap(xm, ym, x_range=(xm0, xm1), y_range=(ym0, ym1), width=1280, height=height)
        r = c.get("/render.png")
        np.testing.assert_array_equal(_decode(r.content), hm.shade()[::-1])


@pytest.mark.parametrize("bad, word", [(dict(x_range=(2.0, 1.0)), "x_range"), (dict(y_range=(0, np.inf)), "y_range"),
                                        (dict(clip=(50, 10)), "clip"), (dict(clip=(1, 101)), "clip")])
def test_bad_home_ranges_name_the_argument(points, bad, word):
    with pytest.raises(ValueError, match=word):
        Dataset(points[0][:100], points[1][:100], **bad)


@pytest.mark.parametrize("extra", [["--x-range", "-74,-73.9", "--y-range", "40.7,40.8"], ["--clip", "5,95"]],
                         ids=["ranges", "clip"])
def test_cli_takes_ranges_and_clip_as_hotbin_heatmap(trips, extra):
    path, lon, lat = trips
    proc, url = _serve_cli(str(path), "--x", "lon", "--y", "lat", "--project", "mercator", *extra)
    try:
        with urllib.request.urlopen(f"{url}info.json", timeout=30) as r:
            home = json.load(r)["home"]
        xm, ym = mercator(lon, lat)
        if extra[0] == "--clip":
            want = [float(np.percentile(v, q, method=m)) for v in (xm, ym) for q, m in ((5, "lower"), (95, "higher"))]
        else:
            want = [float(v) for v in np.ravel(mercator(np.array([-74, -73.9]), np.array([40.7, 40.8])))]
        assert home == want
        with urllib.request.urlopen(f"{url}stats.json", timeout=30) as r:
            stats = json.load(r)
        width, height = (1280, round(1280 * (want[3] - want[2]) / (want[1] - want[0]))) \
            if extra[0] == "--x-range" else (1280, 800)
        hm = hotbin.heatmap(xm, ym, x_range=want[:2], y_range=want[2:], width=width, height=height)
        assert (stats["in_view"], stats["max"]) == (hm.counts.sum(), hm.counts.max())
        with urllib.request.urlopen(f"{url}render.png", timeout=30) as r:
            assert _decode(r.read()).shape[:2] == (height, width)
    finally:
        _stop(proc)


def test_cli_bad_ranges_are_one_line(trips):
    for args, word in ((["--x-range", "2,1"], "--x-range: min must be less than max"),
                       (["--clip", "5,200"], "--clip: expected percentiles"),
                       (["--y-range", "a,b"], "--y-range: expected LO,HI")):
        r = subprocess.run([sys.executable, "-m", "hotbin", "serve", str(trips[0]), "--x", "lon", "--y", "lat",
                            "--no-browser", *args], capture_output=True, text=True, timeout=120)
        assert r.returncode != 0 and word in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_guard_settings_are_checked():
    from hotbin.serve.guard import guarded_protocol

    for bad, word in ((dict(head_timeout=0), "head_timeout"), (dict(head_timeout=float("nan")), "head_timeout"),
                      (dict(most_waiting=0), "most_waiting"), (dict(most_waiting=2.5), "most_waiting")):
        with pytest.raises(ValueError, match=word):
            guarded_protocol(**bad)
