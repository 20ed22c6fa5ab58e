"""Linked views of ``hotbin serve``: every histogram is ``numpy.histogram`` of the rows passing
every brush but its own (and the box), the map and its statistics count the rows passing every
brush, the drill-down's rows and CSV are the input's filtered rows in file order, bad brushes
are 400s; and the page in a real headless Chromium (brush by dragging, URL state, drill-down)."""
import io
import re
import time
import urllib.request
import warnings

import numpy as np
import pytest

import hotbin

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
PIL = pytest.importorskip("PIL.Image")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from starlette.testclient import TestClient

from hotbin.serve import Dataset, background, create_app  # noqa: E402

N = 20_000
LABELS = ["cash", "card", "app"]


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(20261204)
    x, y = rng.normal(0, 1, N), rng.normal(0, 1, N)
    fare = np.round(rng.gamma(2.0, 5.0, N), 1)  # many values exactly on brush ends and edges
    dist = rng.exponential(3.0, N)
    fare[:40] = np.nan
    kind = rng.integers(0, 3, N)
    note = np.array([f'trip "{i}", line\nbreak' if i % 97 == 0 else f"t{i}" for i in range(N)], object)
    return pd.DataFrame({"x": x, "y": y, "fare": fare, "dist": dist,
                         "kind": np.array(LABELS)[kind], "note": note}), kind


@pytest.fixture(scope="module")
def data(table):
    df, kind = table
    return Dataset(df.x.to_numpy(), df.y.to_numpy(), by=kind, labels=LABELS,
                   hist={"fare": df.fare.to_numpy(), "dist": df.dist.to_numpy()},
                   panels={"fare": (25, 0.0, 50.0)}, table=df, by_name="kind")


@pytest.fixture(scope="module")
def client(data):
    with TestClient(create_app(data)) as c:
        yield c


def _ok(df, kind, brushes=(), box=None, cats=None):
    """The rows passing the brushes ``((col, lo, hi), ...)``, the box and the categories (NumPy)."""
    ok = np.ones(len(df), bool)
    for col, lo, hi in brushes:
        v = df[col].to_numpy()
        ok &= (v >= lo) & (v < hi)
    if box is not None:
        ok &= (df.x >= box[0]).to_numpy() & (df.x < box[1]).to_numpy()
        ok &= (df.y >= box[2]).to_numpy() & (df.y < box[3]).to_numpy()
    if cats is not None:
        ok &= np.isin(kind, [LABELS.index(c) for c in cats])
    return ok


def _f(brushes=(), box=None, cats=None):
    q = "".join(f"&f.{c}={lo},{hi}" for c, lo, hi in brushes)
    if box is not None:
        q += "&" + "&".join(f"{k}={v}" for k, v in zip(("x0", "x1", "y0", "y1"), box))
    if cats is not None:
        q += "&f.kind=" + ",".join(cats)
    return q


CASES = [((), None, None), ((("fare", 10.0, 20.5),), None, None),
         ((("fare", 10.0, 20.5), ("dist", 0.5, 4.0)), None, None),
         ((("dist", 1.0, 2.0),), (-1.0, 0.5, -0.25, 1.5), None),
         ((("fare", 3.0, 30.0), ("x", -0.5, 2.0)), (-2.0, 2.0, -1.0, 1.0), ["card", "app"])]


@pytest.mark.parametrize("brushes, box, cats", CASES)
@pytest.mark.parametrize("column, bins, rng", [("fare", 25, (0.0, 50.0)), ("dist", 17, (0.0, 6.0)),
                                               ("dist", None, None), ("x", 9, (-1.0, 1.0))])
