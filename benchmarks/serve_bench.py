"""hotbin serve as the browser sees it: request to decoded image, views at every zoom, and tiles.

A real uvicorn serves :mod:`hotbin.serve` on a loopback port; one client with a kept-alive
connection asks for 1280 x 800 views (``/render.png``) at several zooms around the densest
place of the data, each view a little off the last so no answer comes from the server's
cache, and decodes every PNG to pixels (Pillow). Reported per zoom: the median and 90th
percentile of request-to-decoded-image, and the server's own time (``X-Hotbin-Stats`` ms).
Then 256 x 256 XYZ tiles (``/tiles/z/x/y.png``) at several zooms. In process, the same
views' time in aggregation (:func:`hotbin.heatmap` of all the points), shading and PNG
encoding, and the encoder against :func:`hotbin.render.png.encode`.

Every zoom is also checked: the view's ``in_view`` must equal the points inside the
half-open view counted by a mask, independently of the heatmap.

Targets (issue #19): 2 CPU cores, 10M points: <= 150 ms per view whatever the zoom;
H200, 10^9 points: <= 100 ms per view, tiles <= 30 ms.

``--case explore``: linked views (``hotbin serve --hist``): the map and 4 histograms of 10M
rows; the brush on one histogram moves, and every panel's new answer (the map's PNG and the 4
``/hist.json``, asked at once on 5 connections as the page asks them) is timed to the last one
decoded; target p95 <= 150 ms on 2 cores. Each step's histograms are checked against NumPy.
With ``--gpu``: 10^9 rows generated on the device and kept there (the device crossfilter),
target p95 <= 100 ms on one H200; the histograms are checked against a mask and
``searchsorted`` on NumPy's edges computed with CuPy over every row.

Usage::

    python benchmarks/serve_bench.py [--points 10000000] [--repeat 9] [--out PATH]
    python benchmarks/serve_bench.py --case explore [--points 10000000] [--repeat 40] [--out PATH]
    python benchmarks/serve_bench.py --gpu --case explore [--points 1000000000] [--out PATH]
    python benchmarks/serve_bench.py --gpu [--points 1000000000] [--out PATH]   # needs CuPy

The points: the ``--demo`` data set (cities, roads, countryside) laid over New York in
longitude/latitude and projected once to Web Mercator (as ``hotbin serve --project mercator``
does). ``--gpu`` generates a similar set directly on the device (clusters of
Pareto-distributed sizes over a uniform background), so 10^9 points need no host memory.
"""
from __future__ import annotations

import argparse
import datetime
import http.client
import io
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

from floor_cpu import cpu_model  # noqa: E402  (benchmarks/ is on sys.path)
import hotbin
from hotbin.render import png
from hotbin.render.project import tile_bounds
from hotbin.serve import Dataset, Shading, View, background, create_app
from hotbin.serve.encode import png_bytes

WIDTH, HEIGHT = 1280, 800
#: view widths as fractions of the whole data's (1: all of it)
ZOOMS = (1.0, 1 / 4, 1 / 16, 1 / 256, 1 / 4096)
TILE_ZOOMS = (10, 12, 14, 16)
LON, LAT = (-74.30, -73.70), (40.50, 40.95)  # the demo's [0, 100)^2 laid over New York


def host_points(n, seed):
    from hotbin.cli.demo import demo_points

    x, y = demo_points(n, seed)
    return LON[0] + x * ((LON[1] - LON[0]) / 100), LAT[0] + y * ((LAT[1] - LAT[0]) / 100)


def device_points(n, seed, xp=None):
    """``n`` float32 lon/lat generated on the device (``xp``: CuPy) in slabs: 60 clusters of
    Pareto sizes (normal cores, a third with 4x wider tails) over a 10 % uniform background."""
    if xp is None:
        import cupy as xp
    rs = np.random.default_rng(seed)
    k = 60
    cx, cy = xp.asarray(rs.uniform(*LON, k)), xp.asarray(rs.uniform(*LAT, k))
    size = rs.pareto(1.2, k) + 1
    edges = xp.asarray(np.cumsum(size / size.sum()))
    spread = xp.asarray(0.002 + 0.01 * rs.random(k))
    lon, lat = xp.empty(n, xp.float32), xp.empty(n, xp.float32)
    gen = xp.random.RandomState(seed)
    slab = 1 << 27
    for lo in range(0, n, slab):
        m = min(slab, n - lo)
        c = xp.minimum(xp.searchsorted(edges, gen.random_sample(m)), k - 1)
        s = spread[c] * (1 + 3 * (gen.random_sample(m) < 0.3))
        bg = gen.random_sample(m) < 0.1
        lon[lo:lo + m] = xp.where(bg, LON[0] + (LON[1] - LON[0]) * gen.random_sample(m),
                                  cx[c] + s * gen.standard_normal(m))
        lat[lo:lo + m] = xp.where(bg, LAT[0] + (LAT[1] - LAT[0]) * gen.random_sample(m),
                                  cy[c] + s * gen.standard_normal(m))
    return lon, lat


