"""The ASGI app (Starlette): the page, its assets, and views of the data; nothing else.

Routes (all GET; HEAD too)::

    /                          the viewer page
    /static/{name}             its assets: the files the package ships in static/
    /info.json[?how&cmap]      the data's extent and size, the choices, a colorbar, a legend
    /render.png?x0&x1&y0&y1&width&height[&how&cmap]   the view shaded, north up
    /stats.json?x0&x1&y0&y1&width&height              {"n", "in_view", "max", "lo", "hi", "ms"}
    /cell.json?x0&x1&y0&y1&width&height&i&j           count and value of one cell (of each category)
    /tiles/{z}/{x}/{y}.png[?how&cmap]                 256 x 256 XYZ tiles (projected data only)
    /hist.json?column&bins&lo&hi[&x0&x1&y0&y1]       {"column", "edges", "counts", "n"}
    /rows.json?[x0&x1&y0&y1&]limit&offset             {"count", "columns", "rows"}: the drill-down
    /rows.csv?[x0&x1&y0&y1]                            every passing row, every column, as CSV

Every endpoint but the assets takes brushes ``f.COL=lo,hi`` (half-open; category names for
the ``by`` column): the map's rows pass every brush, a histogram's every brush but its own
column's and the box ``x0..y1`` (:mod:`hotbin.serve.crossfilter`), the rows every one.

A bound left out of a view is the home view's (the data's, or the ranges the server was given);
a size left out is 1280 x 800, or follows the view's aspect when the server was given both
ranges (:func:`hotbin.serve.params.parse_view`). The counts of a view are exactly
``hotbin.heatmap(x, y, x_range=(x0, x1), y_range=(y0, y1), width=width, height=height)``.
A bad parameter is HTTP 400 ``{"error": ...}``; too many waiting requests, 503; anything
unexpected, 500 with one line (and the traceback in the server's log). No path in a request
ever reaches the file system: assets are read from the package once, at start.
"""
from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import PurePath

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .dataset import Dataset
from .guard import HostGuard, host_of
from .crossfilter import MAX_BINS
from .params import (HIST_NAMES, ROWS_NAMES, SHADING_NAMES, VIEW_NAMES, BadRequest, Shading, View,
                     check_layers, check_names, parse_box, parse_brushes, parse_cell, parse_hist,
                     parse_rows, parse_shading, parse_tile, parse_view)
from .render import Renderer
from .worker import Busy, Gone, Worker

__all__ = ["create_app", "ASSETS"]

#: media types of the page's files, by suffix
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8"}
#: the files of the page, by name, with their media types: every page file that static/ holds
#: (index.html loads the scripts, in order)
ASSETS = {f.name: _TYPES[PurePath(f.name).suffix]
          for f in sorted((resources.files(__package__) / "static").iterdir(), key=lambda f: f.name)
          if PurePath(f.name).suffix in _TYPES}
#: the page may load only its own assets and the images it makes
CSP = ("default-src 'self'; img-src 'self' blob: data:; script-src 'self'; style-src 'self'; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors {}")
_DYNAMIC = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