def test_hist_is_numpy_of_the_rows_passing_the_other_brushes(client, table, brushes, box, cats,
                                                             column, bins, rng):
    df, kind = table
    q = f"/hist.json?column={column}" + (f"&bins={bins}" if bins else "")
    q += f"&lo={rng[0]}&hi={rng[1]}" if rng else ""
    got = client.get(q + _f(brushes, box, cats)).json()
    others = [b for b in brushes if b[0] != column]  # a panel ignores its own brush
    ok = _ok(df, kind, others, box, cats)
    col = df[column].to_numpy()
    if rng is None:  # the column's finite extent, 40 bins
        fin = col[np.isfinite(col)]
        rng, bins = (fin.min(), fin.max()), 40
    counts, edges = np.histogram(col[ok], bins, range=rng)
    assert got["column"] == column and got["edges"] == edges.tolist()
    assert got["counts"] == counts.tolist() and got["n"] == counts.sum()


def test_a_panel_ignores_its_own_brush_and_filters_the_others(client, table):
    df, kind = table
    brushed = client.get("/hist.json?column=fare&f.fare=10,12").json()
    plain = client.get("/hist.json?column=fare").json()
    assert brushed["counts"] == plain["counts"]  # its own brush: the whole distribution stays
    other = client.get("/hist.json?column=dist&bins=20&lo=0&hi=10&f.fare=10,12").json()
    ok = _ok(df, kind, [("fare", 10, 12)])
    assert other["counts"] == np.histogram(df.dist[ok], 20, range=(0, 10))[0].tolist()
    assert other["n"] < plain["n"] / 3


@pytest.mark.parametrize("brushes, box, cats", CASES[1:])
def test_map_stats_and_cells_count_the_rows_passing_every_brush(client, table, brushes, box, cats):
    df, kind = table
    ok = _ok(df, kind, brushes, None, cats)  # the map ignores the box: it is drawn on the map
    view = dict(x0=-2.0, x1=2.0, y0=-1.5, y1=2.5, width=40, height=30)
    vq = "&".join(f"{k}={v}" for k, v in view.items())
    hm = hotbin.heatmap(df.x[ok].to_numpy(), df.y[ok].to_numpy(), by=kind[ok], x_range=(-2.0, 2.0),
                        y_range=(-1.5, 2.5), width=40, height=30)
    q = vq + _f(brushes, None, cats)
    s = client.get(f"/stats.json?{q}").json()
    assert (s["n"], s["in_view"], s["max"]) == (N, int(hm.counts.sum()), int(hm.counts.max()))
    r = client.get(f"/render.png?{q}")
    img = np.asarray(PIL.open(io.BytesIO(r.content)).convert("RGBA"))
    np.testing.assert_array_equal(img, hm.shade()[::-1])
    j, i = np.unravel_index(np.argmax(hm.counts), hm.counts.shape)
    assert client.get(f"/cell.json?{q}&i={i}&j={j}").json()["count"] == hm.counts[j, i]


def test_crossfilter_over_many_chunks_equals_numpy():
    """Past 65,536 rows the pass and the compaction split the rows in chunks (on every core)."""
    from hotbin.serve.crossfilter import Crossfilter, Filters, Panel

    rng = np.random.default_rng(5)
    n = 150_001
    a, b = np.round(rng.normal(0, 2, n), 2), rng.gamma(2, 2, n)
    x, y, codes = rng.normal(0, 1, n), rng.normal(0, 1, n), rng.integers(-1, 3, n)
    a[::1000] = np.nan
    cf = Crossfilter({"a": a, "b": b}, (x, y), codes, LABELS, "kind")
    pre = [Panel("a", 30, -4.0, 4.0), Panel("b", 50, 0.0, 20.0)]
    cf.prebin(pre)
    f = Filters((("a", -1.0, 1.5), ("b", 1.0, 6.0)), (0, 2), (-1.0, 1.2, -0.8, 1.0))
    box = (x >= -1) & (x < 1.2) & (y >= -0.8) & (y < 1.0)
    ina, inb, inc = (a >= -1) & (a < 1.5), (b >= 1) & (b < 6), np.isin(codes, [0, 2])
    panels = pre + [Panel("a", 7, -0.5, 0.5)]  # the last one binned in the pass
    got = cf.histograms(f, panels)
    for p, g, ok in zip(panels, got, (box & inb & inc, box & ina & inc, box & inb & inc)):
        col = a if p.column == "a" else b
        np.testing.assert_array_equal(g, np.histogram(col[ok], p.bins, (p.lo, p.hi))[0])
    np.testing.assert_array_equal(cf.passing(f), np.flatnonzero(box & ina & inb & inc))
    cut = cf.subset(f, [x, y, codes.astype(np.int32)])
    for c, full in zip(cut, (x, y, codes)):
        np.testing.assert_array_equal(c, full[ina & inb & inc])  # the map ignores the box