def densest(data: Dataset):
    """The centre of the fullest cell of a 256 x 160 heatmap of everything (metres)."""
    x0, x1, y0, y1 = data.home
    hm = data.heatmap(View(x0, x1, y0, y1, 256, 160))
    counts = _host(hm.counts)
    j, i = np.unravel_index(np.argmax(counts), counts.shape)
    return (hm.x_edges[i] + hm.x_edges[i + 1]) / 2, (hm.y_edges[j] + hm.y_edges[j + 1]) / 2


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def views_at(data, zoom, repeat, rng):
    """``repeat`` views of the zoom around the densest place, each nudged (never cached)."""
    x0, x1, y0, y1 = data.home
    cx, cy = densest(data)
    w = (x1 - x0) * zoom
    h = w * HEIGHT / WIDTH
    out = []
    for _ in range(repeat):
        dx, dy = rng.uniform(-0.02, 0.02, 2) * w
        out.append(View(float(cx + dx - w / 2), float(cx + dx + w / 2), float(cy + dy - h / 2),
                        float(cy + dy + h / 2), WIDTH, HEIGHT))
    return out


class Client:
    """One kept-alive HTTP connection: ``get(path)`` -> (seconds to decoded pixels, pixels, stats)."""

    def __init__(self, url):
        host, port = url.split("//")[1].rstrip("/").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=600)

    def get(self, path):
        from PIL import Image

        t0 = time.perf_counter()
        self.conn.request("GET", path)
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"{path}: HTTP {r.status}: {body[:200]!r}")
        pixels = np.asarray(Image.open(io.BytesIO(body)).convert("RGBA"))
        return time.perf_counter() - t0, pixels, json.loads(r.getheader("X-Hotbin-Stats"))


def query(v: View):
    return (f"x0={float(v.x0)!r}&x1={float(v.x1)!r}&y0={float(v.y0)!r}&y1={float(v.y1)!r}"
            f"&width={v.width}&height={v.height}")


def inside(data, v: View) -> int:
    """Points in the half-open view, by a mask (the oracle)."""
    x, y = data.x, data.y
    return int(((x >= v.x0) & (x < v.x1) & (y >= v.y0) & (y < v.y1)).sum())


def parts(data, v: View, shading: Shading):
    """In process: (aggregate, shade, encode) seconds of one view."""
    t0 = time.perf_counter()
    hm = data.heatmap(v)
    _host(hm.counts[:1, :1])  # the device has finished
    t1 = time.perf_counter()
    rgba = hm.shade(how=shading.how, cmap=shading.cmap)
    t2 = time.perf_counter()
    png_bytes(rgba[::-1])
    return t1 - t0, t2 - t1, time.perf_counter() - t2


def ms(vals):
    return 1e3 * statistics.median(vals)


