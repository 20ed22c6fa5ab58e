"""What the server computes for a request: views, pictures, statistics, cells, a legend.

A :class:`Renderer` turns a :class:`~hotbin.serve.params.View` into the view's heatmap (all
the points, re-aggregated), its picture (``Heatmap.shade``, flipped north up, PNG) and its
statistics. The last few heatmaps are kept (:data:`CACHE`), keyed by their exact view, so the
questions a page asks right after a picture (the statistics, the cell under the pointer, the
same view in another colormap) cost no second pass over the points. Every method is
synchronous; the app runs them on its single render thread (:mod:`hotbin.serve.worker`),
except :meth:`Renderer.cached` lookups, which are safe from any thread.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict

import numpy as np

from ..heatmap import heatmap
from ..render.shade import FLOOR, colormap
from .dataset import Dataset
from .encode import png_bytes
from .params import Shading, View

__all__ = ["Renderer", "Picture", "CACHE"]

#: heatmaps kept (a 1280 x 800 count view is 16 MB with its values), and their bytes at most;
#: the latest is always kept
CACHE = 4
CACHE_BYTES = 256 << 20
#: stops of each colormap sent to the page for its colorbar
STOPS = 64


class Picture:
    """A rendered view: PNG bytes and the view's statistics (``ms``: server time)."""

    def __init__(self, png: bytes, stats: dict):
        self.png, self.stats = png, stats


class Renderer:
    def __init__(self, data: Dataset, default: Shading = Shading()):
        self.data, self.default = data, default
        self._cache: OrderedDict = OrderedDict()  # view key -> (Heatmap, stats)
        self._lock = threading.Lock()

    def cached(self, view: View, filters=None):
        """``(heatmap, stats)`` of ``view`` (of the rows passing ``filters``) when it was
        computed recently, else None."""
        key = _key(view, filters)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
            return hit

    def aggregate(self, view: View, filters=None):
        """``(heatmap, stats)`` of ``view``: from the cache, else all the points (passing
        ``filters``, a :class:`~hotbin.serve.crossfilter.Filters`) aggregated."""
        hit = self.cached(view, filters)
        if hit is not None:
            return hit
        hm = self.data.heatmap(view, filters)
        entry = (hm, self.data.stats(hm, filters))
        with self._lock:
            self._cache[_key(view, filters)] = entry
            while len(self._cache) > 1 and (len(self._cache) > CACHE or sum(
                    _nbytes(h) for h, _ in self._cache.values()) > CACHE_BYTES):
                self._cache.popitem(last=False)
        return entry

    def picture(self, view: View, shading: Shading, filters=None) -> Picture:
        """The view shaded north up (row 0 of the picture is ``y1``), as PNG."""
        t0 = time.perf_counter()
        hm, stats = self.aggregate(view, filters)
        rgba = hm.shade(how=shading.how, cmap=shading.cmap)
        data = png_bytes(rgba[::-1])
        return Picture(data, dict(stats, ms=_ms(t0)))

    def stats(self, view: View, filters=None) -> dict:
        t0 = time.perf_counter()
        return dict(self.aggregate(view, filters)[1], ms=_ms(t0))

    def cell(self, view: View, i: int, j: int, filters=None) -> dict:
        """Cell ``(i, j)`` of ``view``: from its cached heatmap, else from a 1 x 1 heatmap."""
        hit = self.cached(view, filters)
        return self.data.cell(view, i, j, None if hit is None else hit[0], filters)

    def info(self, shading: Shading) -> dict:
        """What the page needs to draw its controls: the data, the choices, the colormaps."""
        from ..render.shade import CMAPS, HOWS
        from .params import MAX_PIXELS, MAX_SIDE

        d = self.data
        return {"n": d.n, "home": list(d.home), "agg": d.agg, "names": list(d.names),
                "weighted": d.weights is not None, "crs": d.crs, "tiles": d.projected,
                "hows": list(HOWS), "cmaps": list(CMAPS), "how": self.default.how,
                "cmap": self.default.cmap, "max_pixels": MAX_PIXELS, "max_side": MAX_SIDE,
                "colorbar": _stops(shading.cmap), "categories": self.legend(shading),
                "columns": d.linked.numeric, "by": d.by_name if d.labels is not None else None,
                "panels": [{"column": p.column, "bins": p.bins, "lo": p.lo, "hi": p.hi}
                           for p in d.linked.panels()]}

    def legend(self, shading: Shading):
        """``[{"label", "color"}]`` of the categories as the pictures colour them, or None.

        Each colour is that of a cell holding one point of that category alone, shaded as
        the views are (whatever rule :meth:`hotbin.Heatmap.shade` uses for categories).
        """
        labels = self.data.labels
        if labels is None:
            return None
        k = len(labels)
        codes = np.arange(k)
        hm = heatmap(codes + 0.5, np.full(k, 0.5), by=codes, width=k, height=1, x_range=(0, k),
                     y_range=(0, 1))
        rgba = hm.shade(how=shading.how, cmap=shading.cmap)[0]
        return [{"label": str(lab), "color": _hex(c)} for lab, c in zip(labels, rgba)]


def _key(view, filters):
    """A view's heatmap depends on the view and on every brush but the box."""
    return view.key, None if filters is None else filters.map_key


def _nbytes(hm) -> int:
    arrays = {id(a): a for a in (hm.counts, hm.values, hm.points, hm.value_counts) if a is not None}
    return sum(int(a.nbytes) for a in arrays.values())


def _stops(cmap) -> list[str]:
    """The colours a non-empty cell can take, bottom to top (from FLOOR up the colormap)."""
    lut = colormap(cmap)
    at = np.rint(np.linspace(FLOOR, 1.0, STOPS) * (lut.shape[0] - 1)).astype(int)
    return [_hex(c) for c in lut[at]]


def _hex(c) -> str:
    return "#" + "".join(f"{int(v):02x}" for v in c[:3])


def _ms(t0) -> float:
    return round(1e3 * (time.perf_counter() - t0), 2)
