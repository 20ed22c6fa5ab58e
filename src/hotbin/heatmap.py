"""Spatial heatmaps: count (or sum weights of) points on a grid of cells.

A heatmap is a 2-D histogram with heatmap conventions (DESIGN.md §3-4): the
grid is ``counts[row, column]`` with row 0 at ``y_range[0]`` (north up when
drawn, see :meth:`Heatmap.to_png`). Cells are ``linspace(lo, hi, n + 1)`` along
each axis. A given range is half-open, ``[lo, hi)``, so heatmaps of adjacent
ranges tile without double counting; a range taken from the data is closed,
``[min, max]``, with NumPy's edges, so every cell equals ``numpy.histogram2d``'s.
Cells: :func:`hotbin.core.binning.cell_rule`; counting: the backend's ``histogram2d``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .io import frames
from .render.legend import encode_heatmap
from .render.notebook import heatmap_html, heatmap_png
from .core import validate
from .core.arrays import as_float64
from .aggregate import aggregate, check_agg, merge_heatmaps
from .core.binning import cell_rule
from .heatmap_grid import cells_over
from .render.project import projected
from .exec.local import portable
from .exec.stream import Column, executor
from .core.ranges import data_range, interval

__all__ = ["Heatmap", "heatmap", "data_range"]


@dataclass(frozen=True, eq=False)
class Heatmap:
    """The result of :func:`heatmap`.

    Attributes
    ----------
    counts : array, shape (height, width)
        ``counts[i, j]`` is the number of points (int64) with ``y`` in row ``i``
        and ``x`` in column ``j``; for the weighted count (``agg="count"`` with
        weights) the sum of their weights (float64). With a value aggregation
        (sum, mean, min, max, std, var) the points with a value (a non-NaN
        weight); with ``by``, the points with a category. Row 0 is
        ``y_range[0]``. Same array type and device as the input.
    values : array
        The aggregation ``agg`` of each cell as float64, NaN where a cell has no
        value (count and any: 0); shape ``(height, width)``, or ``(ncat,
        height, width)`` with ``by``.
    dropped : int
        Points that landed in no cell: outside the ranges, NaN or infinite.
        ``counts.sum() + skipped + dropped == n`` for unweighted counts and
        every value aggregation.
    x_range, y_range : (float, float)
        The extents that the cells divide evenly: ``[lo, hi)``, or ``[lo, hi]``
        when ``x_closed`` / ``y_closed``.
    x_closed, y_closed : bool
        Whether the last column / row holds the points on its upper edge (true
        for ranges taken from the data, as ``numpy.histogram2d``).
    points : array, shape (height, width)
        The number of points in each cell (int64): ``counts`` itself unless
        ``counts`` are weight sums. A cell is empty iff it holds no points; a
        weighted cell whose sum is 0 is not empty.
    agg : str
        The aggregation (:mod:`hotbin.aggregate`).
    categories : tuple or None
        The labels of ``values``' first axis with ``by``.
    skipped : int
        Points in a cell that have no value (NaN weight) or no category.
    x_name, y_name : str
        Names of the coordinates (the columns, with ``data=``): ``to_xarray``'s dims.
    crs : str or None
        The coordinates' reference system when projected (``"EPSG:3857"``).
    value_counts : array
        The number of values behind each entry of ``values`` (int64, its shape):
        ``counts`` without ``by``, the points per category and cell with it.
    means : array or None
        The cell means behind var and std (what merges them in ``+``).
    order : tuple or None
        Median and quantile in memory: the reduction and its partial, every value by cell
        (what merges them in ``+``; :mod:`hotbin.order_stats`).
    """

    counts: Any
    dropped: int
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    x_closed: bool = False
    y_closed: bool = False
    points: Any = None
    agg: str = "count"
    values: Any = None
    categories: tuple | None = None
    skipped: int = 0
    x_name: str = "x"
    y_name: str = "y"
    crs: str | None = None
    value_counts: Any = None
    means: Any = field(default=None, repr=False)
    order: Any = field(default=None, repr=False)

    def __post_init__(self):
        if self.points is None:
            if self.counts.dtype.kind == "f":
                raise ValueError("points: a weighted heatmap needs the number of points per cell")
            object.__setattr__(self, "points", self.counts)
        if self.__dict__["_values"] is None and (self.agg != "count" or self.categories is not None):
            raise ValueError(f"values: a heatmap of agg={self.agg!r} needs its values")
        if self.value_counts is None:
            object.__setattr__(self, "value_counts", self.points)

    @property
    def height(self) -> int:
        return int(self.counts.shape[0])

    @property
    def width(self) -> int:
        return int(self.counts.shape[1])

    @property
    def x_edges(self) -> np.ndarray:
        """Cell edges along x: ``linspace(*x_range, width + 1)`` (float64)."""
        return cell_rule(self.width, *self.x_range, "width", self.x_closed).edges.copy()

    @property
    def y_edges(self) -> np.ndarray:
        """Cell edges along y: ``linspace(*y_range, height + 1)`` (float64)."""
        return cell_rule(self.height, *self.y_range, "height", self.y_closed).edges.copy()

    def __repr__(self) -> str:
        kind = self.agg if self.agg != "count" else "sums" if self.counts.dtype.kind == "f" else "counts"
        if self.categories is not None:
            kind += f" by {len(self.categories)} categories"
        return (f"Heatmap({self.width}x{self.height} {kind}, "
                f"x_range={interval(self.x_range, self.x_closed)}, "
                f"y_range={interval(self.y_range, self.y_closed)}, dropped={self.dropped})")

    #: Jupyter: the picture north up, opaque on a background that suits the colormap, and
    #: the picture beside a summary (cells, ranges, agg, n, dropped, skipped)
    _repr_png_, _repr_html_ = heatmap_png, heatmap_html

    def __add__(self, other: Heatmap) -> Heatmap:
        """Merge two partial heatmaps of the same cells and agg (e.g. two chunks of one data set).

        Counts, min and max merge exactly; sums and means in float64, var and std by
        Chan's pairwise update (:func:`hotbin.aggregate.merge`), so a heatmap merged
        from chunks may differ in the last bits from one computed in a single call.
        Median and quantile merge their partials (exact; in-memory heatmaps only), first
        and last take ``self``'s points first (:func:`hotbin.order_stats.merge_order`).
        """
        if not isinstance(other, Heatmap):
            return NotImplemented
        if (other.counts.shape, other.x_range, other.y_range, other.x_closed, other.y_closed,
                other.categories is None) != (self.counts.shape, self.x_range, self.y_range,
                                              self.x_closed, self.y_closed, self.categories is None):
            raise ValueError("other: heatmaps can only be added when their cells are the same "
                             f"({self._cells()} vs {other._cells()})")
        if self.agg != other.agg:
            raise ValueError(f"other: a heatmap of agg={self.agg!r} does not add to one of agg={other.agg!r}")
        points = None if self.points is self.counts and other.points is other.counts \
            else self.points + other.points
        labels, values, n, means, part = merge_heatmaps(self, other)
        return replace(self, counts=self.counts + other.counts, dropped=self.dropped + other.dropped,
                       points=points, values=values, value_counts=n, means=means, categories=labels,
                       skipped=self.skipped + other.skipped, order=part)

    def _cells(self) -> str:
        return (f"{self.width}x{self.height} over {interval(self.x_range, self.x_closed)} x "
                f"{interval(self.y_range, self.y_closed)}")

    def shade(self, how="eq_hist", cmap="inferno", smooth=0.0, span=None, background=None,
              color_key=None):
        """RGBA image ``(height, width, 4)`` uint8; row 0 is row 0 of the cells (``y_range[0]``).

        The counts of a count heatmap, the ``values`` of an aggregation (see
        :func:`hotbin.render.shade.shade` for ``how``, ``cmap``, ``smooth``, ``span``);
        with categories (``by``), their colours mixed by count in each cell
        (:func:`hotbin.render.colorize.colorize`, ``color_key``: colours per category).
        Cells without points (or without a value) are fully transparent unless
        ``background`` is given (a weighted cell whose sum is 0 is coloured).
        """
        if self.categories is not None:
            from .render.colorize import colorize

            per = self.values if self.agg == "count" else self.value_counts
            return colorize(per, color_key, how, labels=self.categories, background=background)
        from .render.shade import shade

        grid, occupied = self.shaded()
        return shade(grid, how=how, cmap=cmap, smooth=smooth, span=span, background=background,
                     occupied=occupied)

    def shaded(self):
        """``(grid, occupied)``: what :meth:`shade` colours (the counts of a count, else the
        values) and which cells hold points (None: the non-zero ones)."""
        if self.agg == "count":
            return self.counts, (None if self.points is self.counts else self.points)
        return self.values, (None if self.agg == "any" else self.value_counts)

    def to_png(self, path, legend=False, **shade_kwargs) -> None:
        """Write the shaded heatmap as a PNG, north up (the bottom row is ``y_range[0]``); with
        categories their names and colours in a ``legend`` text chunk, and drawn beside the
        picture with ``legend=True`` (Pillow). ``shade_kwargs`` are those of :meth:`shade`."""
        with open(path, "wb") as f:
            f.write(encode_heatmap(self, legend=legend, **shade_kwargs))

    def plot(self, ax=None, **kwargs):
        """Draw on a matplotlib ``ax`` with the data's extent and a colorbar (or a legend of
        the categories); see :func:`hotbin.render.plotting.plot`. Needs matplotlib."""
        from .render.plotting import plot

        return plot(self, ax=ax, **kwargs)

    def to_xarray(self):
        """An ``xarray.DataArray`` of ``values`` with dims ``(y_name, x_name)`` (``("category",
        y_name, x_name)`` with ``by``), named after ``agg``.

        Coordinates are the cell centres (and the category labels); ``counts`` is a
        coordinate of the same cells; ``x_range``, ``y_range``, ``x_closed``,
        ``y_closed``, ``dropped``, ``skipped`` and ``agg`` are attributes. A projected
        heatmap carries its CRS as ``attrs["crs"]`` and a ``spatial_ref`` coordinate
        (CF grid mapping), which rioxarray reads to write GeoTIFF. Needs xarray
        (``pip install xarray``).
        """
        from .render.project import to_xarray

        return to_xarray(self)


class _Values:
    """``Heatmap.values``, made on first read when a plain count leaves it out: the counts as
    float64 are a pass over the grid (1024^2 cells: ~2.6 ms on the CPU, a tenth of a 20M-point
    heatmap) that a caller of ``counts`` or ``to_png`` never needs."""

    def __set__(self, hm, v):
        hm.__dict__["_values"] = v

    def __get__(self, hm, owner=None):
        if hm is None:
            return None  # the field's default, read by dataclasses
        v = hm.__dict__.get("_values")
        if v is None and hm.agg == "count" and hm.categories is None:
            v = hm.__dict__["_values"] = as_float64(hm.counts)
        return v


Heatmap.values = _Values()  # after @dataclass: its __init__ sets values through this


def heatmap(x=None, y=None, weights=None, *, agg="count", by=None, data=None, width=512, height=512,
            x_range=None, y_range=None, clip=None, closed=None, project=None, backend=None,
            deterministic=False, q=None) -> Heatmap:
    """Count points ``(x, y)`` on a ``height x width`` grid of cells, or aggregate their weights.

    Parameters
    ----------
    x, y : array_like, 1-D, same length, or column names
        Coordinates: bool, integers or real floats, any layout and byte order.
        NumPy, CuPy or torch CUDA arrays, dask arrays or dataframe columns, the
        columns of a stream of record batches (:mod:`hotbin.exec.stream`, read a
        batch at a time); with ``data=``, the names of its columns.
    weights : array_like or column name, optional
        One real weight per point: the values that ``agg`` aggregates. With
        ``agg="count"`` cells hold the sum of their weights (the weighted count).
    agg : {"count", "any", "sum", "mean", "min", "max", "std", "var", "median", "quantile", "first", "last"}
        What a cell holds (:mod:`hotbin.aggregate`): ``Heatmap.values``, float64,
        NaN where a cell has no value. All but count and any aggregate the
        weights; a NaN weight is no value (counted in ``skipped``); std and var
        are the population's (ddof=0, as datashader). median and quantile are
        exactly ``numpy.median`` / ``numpy.quantile(v, q)`` (``method="linear"``) of
        each cell's values, first and last the value of its first / last point in
        the input's order (:mod:`hotbin.order_stats`; on wgpu the cpu backend runs them).
    q : float or sequence of floats in [0, 1]
        The quantile(s) of ``agg="quantile"`` (only); a sequence adds a leading axis to
        ``values``.
    by : array_like or column name, optional
        A category per point: integer codes ``0 <= code < ncat``, a pandas
        Categorical, polars Categorical, pyarrow dictionary or strings
        (:mod:`hotbin.io.frames`). ``values`` then has shape ``(ncat, height,
        width)``, one grid per category, and ``categories`` their labels.
    data : table, optional
        A table whose columns ``x``, ``y``, ``weights`` and ``by`` name: pandas,
        polars (a LazyFrame collects only those columns), pyarrow, dask (lazy), a
        DuckDB relation or any object with ``__arrow_c_stream__``
        (:mod:`hotbin.io.tables`); ``to_xarray()`` names its dims after them. Nulls
        and NaT are missing: a point without ``x`` or ``y`` is dropped, one
        without a weight or category skipped; timestamps are int64 nanoseconds
        (:mod:`hotbin.io.frames`).
    width, height : int
        Number of cells along x (columns) and y (rows); ``height=None`` follows
        the aspect of the ranges (square cells). At most
        :data:`~hotbin.core.ranges.MAX_CELLS` cells in all and no more than the memory
        available (:func:`~hotbin.core.ranges.check_cells`), checked before anything
        is allocated.
    x_range, y_range : (float, float), optional
        The extent ``[lo, hi)`` the cells divide: a point is counted iff
        ``x_range[0] <= x < x_range[1]`` and likewise for ``y`` (half-open, so
        heatmaps of adjacent ranges tile). Defaults to the data's: the smallest
        and largest finite coordinate, closed at both ends (see ``closed``), so
        the edges are exactly ``numpy.linspace(min, max, n + 1)`` and every point
        lands in the cell ``numpy.histogram2d`` gives it; equal ends widen by 0.5
        each way, as NumPy.
    clip : (float, float), optional
        Percentiles ``(lo, hi)``, ``0 <= lo < hi <= 100``, that replace the
        minimum and maximum of each axis whose range comes from the data, so a
        few outliers do not squeeze the picture into a corner: ``clip=(0.1,
        99.9)``. With ``m`` finite values sorted, the range is ``[v[floor(lo/100
        * (m-1))], v[ceil(hi/100 * (m-1))]]`` (NumPy's ``method="lower"`` and
        ``"higher"`` percentiles: data values, exact), closed like any range from
        the data; points outside are dropped and counted in ``dropped``. In
        memory: one ``numpy.partition`` of the finite coordinates (on the host);
        Dask data and the streaming CLI use an exact radix selection of two to
        four passes (:func:`~hotbin.core.ranges.percentile_ranges`) that finds the same values.
    closed : bool or (bool, bool), optional
        Whether the last column (x) / row (y) also holds the points on its upper
        edge. Defaults to True for an axis whose range comes from the data and
        False for a given range. ``closed=True`` with a given range reproduces
        ``numpy.histogram2d(y, x, bins, range)``; chunks binned with the ranges
        and closure of a whole data set add up to its heatmap.
    project : {"mercator"}, optional
        ``x``, ``y`` are longitude and latitude in degrees, binned in Web Mercator
        metres (:func:`hotbin.render.project.mercator`, EPSG:3857, the CRS of web maps);
        ``x_range`` / ``y_range`` are given in degrees too, the Heatmap's are in
        metres and ``crs`` is ``"EPSG:3857"``.
    backend : {"cpu", "cuda", "wgpu"}, optional
        Defaults to ``$HOTBIN_BACKEND``, else the device of the input; large NumPy input
        goes to a usable GPU where that is faster and bitwise the same (:func:`hotbin.exec.local.portable`).
    deterministic : bool
        Float weights are summed in fixed point (:mod:`hotbin.core.fixedpoint`, scale
        from the largest ``|weight|`` and the number of points): bitwise-identical
        sums for any order of the points, thread count and backend; a cell of
        ``k`` weights is within ``k * 2**-(s+1)`` plus 2 ulp of their exact sum,
        ``2**-s`` being the quantum of :func:`hotbin.core.fixedpoint.scale_for`.
        Needs finite weights. With ``agg``, every float sum (of sum, mean, std
        and var) is a fixed-point sum, so ``values`` are bitwise the same for
        any chunking and backend; min and max are exact anyway.

    Returns
    -------
    Heatmap
        ``counts`` of shape ``(height, width)``, row 0 at ``y_range[0]``: int64
        counts (exact, never overflowing), or float64 sums with weights, as the
        input's array type on its device; ``points``, the number of points per
        cell (``counts`` itself without weights); ``dropped``, the number of
        points in no cell (outside, NaN or infinite); the ranges used and
        whether each is closed.

    Notes
    -----
    Cell edges are ``linspace(lo, hi, n + 1)`` in float64 and a coordinate lands
    in cell ``i`` iff ``edges[i] <= v < edges[i+1]``, compared in float64 (the
    exact rule of :mod:`hotbin.core.binning`, identical on every backend); a closed
    axis also puts ``v == hi`` in the last cell. Integer counts are always
    reproducible; float sums without ``deterministic`` may differ in the last
    bits between backends and thread counts. A weighted heatmap bins the points
    twice: once for the sums, once for ``points``. Dask arrays and dataframe
    columns are binned per chunk and tree-merged by the same plan (:mod:`hotbin.exec.dask`), with
    the same cells as in memory.
    """
    if x is None or y is None:
        raise TypeError("heatmap: needs x and y (arrays, or column names with data=)")
    x_in, ya, weights, by = frames.columns(data, x=x, y=y, weights=weights, by=by)
    names = frames.name_of(x, "x"), frames.name_of(y, "y")
    agg = check_agg(agg, weights, q)
    crs = None
    if project is not None:
        x_in, ya, x_range, y_range, crs = projected(project, x_in, ya, x_range, y_range)
    same = portable(weights, deterministic, agg)
    cells = width * height if type(width) is int and type(height) is int else 0  # else: unknown yet
    ex = executor(backend, x_in, ya, weights, *(() if by is None else (by,)),
                  offload=("heatmap", cells) if same else None)
    xa, ya = validate.coordinates(
        ex, x_in, ya, "y: has {1} points but x has {0}", "x, y: expected 1-D arrays, got shapes {0} and {1}")
    w = validate.check_weights(ex, weights, xa, "biuf",
                               f"weights: expected one weight per point ({xa.shape[0]})")
    codes = labels = None
    if by is not None:
        codes, labels = by.categories() if isinstance(by, Column) else frames.categories(ex, by, xa.shape[0])
        codes = ex.align(ex.array(codes, "by"), xa, f"by: expected one category per point ({xa.shape[0]})")
    xr, yr, xc, yc, width, height, rx, ry = cells_over(
        ex, xa, ya, x_range, y_range, closed, clip, width, height, weighted=w is not None,
        layers=1 if labels is None else len(labels) + 1)
    by = None if labels is None else (codes, len(labels))
    # rows are y, columns x: cell row * width + column
    cells = aggregate(ex, (ry, rx), [ya, xa], w, by, (height, width), agg, deterministic, q)
    counts = ex.restore(cells.counts, x_in)
    values = None if cells.values is None else ex.restore(cells.values, x_in)
    points = counts if cells.points is cells.counts else ex.restore(cells.points, x_in)
    value_counts, means = (None if a is None else ex.restore(a, x_in)
                           for a in (cells.value_counts, cells.means))
    return Heatmap(counts, cells.n - cells.kept, xr, yr, xc, yc, points, agg, values, labels,
                   cells.skipped, *names, crs, value_counts, means, cells.order)