def p90(vals):
    return 1e3 * sorted(vals)[min(len(vals) - 1, int(0.9 * len(vals)))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", action="store_true", help="the H200 target: CuPy data, the cuda backend")
    ap.add_argument("--points", type=int, default=None, help="default 10M (cpu), 10^9 (--gpu)")
    ap.add_argument("--repeat", type=int, default=9, help="views per zoom (default 9)")
    ap.add_argument("--how", default="eq_hist")
    ap.add_argument("--out", help="write the results as Markdown here")
    ap.add_argument("--case", choices=("views", "explore"), default="views",
                    help="views (default): zooms and tiles; explore: linked histograms")
    args = ap.parse_args(argv)
    if args.case == "explore":
        return explore(args)
    n = args.points or (10 ** 9 if args.gpu else 10_000_000)
    shading = Shading(args.how, "inferno")
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    t0 = time.perf_counter()
    if args.gpu:
        import cupy

        lon, lat = device_points(n, 2026)
        dev = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        data = Dataset(lon, lat, project="mercator", backend="cuda")
        del lon, lat
        cupy.cuda.Device().synchronize()
    else:
        lon, lat = host_points(n, 2026)
        dev = "cpu"
        data = Dataset(lon, lat, project="mercator", backend="cpu")
        del lon, lat
    load = time.perf_counter() - t0
    app = create_app(data, shading)
    import numba

    say(f"# hotbin serve: request to decoded image, {n:,} points ({'GPU' if args.gpu else 'CPU'})")
    say()
    say(f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. CPU: {cpu_model()}, "
        f"{os.cpu_count()} cores (numba threads {numba.get_num_threads()}); device: {dev}. "
        f"Python {platform.python_version()}, numpy {np.__version__}, hotbin {hotbin.__version__}. "
        f"Load average before: {os.getloadavg()[0]:.2f}. Points made, projected and loaded in {load:.1f} s. "
        f"Shading: {shading.how}, {shading.cmap}.")
    say()
    rng = np.random.default_rng(1)
    failures = []
    with background(app) as url:
        client = Client(url)
        client.get(f"/render.png?{query(View(*data.home, WIDTH, HEIGHT))}")  # warm: kernels, threads
        say(f"## {WIDTH} x {HEIGHT} views (target {'100' if args.gpu else '150'} ms)")
        say()
        say("| view width / data's | in view | request→pixels median ms | p90 ms | server ms | "
            "aggregate ms | shade ms | encode ms | PNG KB |")
        say("|---|---|---|---|---|---|---|---|---|")
        worst = 0.0
        for zoom in ZOOMS:
            views = views_at(data, zoom, args.repeat, rng)
            took, server, size, seen = [], [], [], None
            for v in views:
                dt, pixels, stats = client.get(f"/render.png?{query(v)}")
                assert pixels.shape == (HEIGHT, WIDTH, 4)
                took.append(dt)
                server.append(stats["ms"] / 1e3)
                seen = stats["in_view"]
            want = inside(data, views[-1])
            if seen != want:
                failures.append(f"zoom {zoom}: in_view {seen} != {want} points inside")
            split = [parts(data, v, shading) for v in views[:3]]
            size = len(png_bytes(data.heatmap(views[0]).shade(how=shading.how)[::-1]))
            worst = max(worst, ms(took))
            say(f"| 1/{round(1 / zoom)} | {seen:,} | {ms(took):.1f} | {p90(took):.1f} | {ms(server):.1f} | "
                f"{ms([s[0] for s in split]):.1f} | {ms([s[1] for s in split]):.1f} | "
                f"{ms([s[2] for s in split]):.1f} | {size / 1024:.0f} |")
        say()
        say(f"Worst median: {worst:.1f} ms.")
        say()
        say("## 256 x 256 XYZ tiles (target 30 ms on the H200)")
        say()
        say("| zoom | tiles | request→pixels median ms | p90 ms | server ms |")
        say("|---|---|---|---|---|")
        cx, cy = densest(data)
        for z in TILE_ZOOMS:
            side = 2 * np.pi * 6378137.0 / (1 << z)
            tx0, ty0 = int((cx + np.pi * 6378137.0) // side), int((np.pi * 6378137.0 - cy) // side)
            tiles = [(z, tx0 + dx, ty0 + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
            took, server = [], []
            for t in tiles:
                dt, pixels, stats = client.get("/tiles/{}/{}/{}.png".format(*t))
                assert pixels.shape == (256, 256, 4)
                took.append(dt)
                server.append(stats["ms"] / 1e3)
                if t == tiles[4]:  # the centre tile, checked
                    x0, x1, y0, y1 = tile_bounds(*t)
                    if stats["in_view"] != inside(data, View(x0, x1, y0, y1, 256, 256)):
                        failures.append(f"tile {t}: in_view {stats['in_view']} differs")
            say(f"| {z} | {len(tiles)} | {ms(took):.1f} | {p90(took):.1f} | {ms(server):.1f} |")
    say()
    say("## PNG encoding of one whole view (in process)")
    say()
    rgba = np.ascontiguousarray(data.heatmap(View(*data.home, WIDTH, HEIGHT)).shade(how=shading.how)[::-1])
    say("| encoder | ms | KB |")
    say("|---|---|---|")
    for name, fn in (("hotbin.serve png_bytes (level 1, bands on every core)", png_bytes),
                     ("hotbin.render.png.encode (level 6, one stream)", png.encode)):
        times = []
        for _ in range(5):
            t = time.perf_counter()
            out = fn(rgba)
            times.append(time.perf_counter() - t)
        say(f"| {name} | {ms(times):.1f} | {len(out) / 1024:.0f} |")
    say()
    say("Check: in_view of every zoom's last view and of the centre tiles equals the points inside the "
        "half-open view counted by a mask: " + ("FAILED: " + "; ".join(failures) if failures else "ok") + ".")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if failures else 0


def device_columns(n, seed):
    """The explore case's 4 columns made on the device (CuPy) in slabs, each in a narrow dtype:
    fare (float32, cents), dist and speed (float32), hour (int8)."""
    import cupy as cp

    gen = cp.random.RandomState(seed)
    cols = {"fare": cp.empty(n, cp.float32), "dist": cp.empty(n, cp.float32),
            "hour": cp.empty(n, cp.int8), "speed": cp.empty(n, cp.float32)}
    slab = 1 << 27
    for lo in range(0, n, slab):
        m = min(slab, n - lo)
        cols["fare"][lo:lo + m] = cp.round(gen.gamma(2.0, 6.0, m), 2)
        cols["dist"][lo:lo + m] = gen.exponential(3.0, m)
        cols["hour"][lo:lo + m] = gen.randint(0, 24, m)
        cols["speed"][lo:lo + m] = gen.normal(20, 6, m)
    return cols


def oracle(cols, brushes, panel, xp):
    """numpy.histogram's counts of ``panel``'s column over the rows passing ``brushes``
    (``{column: (lo, hi)}``, half-open), every value compared in float64 as the crossfilter
    compares it: a mask, then the bin of each value by ``searchsorted`` on NumPy's edges (the
    last bin closed), a slab of rows at a time (NumPy or CuPy, ``xp``)."""
    edges = np.histogram_bin_edges(np.empty(0), panel.bins, (panel.lo, panel.hi))
    e = xp.asarray(edges)
    counts = xp.zeros(panel.bins, xp.int64)
    n = len(cols[panel.column])
    for s in range(0, n, 1 << 27):
        ok = None
        for name, (lo, hi) in brushes.items():
            v = cols[name][s:s + (1 << 27)].astype(xp.float64)
            m = (v >= lo) & (v < hi)
            ok = m if ok is None else ok & m
        v = cols[panel.column][s:s + (1 << 27)].astype(xp.float64)
        v = v if ok is None else v[ok]
        v = v[(v >= e[0]) & (v <= e[-1])]
        i = xp.searchsorted(e, v, side="right") - 1
        i = xp.where(v == e[-1], panel.bins - 1, i)
        counts += xp.bincount(i, minlength=panel.bins)[:panel.bins]
    return _host(counts).tolist()


def explore(args):
    """``--case explore``: a brush moved on one of 4 linked histograms; every panel re-asked."""
    from concurrent.futures import ThreadPoolExecutor

    import numba
    from PIL import Image

    n, repeat = args.points or (10 ** 9 if args.gpu else 10_000_000), max(args.repeat, 40)
    t0 = time.perf_counter()
    if args.gpu:
        import cupy as xp

        lon, lat = device_points(n, 2026)
        cols = device_columns(n, 7)
        dev = xp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        data = Dataset(lon, lat, project="mercator", backend="cuda", hist=cols)
        del lon, lat

        def sync():
            xp.cuda.Device().synchronize()
    else:
        xp, dev = np, "cpu"
        lon, lat = host_points(n + n // 20, 2026)  # the demo's generator makes a few fewer than asked
        lon, lat = lon[:n], lat[:n]
        rng = np.random.default_rng(7)
        cols = {"fare": np.round(rng.gamma(2.0, 6.0, n), 2), "dist": rng.exponential(3.0, n),
                "hour": rng.integers(0, 24, n).astype(np.float64), "speed": rng.normal(20, 6, n)}
        data = Dataset(lon, lat, project="mercator", backend="cpu", hist=cols)

        def sync():
            pass
    panels = data.linked.panels()
    data.linked.warm()  # the columns held and binned (on the device with --gpu): part of loading
    sync()
    load = time.perf_counter() - t0
    target = 100 if args.gpu else 150
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    say(f"# hotbin serve --hist: a brush moved, every linked panel re-asked, {n:,} rows "
        f"({'GPU' if args.gpu else 'CPU'})")
    say()
    say(f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. CPU: {cpu_model()}, "
        f"{os.cpu_count()} cores (numba threads {numba.get_num_threads()}); device: {dev}. Python "
        f"{platform.python_version()}, numpy {np.__version__}, hotbin {hotbin.__version__}. Load "
        f"average before: {os.getloadavg()[0]:.2f}. Loaded in {load:.1f} s (the columns held and "
        f"binned by the {type(data.linked.cf).__name__}). The map (1280 x 800, the whole data) and 4 "
        f"histograms of {panels[0].bins} bins ({', '.join(f'{k} {v.dtype}' for k, v in cols.items())}); "
        f"the brush on fare moves by 0.37 each step ({repeat} steps) and dist gets a fixed brush; each "
        "step asks for the map's PNG and the 4 /hist.json at once on 5 kept-alive connections (as the "
        "page does) and is timed from the first request to the last answer decoded (PNG to pixels, JSON).")
    say()
    view = query(View(*data.home, WIDTH, HEIGHT))
    failures = []
    with background(create_app(data, Shading(args.how, "inferno"))) as url:
        clients = [Client(url) for _ in range(5)]

        def get(k, path):
            c = clients[k]
            t = time.perf_counter()
            c.conn.request("GET", path)
            r = c.conn.getresponse()
            body = r.read()
            if r.status != 200:
                raise RuntimeError(f"{path}: HTTP {r.status}: {body[:200]!r}")
            out = np.asarray(Image.open(io.BytesIO(body)).convert("RGBA")) if k == 0 else json.loads(body)
            return time.perf_counter() - t, out, r.getheader("X-Hotbin-Stats")

        def step(lo):
            f = f"&f.fare={lo!r},{lo + 8.0!r}&f.dist=1.0,6.0"
            paths = [f"/render.png?{view}{f}"] + [
                f"/hist.json?column={p.column}&bins={p.bins}&lo={p.lo!r}&hi={p.hi!r}{f}" for p in panels]
            t = time.perf_counter()
            with ThreadPoolExecutor(5) as pool:
                got = list(pool.map(get, range(5), paths))
            return time.perf_counter() - t, got

        step(1.0)  # warm: kernels, threads
        took, server = [], []
        for k in range(repeat):
            lo = 2.0 + 0.37 * k
            dt, got = step(lo)
            took.append(dt)
            server.append(json.loads(got[0][2])["ms"])
            if k % 10 == 0:  # the speed panel: every brush applies; fare: its own does not
                both = {"fare": (lo, lo + 8.0), "dist": (1.0, 6.0)}
                if got[4][1]["counts"] != oracle(cols, both, panels[3], xp):
                    failures.append(f"step {k}: speed histogram differs from numpy")
                if got[1][1]["counts"] != oracle(cols, {"dist": (1.0, 6.0)}, panels[0], xp):
                    failures.append(f"step {k}: fare histogram differs from numpy")
    took.sort()
    p95 = 1e3 * took[min(len(took) - 1, int(np.ceil(0.95 * len(took))) - 1)]
    say(f"| steps | median ms | p95 ms (target {target}) | max ms | map server ms (median) |")
    say("|---|---|---|---|---|")
    say(f"| {repeat} | {ms(took):.1f} | {p95:.1f} | {1e3 * took[-1]:.1f} | {statistics.median(server):.1f} |")
    say()
    split = []  # in process, a new brush each time: the pass, the map's rows, aggregate, shade, encode
    home = View(*data.home, WIDTH, HEIGHT)
    for k in range(7):
        f = data.linked.filters({"fare": (5.0 + 0.1 * k, 13.0 + 0.1 * k), "dist": (1.0, 6.0)})
        t = [time.perf_counter()]
        data.linked.cf.histograms(f, panels)
        t.append(time.perf_counter())
        data.linked.map_arrays(f, (data.x, data.y, None, None))
        sync()
        t.append(time.perf_counter())
        hm = data.heatmap(home, f)
        sync()
        t.append(time.perf_counter())
        rgba = hm.shade(how=args.how)
        t.append(time.perf_counter())
        png_bytes(rgba[::-1])
        t.append(time.perf_counter())
        split.append(np.diff(t))
    med = 1e3 * np.median(split, axis=0)
    say("In process, a new brush (median of 7), ms: crossfilter pass (masks, the map's rows marked, 4 "
        f"histograms) {med[0]:.1f}; the map's rows compacted {med[1]:.1f}; heatmap of them "
        f"{med[2]:.1f}; shade {med[3]:.1f}; PNG {med[4]:.1f}.")
    say()
    say(f"p95 {p95:.1f} ms against the target {target} ms: {'met' if p95 <= target else 'NOT met'}.")
    say()
    say("Check: the speed and fare histograms of every tenth step equal numpy.histogram of the rows "
        "passing the other brushes: " + ("FAILED: " + "; ".join(failures) if failures else "ok") + ".")
    if args.out:  # after the views' results in the same file, replacing an earlier explore run
        old = open(args.out).read() if os.path.exists(args.out) else ""
        head = lines[0].split(",")[0]  # "# hotbin serve --hist: ..."
        old = old[:old.index(head)] if head in old else old
        with open(args.out, "w") as fh:
            fh.write((old.rstrip("\n") + "\n\n" if old.strip() else "") + "\n".join(lines) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
