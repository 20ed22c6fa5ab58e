"""The explore widget: an anywidget whose view is the ``hotbin serve`` page in an iframe.

The kernel holds the data and serves it (:func:`hotbin.serve.server.start_background`, on
127.0.0.1 and a free port, on a thread); the widget's JavaScript (``explorer.js``) shows that
page and relays its brushes both ways, so ``filters`` and ``box`` are the page's state and
setting them from Python moves the page's brushes. :meth:`Explorer.selection` asks the same
:class:`hotbin.serve.Dataset` for the rows that pass, in process, and takes them from the input.
"""
from __future__ import annotations

import math
import pathlib
import urllib.error
import urllib.request
import weakref
from concurrent.futures import ThreadPoolExecutor

import anywidget
import numpy as np
import traitlets

from .table import take

__all__ = ["Explorer"]


#: how the page reaches the kernel's server (see explorer.js): the browser's own HTTP, the
#: widget's comm, or HTTP when the browser reaches it and the comm otherwise
TRANSPORTS = ("auto", "http", "comm")
#: requests of the page relayed over the comm at once
RELAYS = 4


class Explorer(anywidget.AnyWidget):
    """Linked, crossfiltered views of a table (made by :func:`hotbin.explore`).

    Attributes
    ----------
    filters : dict
        ``{column: [lo, hi]}``, half-open brushes ``lo <= value < hi`` on the histogram
        columns (and, for the ``by`` column, ``{by: [label, ...]}``: the categories kept).
        Synced with the page: read it after brushing, or set it to move the brushes.
    box : list or None
        ``[x0, x1, y0, y1]``, the map's selection box, half-open on both axes (in Web Mercator
        metres with ``project="mercator"``), or None.
    url : str
        Where the kernel serves the page (``http://127.0.0.1:PORT/``).
    transport : {"auto", "http", "comm"}
        How the browser gets the page: from ``url`` ("http": the browser on the kernel's
        machine), through the widget's comm ("comm": a browser elsewhere, JupyterHub), or
        "http" when the browser reaches ``url`` and "comm" otherwise.
    height : int
        The iframe's height in pixels.
    """

    # the text, not the path: anywidget would watch a path and hold every widget made from it
    _esm = pathlib.Path(__file__).with_name("explorer.js").read_text(encoding="utf-8")
    _relay = traitlets.Unicode(pathlib.Path(__file__).with_name("relay.js").read_text(encoding="utf-8")
                               ).tag(sync=True)
    transport = traitlets.Enum(TRANSPORTS, "auto").tag(sync=True)
    url = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Int(640).tag(sync=True)
    filters = traitlets.Dict().tag(sync=True)
    box = traitlets.List(None, allow_none=True).tag(sync=True)

    def __init__(self, data, dataset, url, stop, *, height=640, transport="auto"):
        if transport not in TRANSPORTS:
            raise ValueError(f"transport: expected one of {', '.join(TRANSPORTS)}, got {transport!r}")
        self._data, self._dataset = data, dataset
        self._served = url  # where the relays ask, whatever the browser is told to try
        super().__init__(url=url, height=height, box=None, transport=transport)
        # the page's requests over the comm, answered off the kernel's main thread
        pool = ThreadPoolExecutor(RELAYS, thread_name_prefix="hotbin-relay")
        self._relays = pool
        self.on_msg(Explorer._relayed)
        # also when the widget is collected, or at exit: the relays end, then the server
        self._stop = weakref.finalize(self, _stop_all, pool, stop)

    @traitlets.validate("filters")
    def _check_filters(self, proposal):
        value = proposal["value"]
        out = {str(name): self._brush(str(name), v) for name, v in value.items()}
        try:
            self._dataset.linked.filters(out)  # the server's rule: what it can brush, and how
        except ValueError as exc:
            raise ValueError(f"filters: {exc}") from None
        return out

    @traitlets.validate("box")
    def _check_box(self, proposal):
        box = proposal["value"]
        if box is None:
            return None
        try:
            x0, x1, y0, y1 = (float(v) for v in box)
        except (TypeError, ValueError):
            raise ValueError(f"box: expected None or [x0, x1, y0, y1], got {box!r}") from None
        if not all(map(math.isfinite, (x0, x1, y0, y1))) or not (x0 < x1 and y0 < y1):
            raise ValueError(f"box: expected finite x0 < x1 and y0 < y1, got {box!r}")
        return [x0, x1, y0, y1]

    def _brush(self, name, value):
        """A brush as JSON holds it: ``[lo, hi]`` floats, or category labels for ``by``."""
        d = self._dataset
        if d.by is not None and name == d.by_name:
            if isinstance(value, (str, bytes)):
                value = [value]
            return [str(v) for v in value]
        try:
            lo, hi = (float(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"filters: {name!r}: expected [lo, hi], got {value!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"filters: {name!r}: expected finite lo < hi, got {value!r}")
        return [lo, hi]

    def selection(self):
        """The rows passing every brush and the box, in input order, as a table of the input's
        kind: pandas (its index kept), polars, a pyarrow Table (also for a DuckDB relation, an
        Arrow stream or a RecordBatch), or a dict of NumPy arrays."""
        rows = self.rows()
        return take(self._data, rows)

    def rows(self) -> np.ndarray:
        """The row numbers (0-based, int64, increasing) that :meth:`selection` takes."""
        box = None if self.box is None else tuple(self.box)
        return np.asarray(self._dataset.passing(dict(self.filters), box), np.int64)

    def _relayed(self, content, buffers):
        """A request of the page that came over the comm (``transport="comm"``)."""
        if isinstance(content, dict) and content.get("type") == "fetch" and self._stop.alive:
            self._relays.submit(self._answer, str(content.get("id")), str(content.get("path", "")))

    def _answer(self, rid, path):
        """Asks this widget's server for ``path`` (relative to it, nothing else) and sends the
        answer back: status, the headers the page reads, the body as a binary buffer."""
        if "://" in path or path.startswith(("/", "\\")) or any(c in path for c in "\r\n "):
            self.send({"type": "response", "id": rid, "error": f"not a path of the page: {path!r}"})
            return
        try:
            try:
                with urllib.request.urlopen(self._served + path, timeout=120) as r:
                    status, headers, body = r.status, r.headers, r.read()
            except urllib.error.HTTPError as exc:  # an answer too (400s name the parameter)
                with exc:
                    status, headers, body = exc.code, exc.headers, exc.read()
        except OSError as exc:
            status, headers, body = None, {}, str(exc)
        if not self._stop.alive:  # closed meanwhile: nobody to answer
            return
        if status is None:
            self.send({"type": "response", "id": rid, "error": f"{path}: {body}"})
            return
        kept = {k: headers[k] for k in ("Content-Type", "X-Hotbin-Stats", "Content-Disposition")
                if headers.get(k) is not None}
        self.send({"type": "response", "id": rid, "status": status, "headers": kept}, [body])

    def close(self):
        """Stop the server (its threads end, its port closes) and close the widget."""
        self._stop()
        super().close()

    @property
    def closed(self) -> bool:
        return not self._stop.alive


def _stop_all(pool, stop):
    pool.shutdown(wait=True, cancel_futures=True)
    stop()
