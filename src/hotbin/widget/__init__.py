"""``hotbin.explore``: linked, crossfiltered views of a table in Jupyter, with no server to start.

The kernel keeps the columns in memory and serves the ``hotbin serve`` page on 127.0.0.1 (a
free port, a thread); the widget shows that page in an iframe and syncs its brushes with
Python (:class:`hotbin.widget.explorer.Explorer`). Needs the ``explore`` extra (anywidget,
Starlette, uvicorn): ``pip install "hotbin[explore]"``; importing hotbin does not load them.
"""
from __future__ import annotations

__all__ = ["explore", "INSTALL"]

INSTALL = 'pip install "hotbin[explore]"'

#: the bins of a histogram panel without its own
BINS = 40


def explore(data, x, y, hist=(), *, by=None, weights=None, agg="count", project=None,
            x_range=None, y_range=None, clip=None, how="eq_hist", cmap="inferno", backend=None,
            height=640, transport="auto"):
    """A widget showing the map of ``x``, ``y`` and one linked histogram per ``hist`` column.

    Drag on a histogram to brush a half-open range ``[lo, hi)`` of its column, shift-drag on
    the map for a box: every other panel then counts only the rows passing every brush but
    its own (a crossfilter). The brushes are the widget's ``filters`` (and ``box``), readable
    and settable from Python, and ``selection()`` gives the rows passing them all.

    Parameters
    ----------
    data : table
        What :func:`hotbin.heatmap` takes as ``data=``, held in memory: a pandas or polars
        DataFrame (a LazyFrame is collected), a pyarrow Table or RecordBatch, a DuckDB
        relation or any Arrow stream (read once into a pyarrow Table), a dict of 1-D arrays.
    x, y : str
        The map's coordinate columns (longitude, latitude with ``project="mercator"``).
    hist : sequence of str, or dict
        Columns shown as linked histograms: names (40 bins over the column's finite extent)
        or ``{name: bins}`` / ``{name: (bins, lo, hi)}``; numpy.histogram's edges.
    by, weights, agg, project, x_range, y_range, clip, backend
        As :func:`hotbin.heatmap` (the map's categories, values and reduction).
    how, cmap : str
        The map's initial shading (see :meth:`hotbin.Heatmap.shade`).
    height : int
        The widget's height in pixels.
    transport : {"auto", "http", "comm"}
        How the browser gets the page: "http" loads the kernel's ``http://127.0.0.1:PORT/``
        (the browser and the kernel on one machine); "comm" carries every request of the page
        over the widget's own connection to the kernel (JupyterHub, remote kernels: slower);
        "auto" tries the first and falls back to the second.

    Returns
    -------
    Explorer
        An anywidget; ``w.filters``, ``w.box``, ``w.selection()``, ``w.close()`` (stops the
        server: also done when the widget is garbage-collected or the kernel exits).

    Notes
    -----
    The server listens on 127.0.0.1 only; a browser on another machine sees the page through
    the comm (``transport``), and any user of the kernel's machine can reach the port while
    the widget lives (docs/widget.md).
    """
    _require()
    from ..serve.params import Shading
    from ..serve.server import start_background
    from .data import dataset_of
    from .explorer import Explorer
    from .table import held

    table = held(data)
    dataset = dataset_of(table, x, y, _panels(hist), by=by, weights=weights, agg=agg,
                         project=project, x_range=x_range, y_range=y_range, clip=clip,
                         backend=backend)
    url, stop = start_background(dataset, Shading(how, cmap))
    try:
        return Explorer(table, dataset, url, stop, height=height, transport=transport)
    except BaseException:
        stop()
        raise


def _require() -> None:
    """ModuleNotFoundError naming the extra when anywidget, Starlette or uvicorn is missing."""
    import importlib

    for name in ("anywidget", "starlette", "uvicorn"):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:
            raise ModuleNotFoundError(f"hotbin.explore needs {name}: {INSTALL}") from None


def _panels(hist) -> dict:
    """``{name: (bins, lo, hi)}`` (lo, hi None: the column's extent) from ``hist``."""
    if isinstance(hist, str):
        hist = [hist]
    items = hist.items() if isinstance(hist, dict) else ((h, None) for h in hist)
    out = {}
    for name, spec in items:
        if not isinstance(name, str):
            raise TypeError(f"hist: expected column names, got {name!r}")
        if spec is None or isinstance(spec, int):
            spec = (BINS if spec is None else spec, None, None)
        try:
            bins, lo, hi = spec
        except (TypeError, ValueError):
            raise ValueError(f"hist: {name!r}: expected bins or (bins, lo, hi), got {spec!r}") from None
        if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
            raise ValueError(f"hist: {name!r}: bins must be a positive integer, got {bins!r}")
        out[name] = (bins, lo, hi)
    return out
