"""Spatial heatmaps: count (or sum weights of) points on a grid of cells.

A heatmap is a 2-D histogram with heatmap conventions (DESIGN.md §3-4): the
grid is ``counts[row, column]`` with row 0 at ``y_range[0]`` (north up when
drawn, see :meth:`Heatmap.to_png`). Cells are ``linspace(lo, hi, n + 1)`` along
each axis. A given range is half-open, ``[lo, hi)``, so heatmaps of adjacent
ranges tile without double counting; a range taken from the data is closed,
``[min, max]``, with NumPy's edges, so every cell equals ``numpy.histogram2d``'s.
The cells come from :func:`hotbin.binning.cell_rule` over the ranges of
:mod:`hotbin.ranges`; the counting is the backend's ``histogram2d`` primitive.
This module owns no kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import png, validate
from .binning import cell_rule
from .blocks import Plan
from .plan import executor, weighted
from .ranges import check_cells, check_clip, check_closed, data_range, given_range, interval
from .reductions import COUNT

# data_range, check_cells, percentile_ranges and MAX_CELLS are hotbin.ranges', re-exported
__all__ = ["Heatmap", "heatmap", "data_range"]


@dataclass(frozen=True, eq=False)
class Heatmap:
    """The result of :func:`heatmap`.

    Attributes
    ----------
    counts : array, shape (height, width)
        ``counts[i, j]`` is the number of points (int64), or the sum of their
        weights (float64), with ``y`` in row ``i`` and ``x`` in column ``j``.
        Row 0 is ``y_range[0]``. Same array type and device as the input.
    dropped : int
        Points that landed in no cell: outside the ranges, NaN or infinite.
        ``counts.sum() + dropped == n`` for unweighted heatmaps.
    x_range, y_range : (float, float)
        The extents that the cells divide evenly: ``[lo, hi)``, or ``[lo, hi]``
        when ``x_closed`` / ``y_closed``.
    x_closed, y_closed : bool
        Whether the last column / row holds the points on its upper edge (true
        for ranges taken from the data, as ``numpy.histogram2d``).
    points : array, shape (height, width)
        The number of points in each cell (int64): ``counts`` itself without
        weights. A cell is empty iff it holds no points; a weighted cell whose
        sum is 0 is not empty.
    """

    counts: Any
    dropped: int
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    x_closed: bool = False
    y_closed: bool = False
    points: Any = None

    def __post_init__(self):
        if self.points is None:
            if self.counts.dtype.kind == "f":
                raise ValueError("points: a weighted heatmap needs the number of points per cell")
            object.__setattr__(self, "points", self.counts)

    @property
    def height(self) -> int:
        return int(self.counts.shape[0])

    @property
    def width(self) -> int:
        return int(self.counts.shape[1])

    @property
    def x_edges(self) -> np.ndarray:
        """Cell edges along x: ``linspace(*x_range, width + 1)`` (float64)."""
        return cell_rule(self.width, *self.x_range, "width", self.x_closed).edges

    @property
    def y_edges(self) -> np.ndarray:
        """Cell edges along y: ``linspace(*y_range, height + 1)`` (float64)."""
        return cell_rule(self.height, *self.y_range, "height", self.y_closed).edges

    def __repr__(self) -> str:
        kind = "sums" if self.counts.dtype.kind == "f" else "counts"
        return (f"Heatmap({self.width}x{self.height} {kind}, "
                f"x_range={interval(self.x_range, self.x_closed)}, "
                f"y_range={interval(self.y_range, self.y_closed)}, dropped={self.dropped})")

    def _repr_png_(self) -> bytes:
        """The shaded heatmap, north up, as PNG bytes: Jupyter shows a Heatmap as its picture."""
        return png.encode(self.shade()[::-1])

    def __add__(self, other: Heatmap) -> Heatmap:
        """Merge two partial heatmaps of the same cells (e.g. two chunks of one data set).

        Counts add exactly. Weighted sums add in float64, so a heatmap merged from
        chunks may differ in the last bits from one computed in a single call.
        """
        if not isinstance(other, Heatmap):
            return NotImplemented
        if (other.counts.shape != self.counts.shape or other.x_range != self.x_range
                or other.y_range != self.y_range or other.x_closed != self.x_closed
                or other.y_closed != self.y_closed):
            raise ValueError("other: heatmaps can only be added when their cells are the same "
                             f"({self._cells()} vs {other._cells()})")
        counts = self.counts + other.counts
        points = None if self.points is self.counts and other.points is other.counts \
            else self.points + other.points
        return Heatmap(counts, self.dropped + other.dropped, self.x_range, self.y_range,
                       self.x_closed, self.y_closed, points)

    def _cells(self) -> str:
        return (f"{self.width}x{self.height} over {interval(self.x_range, self.x_closed)} x "
                f"{interval(self.y_range, self.y_closed)}")

    def shade(self, how="eq_hist", cmap="inferno", smooth=0.0, span=None, background=None):
        """RGBA image ``(height, width, 4)`` uint8 of the counts; see :func:`hotbin.shade.shade`.

        Row 0 of the image is row 0 of the counts (``y_range[0]``); cells without
        points are fully transparent unless ``background`` is given (a weighted
        cell whose sum is 0 is coloured).
        """
        from .shade import shade

        occupied = None if self.points is self.counts else self.points
        return shade(self.counts, how=how, cmap=cmap, smooth=smooth, span=span,
                     background=background, occupied=occupied)

    def to_png(self, path, **shade_kwargs) -> None:
        """Write the shaded heatmap as a PNG, north up: the picture's bottom row is ``y_range[0]``.

        ``shade_kwargs`` are those of :meth:`shade`.
        """
        png.write(path, self.shade(**shade_kwargs)[::-1])

    def to_xarray(self):
        """An ``xarray.DataArray`` named ``counts`` with dims ``("y", "x")``.

        Coordinates are the cell centres; ``x_range``, ``y_range``, ``x_closed``,
        ``y_closed`` and ``dropped`` are attributes. Needs xarray (``pip install xarray``).
        """
        try:
            import xarray as xr
        except ModuleNotFoundError:
            raise ModuleNotFoundError("Heatmap.to_xarray needs xarray: pip install xarray") from None
        xe, ye = self.x_edges, self.y_edges
        return xr.DataArray(
            self.counts, dims=("y", "x"), name="counts",
            coords={"y": (ye[:-1] + ye[1:]) / 2, "x": (xe[:-1] + xe[1:]) / 2},
            attrs={"x_range": self.x_range, "y_range": self.y_range, "x_closed": self.x_closed,
                   "y_closed": self.y_closed, "dropped": self.dropped})


def heatmap(x, y, weights=None, *, width=512, height=512, x_range=None, y_range=None, clip=None,
            closed=None, backend=None, deterministic=False) -> Heatmap:
    """Count points ``(x, y)`` on a ``height x width`` grid of cells.

    Parameters
    ----------
    x, y : array_like, 1-D, same length
        Coordinates: bool, integers or real floats, any layout and byte order.
        NumPy, CuPy or torch CUDA arrays.
    weights : array_like, optional
        One real weight per point; cells then hold the sum of their weights.
    width, height : int
        Number of cells along x (columns) and y (rows), at most
        :data:`~hotbin.ranges.MAX_CELLS` cells in all and no more than the memory
        available (:func:`~hotbin.ranges.check_cells`), checked before anything
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
        four passes (:func:`~hotbin.ranges.percentile_ranges`) that finds the same values.
    closed : bool or (bool, bool), optional
        Whether the last column (x) / row (y) also holds the points on its upper
        edge. Defaults to True for an axis whose range comes from the data and
        False for a given range. ``closed=True`` with a given range reproduces
        ``numpy.histogram2d(y, x, bins, range)``; chunks binned with the ranges
        and closure of a whole data set add up to its heatmap.
    backend : {"cpu", "cuda", "wgpu"}, optional
        Defaults to ``$HOTBIN_BACKEND``, else the device of the input.
    deterministic : bool
        Float weights are summed in fixed point (:mod:`hotbin.fixedpoint`, scale
        from the largest ``|weight|`` and the number of points): bitwise-identical
        sums for any order of the points, thread count and backend; a cell of
        ``k`` weights is within ``k * 2**-(s+1)`` plus 2 ulp of their exact sum,
        ``2**-s`` being the quantum of :func:`hotbin.fixedpoint.scale_for`.
        Needs finite weights.

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
    exact rule of :mod:`hotbin.binning`, identical on every backend); a closed
    axis also puts ``v == hi`` in the last cell. Integer counts are always
    reproducible; float sums without ``deterministic`` may differ in the last
    bits between backends and thread counts. A weighted heatmap bins the points
    twice: once for the sums, once for ``points``. Dask arrays and dataframe
    columns are binned per chunk and tree-merged by the same plan (:mod:`hotbin.distributed`), with
    the same cells as in memory.
    """
    ex = executor(backend, x, y, weights)
    xa, ya = validate.coordinates(
        ex, x, y, "y: has {1} points but x has {0}", "x, y: expected 1-D arrays, got shapes {0} and {1}")
    w = validate.check_weights(ex, weights, xa, "biuf",
                               f"weights: expected one weight per point ({xa.shape[0]})")
    width, height = check_cells(width, height, weighted=w is not None)
    given = [given_range(r, f"{a}_range") if r is not None else None
             for a, r in (("x", x_range), ("y", y_range))]
    xc, yc = check_closed(closed, given)
    q = check_clip(clip)
    auto = [i for i, r in enumerate(given) if r is None]
    arrays = [(xa, ya)[i] for i in auto]
    found = ex.percentiles(arrays, q) if q is not None else ex.finite_extents(arrays)
    for i, ext in zip(auto, found):
        given[i] = (0.0, 1.0) if ext is None else data_range(*ext, "xy"[i])
    xr, yr = given
    rx, ry = cell_rule(width, *xr, "width", xc), cell_rule(height, *yr, "height", yc)
    cells = (height, width)

    def points(be, d):  # the count grid and [points in a cell, points] of a block
        grid, kept = be.histogram2d(d[1], d[0], ry, rx)
        return grid, np.array([int(kept), int(d[0].shape[0])], np.int64)

    tally = ((COUNT, cells), (COUNT, (2,)))
    if w is None:
        counts, tal = ex.run(Plan(lambda be, *d: points(be, d), tally), xa, ya)
        pts = None
    else:  # the sums under the one runner of weighted counts, the points beside them
        counts, pts, tal = weighted(ex, lambda be, d, ww, red: be.histogram2d(d[1], d[0], ry, rx, ww, red)[0],
                                    [xa, ya], w, cells, deterministic, extra=(tally, points))
    counts, pts, tal = ex.compute(counts, pts, tal)
    kept, n = (int(v) for v in np.asarray(ex.restore(tal, None)))
    if w is not None:
        counts = counts.astype(np.float64)
    counts = ex.restore(counts, x)
    pts = counts if w is None else ex.restore(pts, x)
    return Heatmap(counts, n - kept, xr, yr, xc, yc, pts)