def test_rows_json_counts_and_lists_the_input_rows_in_order(client, table, data):
    df, kind = table
    brushes, box, cats = CASES[4]
    ok = _ok(df, kind, brushes, box, cats)
    got = client.get(f"/rows.json?limit=7&offset=3{_f(brushes, box, cats)}").json()
    want = df[ok].iloc[3:10]
    assert got["count"] == ok.sum() and got["columns"] == list(df.columns)
    assert [r[-1] for r in got["rows"]] == want.note.tolist()
    np.testing.assert_array_equal([r[:4] for r in got["rows"]], want.iloc[:, :4].to_numpy())
    assert data.columns == list(df.columns)
    np.testing.assert_array_equal(data.passing({"fare": (3.0, 30.0), "x": (-0.5, 2.0),
                                                "kind": ["card", "app"]}, (-2.0, 2.0, -1.0, 1.0)),
                                  np.flatnonzero(ok))
    nan = client.get("/rows.json?limit=2").json()["rows"][0]
    assert nan[2] is None  # NaN is JSON null


def test_rows_csv_is_the_filtered_input(client, table):
    df, kind = table
    brushes, box, cats = CASES[2]
    r = client.get(f"/rows.csv?{_f(brushes, box, cats)[1:]}")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    got = pd.read_csv(io.StringIO(r.text), keep_default_na=False, na_values=[""])
    want = df[_ok(df, kind, brushes, box, cats)].reset_index(drop=True)
    assert list(got.columns) == list(df.columns) and len(got) == len(want)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert "line\nbreak" in "".join(got.note)


@pytest.mark.parametrize("query, word", [
    ("/hist.json?column=nope", "nope"), ("/hist.json?column=fare&f.nope=1,2", "nope"),
    ("/hist.json?column=fare&f.fare=abc", "f.fare"), ("/hist.json?column=fare&f.fare=3,1", "lo < hi"),
    ("/hist.json?column=fare&f.fare=1,nan", "finite"), ("/rows.json?x0=1", "all four"),
    ("/rows.json?x0=1&x1=0&y0=0&y1=1", "x0 < x1"), ("/rows.csv?x0=a&x1=1&y0=0&y1=1", "x0"),
    ("/render.png?f.fare=1);DROP TABLE", "f.fare"), ("/stats.json?f.kind=bus", "bus"),
    ("/hist.json?column=fare&f.fare=1);DROP TABLE src;--,2", "f.fare"),
    ("/rows.json?limit=abc", "limit"), ("/hist.json?column=fare&bins=0", "bins"),
    ("/hist.json?column=fare&f.fare=1,2&f.fare=3,4", "once"), ("/info.json?f.fare=1,2", "f.fare")])
def test_bad_brushes_and_views_are_400_json(client, query, word):
    r = client.get(query)
    assert r.status_code == 400 and word in r.json()["error"], r.text
    assert client.get("/hist.json?column=fare").status_code == 200  # still serving