def create_app(data: Dataset, shading: Shading = Shading(), *, max_pending: int = 64,
               allowed_hosts=None, frame_ancestors: str = "'none'"):
    """The Starlette app serving ``data``.

    Parameters
    ----------
    data : Dataset
        The points, loaded once.
    shading : Shading
        The page's initial ``how`` and ``cmap``, and the default of requests without them.
    max_pending : int
        Renders that may wait at once; more get HTTP 503 (see :mod:`hotbin.serve.worker`).
    allowed_hosts : list of str, optional
        Host names the requests must carry (e.g. ``["127.0.0.1", "::1", "localhost"]``, against
        DNS rebinding); default: any. A server on a loopback address checks them anyway
        (:mod:`hotbin.serve.server`).
    frame_ancestors : str
        Who may show the page in a frame (CSP ``frame-ancestors``): nobody by default; a
        notebook's widget needs its own origin, or ``*``.
    """
    if any(c in frame_ancestors for c in ";,\r\n"):
        raise ValueError(f"frame_ancestors: one CSP source list, got {frame_ancestors!r}")
    parse_shading({}, shading)  # the defaults must be valid too
    renderer = Renderer(data, shading)
    renderer.picture(View(*data.home, 64, 64), shading)  # compiles the kernels before any request
    data.linked.warm()
    worker = Worker(max_pending)
    files = {name: (resources.files(__package__) / "static" / name).read_bytes() for name in ASSETS}

    layers = 1 if data.labels is None else len(data.labels) + 1

    def view_of(query, names):
        check_names(query, names)
        view = parse_view(query, data.home, (1280, 800), square=data.square)
        check_layers(view, layers)
        return view

    linked = data.linked

    def filters_of(query, box=False):
        """The request's brushes (and, with ``box``, its box ``x0..y1``), or None."""
        brushes = parse_brushes(query, data.by_name if data.labels is not None else None)
        where = parse_box(query) if box else None
        if not brushes and where is None:
            return None
        return linked.filters(brushes, where)

    async def page(request):
        return Response(files["index.html"], media_type=ASSETS["index.html"],
                        headers={"Content-Security-Policy": CSP.format(frame_ancestors), **_DYNAMIC})

    async def asset(request):
        name = request.path_params["name"]
        if name not in files:
            raise HTTPException(404, f"no asset {name!r}")
        return Response(files[name], media_type=ASSETS[name], headers=_DYNAMIC)

    async def info(request):
        check_names(request.query_params, SHADING_NAMES, brushes=False)
        s = parse_shading(request.query_params, shading)
        return _json(await worker.run(lambda: renderer.info(s), request.receive))

    async def render(request):
        q = request.query_params
        view, s = view_of(q, VIEW_NAMES + SHADING_NAMES), parse_shading(q, shading)
        f = filters_of(q)
        pic = await worker.run(lambda: renderer.picture(view, s, f), request.receive)
        return _png(pic)

    async def stats(request):
        t0 = time.perf_counter()
        view = view_of(request.query_params, VIEW_NAMES)
        f = filters_of(request.query_params)
        hit = renderer.cached(view, f)
        if hit is not None:  # the view just drawn: no second pass over the points
            return _json(dict(hit[1], ms=round(1e3 * (time.perf_counter() - t0), 2)))
        return _json(await worker.run(lambda: renderer.stats(view, f), request.receive))

    async def cell(request):
        q = request.query_params
        view = view_of(q, VIEW_NAMES + ("i", "j"))
        i, j = parse_cell(q, view)
        f = filters_of(q)
        if renderer.cached(view, f) is not None:
            return _json(renderer.cell(view, i, j, f))
        return _json(await worker.run(lambda: renderer.cell(view, i, j, f), request.receive))

    async def hist(request):
        q = request.query_params
        check_names(q, HIST_NAMES)
        column, bins, lo, hi = parse_hist(q, MAX_BINS)
        f = filters_of(q, box=True) or linked.filters({})
        panel = linked.panel(column, bins, lo, hi)
        return _json(await worker.run(lambda: linked.hist(f, panel), request.receive))

    async def rows(request):
        q = request.query_params
        check_names(q, ROWS_NAMES)
        limit, offset = parse_rows(q)
        f = filters_of(q, box=True) or linked.filters({})
        return _json(await worker.run(lambda: linked.rows(f, limit, offset), request.receive))

    async def rows_csv(request):
        q = request.query_params
        check_names(q, ROWS_NAMES[:4])
        f = filters_of(q, box=True) or linked.filters({})
        idx = await worker.run(lambda: linked.passing(f), request.receive)
        return StreamingResponse(linked.csv_of(idx), media_type="text/csv; charset=utf-8", headers={
            **_DYNAMIC, "Content-Disposition": 'attachment; filename="rows.csv"'})

    async def tile(request):
        if not data.projected:
            raise HTTPException(404, "no tiles: the data is not projected (start the server with "
                                     "--project mercator)")
        p = request.path_params
        view = parse_tile(p["z"], p["x"], p["y"])
        check_layers(view, layers)
        check_names(request.query_params, SHADING_NAMES)
        s = parse_shading(request.query_params, shading)
        f = filters_of(request.query_params)
        return _png(await worker.run(lambda: renderer.picture(view, s, f), request.receive))

    routes = [Route("/", page), Route("/index.html", page), Route("/static/{name}", asset),
              Route("/info.json", info), Route("/render.png", render), Route("/stats.json", stats),
              Route("/cell.json", cell), Route("/tiles/{z}/{x}/{y}.png", tile),
              Route("/hist.json", hist), Route("/rows.json", rows), Route("/rows.csv", rows_csv)]
    names = None if allowed_hosts is None else {host_of(h) or h for h in allowed_hosts}
    middleware = [] if names is None else [
        Middleware(HostGuard, allowed=lambda value: host_of(value) in names)]
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={
        BadRequest: _bad_request, HTTPException: _http_error, Busy: _busy, Gone: _gone,
        ValueError: _bad_request, TypeError: _bad_request, Exception: _internal})
    app.state.renderer, app.state.worker, app.state.data = renderer, worker, data
    return app


def _json(obj, status=200, headers=None):
    return JSONResponse(obj, status_code=status, headers={**_DYNAMIC, **(headers or {})})


def _png(pic):
    stats = json.dumps(pic.stats, separators=(",", ":"))
    return Response(pic.png, media_type="image/png", headers={**_DYNAMIC, "X-Hotbin-Stats": stats})


async def _bad_request(request, exc):
    return _json({"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}, 400)


async def _http_error(request, exc):
    return _json({"error": exc.detail}, exc.status_code)


async def _busy(request, exc):
    return _json({"error": f"busy: {exc}"}, 503, {"Retry-After": "1"})


async def _gone(request, exc):
    return Response(status_code=499)  # nobody reads it: the client has left


async def _internal(request, exc):  # Starlette re-raises it after: the server logs the traceback
    return _json({"error": f"internal error: {type(exc).__name__}"}, 500)
