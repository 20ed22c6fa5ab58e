"""The points a server shows, held in memory once, and the heatmap of any view of them.

A :class:`Dataset` keeps the coordinates (projected once, at load, when ``project`` says so:
every view and tile is then a range in metres), the weights and the category codes, on the
device that aggregates them: CuPy arrays when the cuda backend is asked for or usable here,
NumPy otherwise. Each view is :func:`hotbin.heatmap` of **all** the points over the view's
half-open ranges, so its counts are exactly those of ``hotbin.heatmap(x, y, x_range=(x0, x1),
y_range=(y0, y1), width=..., height=...)``.
"""
from __future__ import annotations

import math

import numpy as np

from ..aggregate import AGGS
from ..core.arrays import is_dask, to_host, xp
from ..backend import load
from ..core.binning import cell_rule
from ..heatmap import Heatmap, heatmap
from ..render.project import CRS, PROJECTIONS, inverse, projected
from ..core.ranges import check_clip, given_range
from .linked import Linked
from .params import View

__all__ = ["Dataset"]

#: the home view's margin around the data, as a fraction of its extent
MARGIN = 0.02


class Dataset:
    """Points ``(x, y)`` with optional weights and categories, ready to aggregate per view.

    Parameters
    ----------
    x, y : array_like, 1-D
        Coordinates (longitude, latitude in degrees with ``project="mercator"``). Dask arrays
        stay lazy: data larger than memory, each view a Dask job (on a cluster's workers
        when a ``distributed.Client`` is active).
    weights : array_like, optional
        The values ``agg`` aggregates (see :func:`hotbin.heatmap`).
    by : array_like of int, optional
        Category codes ``0 <= code < len(labels)`` (others count in no category).
    labels : sequence, optional
        Names of the categories (default: the codes).
    agg : str
        One of :data:`hotbin.aggregate.AGGS`.
    q : float or sequence, optional
        The quantile of ``agg="quantile"`` (:func:`hotbin.heatmap`).
    project : {"mercator"}, optional
        Project the coordinates to Web Mercator metres once, here.
    backend : {"cpu", "cuda", "wgpu"}, optional
        Default: cuda when it is usable (the arrays move to the GPU once), else the input's.
    names : (str, str)
        Names of the coordinates, for the page.
    x_range, y_range : (float, float), optional
        The home view's extent on that axis (in degrees with ``project``), as
        :func:`hotbin.heatmap` takes them. Default: the data's finite extent and a margin.
    clip : (float, float), optional
        Percentiles of the data that bound the home view on each axis without a range
        (:func:`hotbin.heatmap`'s ``clip``: the lower and the higher percentile).
    hist : dict of str to array_like, optional
        Columns shown as linked histograms (crossfiltered: :mod:`hotbin.serve.crossfilter`);
        with the coordinates, the weights and the categories, the columns a brush may name.
    panels : dict of str to (bins, lo, hi), optional
        Each histogram's bins and range (``lo``, ``hi`` None: the column's finite extent);
        default 40 bins over the extent.
    table : pyarrow.Table or pandas.DataFrame, optional
        Every column of the input, row for row, for the drill-down (``/rows.json``); default:
        the columns above.
    weight_name, by_name : str, optional
        Names of the weights and the category columns, for brushes and the drill-down.

    With both ranges given, requests without a size get square cells
    (:func:`hotbin.serve.params.parse_view`).
    """

    def __init__(self, x, y, weights=None, by=None, *, labels=None, agg="count", q=None, project=None,
                 backend=None, names=("x", "y"), x_range=None, y_range=None, clip=None, hist=None,
                 panels=None, table=None, weight_name="weight", by_name="category"):
        if agg not in AGGS:
            raise ValueError(f"agg: expected one of {', '.join(AGGS)}, got {agg!r}")
        ranges = [None if r is None else given_range(r, f"{a}_range") for a, r in (("x", x_range),
                                                                                   ("y", y_range))]
        clip = check_clip(clip)
        if project is not None and project not in PROJECTIONS:
            raise ValueError(f"project: expected one of {', '.join(PROJECTIONS)}, got {project!r}")
        lazy = is_dask(x)  # dask arrays (data larger than memory): every view is a Dask job
        if backend is None and not lazy and type(x).__module__.split(".")[0] != "cupy" \
                and _cuda_usable():
            backend = "cuda"
        xp = _array_module(backend, lazy)
        x, y = xp.asarray(x), xp.asarray(y)
        raw = (x, y)
        if project is not None:
            x, y, *ranges, _ = projected(project, x, y, *ranges)
        self.x, self.y = x, y
        self.weights = None if weights is None else xp.asarray(weights)
        self.by = None if by is None else xp.asarray(by)
        if lazy and math.isnan(self.x.shape[0]):
            for a in (self.x, self.y, self.weights, self.by):
                if a is not None:
                    a.compute_chunk_sizes()
        if self.by is not None:
            if labels is None:
                labels = range(int(to_host(self.by.max())) + 1 if self.by.size else 1)
            labels = tuple(labels)
            if not labels:
                raise ValueError("labels: no category to show")
        self.labels = labels if self.by is not None else None
        self.agg, self.q, self.backend, self.names = agg, q, backend, tuple(names)
        self.crs = CRS if project is not None else None
        self.n = int(self.x.shape[0])
        # checks the arrays; the finite extents (or percentiles) of the axes without a range
        whole = heatmap(self.x, self.y, self.weights, agg=agg, by=self.by, width=1, height=1,
                        x_range=ranges[0], y_range=ranges[1], clip=clip, backend=backend, q=q)
        self.home = _home(ranges, (whole.x_range, whole.y_range), clip is not None)
        self.square = None not in ranges
        self.weight_name, self.by_name = weight_name, by_name
        self.linked = Linked(self, raw, hist or {}, panels or {}, table, lazy)

    @property
    def columns(self) -> list:
        """The input's column names (those the drill-down shows)."""
        return self.linked.columns

    def passing(self, filters: dict, view=None) -> np.ndarray:
        """Row numbers (int64, 0-based, input order) passing every brush of ``filters``
        (``{column: (lo, hi)}`` half-open, or ``{by column: [category, ...]}``) and, when given,
        the half-open ``view`` ``(x0, x1, y0, y1)`` (a :class:`View` too) on the map's axes."""
        return self.linked.passing(self.linked.filters(filters, view))

    @property
    def projected(self) -> bool:
        return self.crs is not None

    def heatmap(self, view: View, filters=None) -> Heatmap:
        """The points passing ``filters`` (a :class:`~hotbin.serve.crossfilter.Filters`; its box
        aside) aggregated over ``view``'s cells (ranges half-open)."""
        return self._heatmap((view.x0, view.x1), (view.y0, view.y1), view.width, view.height,
                             filters)

    def _heatmap(self, x_range, y_range, width, height, filters=None):
        arrays = (self.x, self.y, self.weights, self.by)
        cut = None if filters is None else self.linked.map_arrays(filters, arrays)
        x, y, w, by = arrays if cut is None else cut
        return heatmap(x, y, w, agg=self.agg, by=by, width=width, height=height,
                       x_range=x_range, y_range=y_range, backend=self.backend, q=self.q)

    def cell(self, view: View, i: int, j: int, hm: Heatmap | None = None, filters=None) -> dict:
        """Count and value of cell ``(i, j)`` (column from x0, row from y0) of ``view``; with
        categories, the value of every category (0 and None, for NaN, included).

        From ``hm`` (the view's heatmap) when given; else a 1 x 1 heatmap over the cell's
        own edges, which holds exactly the same points (the same edges, the same rule).
        """
        xe = cell_rule(view.width, view.x0, view.x1, "width").edges[i:i + 2]
        ye = cell_rule(view.height, view.y0, view.y1, "height").edges[j:j + 2]
        if hm is None:
            hm, i0, j0 = self._heatmap(tuple(xe), tuple(ye), 1, 1, filters), 0, 0
        else:
            i0, j0 = i, j
        out = {"i": i, "j": j, "x": [float(xe[0]), float(xe[1])], "y": [float(ye[0]), float(ye[1])],
               "count": _scalar(hm.counts[j0, i0])}
        if self.by is None:
            out["value"] = _scalar(hm.values[j0, i0])
        else:
            vals = np.asarray(to_host(hm.values[:, j0, i0]))
            out["categories"] = {str(lab): _scalar(v) for lab, v in zip(self.labels, vals)}
        if self.projected:
            lon, lat = inverse(np.array(out["x"]), np.array(out["y"]))
            out["lon"], out["lat"] = lon.tolist(), lat.tolist()
        return out

    def stats(self, hm: Heatmap, filters=None) -> dict:
        """``n`` (all points), ``in_view`` (points passing ``filters`` in a cell), ``max``
        (largest cell of counts), and ``lo``/``hi``: the extent of what the picture shades."""
        counts = hm.counts
        occupied = hm.points != 0
        lo = hi = None
        if bool(occupied.any()):
            shaded = counts if self.agg == "count" or hm.categories is not None else hm.values
            if shaded.ndim == 2:
                v = shaded[occupied & xp(shaded).isfinite(shaded)]
                if v.size:
                    lo, hi = _scalar(v.min()), _scalar(v.max())
        rows = self.n if filters is None else self.linked.map_count(filters)
        return {"n": self.n, "in_view": rows - int(hm.dropped), "max": _scalar(counts.max()),
                "lo": lo, "hi": hi}


def _cuda_usable() -> bool:
    try:
        load("cuda")
    except Exception:  # no CuPy, no device: the host it is
        return False
    return True


def _array_module(backend, lazy=False):
    if lazy:
        import dask.array

        return dask.array
    if backend == "cuda":
        import cupy

        return cupy
    return np


def _scalar(v):
    """A JSON number (int for integers), or None for NaN and infinities (JSON has neither)."""
    v = to_host(v)
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _home(given, found, clipped):
    """The first view: per axis the range given, else the percentiles found (``clipped``), else
    the data's extent with a margin, half-open above all the points."""
    out = []
    for r, (lo, hi) in zip(given, found):
        if r is not None or clipped:
            out += [float(lo), float(hi)]
            continue
        pad = (hi - lo) * MARGIN if hi > lo else 0.5
        out += [float(lo - pad), float(hi + pad)]
    return tuple(out)