def test_cli_hist_reads_every_column_of_the_input(tmp_path, table):
    from hotbin.cli import serve

    df = table[0].iloc[:500].copy()
    df["when"] = pd.date_range("2024-01-01", periods=500, freq="h")
    path = tmp_path / "trips.csv"
    df.to_csv(path, index=False)
    p = __import__("argparse").ArgumentParser()
    serve.register(p.add_subparsers())
    args = p.parse_args(["serve", str(path), "--x", "x", "--y", "y", "--hist", "fare:10:0:50",
                         "--hist", "dist"])
    args.agg, args.value = serve.columns.value_column(args.agg, args.weight)
    assert args.hist == [("fare", 10, 0.0, 50.0), ("dist", None, None, None)]
    cols, _, _ = serve.load(args)
    assert cols["table"].column_names == list(df.columns)
    np.testing.assert_array_equal(cols["hist"]["fare"], df.fare.to_numpy())
    assert cols["table"].column("note").to_pylist() == df.note.tolist()
    with pytest.raises(SystemExit):
        p.parse_args(["serve", str(path), "--x", "x", "--y", "y", "--hist", "fare:10:5"])


# --- the page in a real browser ------------------------------------------------------------

def _wait(d, script, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = d.execute_script(script)
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for: {script}")


def _counts(d, k):
    return _wait(d, f"const e = document.getElementById('hist-{k}'); "
                    "return e && !e.dataset.busy && e.dataset.counts")


def test_page_brushes_drill_down_and_url_state(table, data):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    from test_serve import _artifacts, _browser, _settled

    df, kind = table
    art = _artifacts()
    with background(create_app(data)) as url:
        d = _browser()
        try:
            d.get(url)
            _settled(d)
            before = _counts(d, 1)
            canvas = d.find_element("css selector", "#hist-0 canvas")
            ActionChains(d).move_to_element_with_offset(canvas, -40, 10).click_and_hold() \
                .move_by_offset(60, 0).release().perform()
            brush = re.search(r"f\.fare=([^,&]+),([^&]+)", _wait(d, "return location.hash"))
            lo, hi = float(brush[1]), float(brush[2])
            assert 0 < lo < hi < 50
            _wait(d, "return (document.body.dataset.brushes || '').includes('f.fare=')")
            _settled(d)
            sent = d.execute_script("return performance.getEntriesByType('resource')"
                                    ".map(e => e.name).filter(n => n.includes('render.png'))")
            assert any(f"f.fare={brush[1]},{brush[2]}" in s for s in sent)
            _wait(d, f"return document.getElementById('hist-1').dataset.query === '&f.fare={brush[1]},{brush[2]}'")
            after = _counts(d, 1)
            ok = _ok(df, kind, [("fare", lo, hi)])
            want = np.histogram(df.dist[ok], 40, range=data.linked.cf.data_range("dist"))[0]
            assert after != before and after == ",".join(map(str, want))
            d.save_screenshot(str(art / "explore-1-brushed.png"))
            d.refresh()  # the URL holds the brush: a reload restores it
            _settled(d)
            _wait(d, "return document.getElementById('hist-1').dataset.query")
            assert _counts(d, 1) == after and "f.fare=" in d.current_url
            m = d.find_element("id", "canvas")
            ActionChains(d).key_down(Keys.SHIFT).move_to_element_with_offset(m, -120, -80) \
                .click_and_hold().move_by_offset(200, 140).release().key_up(Keys.SHIFT).perform()
            box = re.search(r"box=([^&]+)", _wait(d, "return location.hash.includes('box=') && location.hash"))
            box = [float(v) for v in box[1].split(",")]
            count = int(_wait(d, "return document.getElementById('drill').dataset.count"))
            assert count == _ok(df, kind, [("fare", lo, hi)], box).sum() > 0
            rows = d.find_elements("css selector", "#drill-table tbody tr")
            assert len(rows) == min(count, 100)
            href = d.find_element("id", "drill-csv").get_attribute("href")
            with urllib.request.urlopen(href) as r:
                assert len(pd.read_csv(r)) == count
            d.save_screenshot(str(art / "explore-2-box-drill.png"))
            errors = [e for e in d.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
            assert not errors, errors
        finally:
            d.quit()
