"""``hotbin serve``: a live, zoomable heatmap of every point, re-aggregated at each view.

The data is loaded once (:class:`Dataset`); a web page pans and zooms over it, and every view
is :func:`hotbin.heatmap` of all the points at the view's extent and pixel size, shaded and
sent as PNG. The same server answers other HTTP clients (``/render.png``, ``/stats.json``,
XYZ ``/tiles/{z}/{x}/{y}.png`` of projected data); :mod:`hotbin.serve.app` lists the routes.

Needs the ``serve`` extra (Starlette and uvicorn): ``pip install "hotbin[serve]"``.

Example::

    from hotbin.serve import Dataset, create_app, run
    run(create_app(Dataset(x, y)), port=8000)
"""
from __future__ import annotations

import importlib

from .dataset import Dataset
from .params import Shading, View

__all__ = ["Dataset", "Shading", "View", "create_app", "run", "background", "start_background",
           "require"]

INSTALL = 'pip install "hotbin[serve]"'


def require() -> None:
    """Raise ModuleNotFoundError naming the install command when Starlette or uvicorn is missing."""
    for name in ("starlette", "uvicorn"):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:
            raise ModuleNotFoundError(f"hotbin serve needs {name}: {INSTALL}") from None


def create_app(*args, **kwargs):
    """The ASGI app; see :func:`hotbin.serve.app.create_app`."""
    require()
    from .app import create_app as make

    return make(*args, **kwargs)


def run(app, *args, **kwargs):
    """Serve ``app`` with uvicorn until interrupted; see :func:`hotbin.serve.server.run`."""
    require()
    from .server import run as go

    return go(app, *args, **kwargs)


def background(app, *args, **kwargs):
    """A real server on a thread (a context manager yielding its URL); see
    :func:`hotbin.serve.server.background`."""
    require()
    from .server import background as bg

    return bg(app, *args, **kwargs)


def start_background(data, *args, **kwargs):
    """Serve ``data`` (a :class:`Dataset`) on a free local port on a thread: ``(url, stop)``;
    see :func:`hotbin.serve.server.start_background`."""
    require()
    from .server import start_background as go

    return go(data, *args, **kwargs)
