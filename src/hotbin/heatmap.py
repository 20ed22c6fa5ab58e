"""Spatial heatmaps: count (or sum weights of) points on a grid of cells.

A heatmap is a 2-D histogram with heatmap conventions (DESIGN.md §3-4): the
grid is ``counts[row, column]`` with row 0 at ``y_range[0]`` (north up when
drawn, see :meth:`Heatmap.to_png`), and every cell is half-open on both axes,
so heatmaps of adjacent ranges tile without double counting. The cells come
from :func:`hotbin.binning.cell_rule`; the counting is the backend's
``histogram2d`` primitive. This module owns no kernel.
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import backend as _backends
from . import distributed as _dask
from . import fixedpoint, png
from .binning import cell_rule, check_data, positive_int

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
        The half-open extents ``[lo, hi)`` that the cells divide evenly.
    """

    counts: Any
    dropped: int
    x_range: tuple[float, float]
    y_range: tuple[float, float]

    @property
    def height(self) -> int:
        return int(self.counts.shape[0])

    @property
    def width(self) -> int:
        return int(self.counts.shape[1])

    @property
    def x_edges(self) -> np.ndarray:
        """Cell edges along x: ``linspace(*x_range, width + 1)`` (float64)."""
        return cell_rule(self.width, *self.x_range, "width").edges

    @property
    def y_edges(self) -> np.ndarray:
        """Cell edges along y: ``linspace(*y_range, height + 1)`` (float64)."""
        return cell_rule(self.height, *self.y_range, "height").edges

    def __repr__(self) -> str:
        kind = "sums" if self.counts.dtype.kind == "f" else "counts"
        return (f"Heatmap({self.width}x{self.height} {kind}, x_range={self.x_range}, "
                f"y_range={self.y_range}, dropped={self.dropped})")

    def __add__(self, other: Heatmap) -> Heatmap:
        """Merge two partial heatmaps of the same cells (e.g. two chunks of one data set).

        Counts add exactly. Weighted sums add in float64, so a heatmap merged from
        chunks may differ in the last bits from one computed in a single call.
        """
        if not isinstance(other, Heatmap):
            return NotImplemented
        if (other.counts.shape != self.counts.shape or other.x_range != self.x_range
                or other.y_range != self.y_range):
            raise ValueError("other: heatmaps can only be added when their cells are the same "
                             f"({self.width}x{self.height} over {self.x_range} x {self.y_range} vs "
                             f"{other.width}x{other.height} over {other.x_range} x {other.y_range})")
        return Heatmap(self.counts + other.counts, self.dropped + other.dropped,
                       self.x_range, self.y_range)

    def shade(self, how="eq_hist", cmap="inferno", smooth=0.0, span=None, background=None):
        """RGBA image ``(height, width, 4)`` uint8 of the counts; see :func:`hotbin.shade.shade`.

        Row 0 of the image is row 0 of the counts (``y_range[0]``); empty cells are
        fully transparent unless ``background`` is given.
        """
        from .shade import shade

        return shade(self.counts, how=how, cmap=cmap, smooth=smooth, span=span,
                     background=background)

    def to_png(self, path, **shade_kwargs) -> None:
        """Write the shaded heatmap as a PNG, north up: the picture's bottom row is ``y_range[0]``.

        ``shade_kwargs`` are those of :meth:`shade`.
        """
        png.write(path, self.shade(**shade_kwargs)[::-1])

    def to_xarray(self):
        """An ``xarray.DataArray`` named ``counts`` with dims ``("y", "x")``.

        Coordinates are the cell centres; ``x_range``, ``y_range`` and ``dropped``
        are attributes. Needs xarray (``pip install xarray``).
        """
        try:
            import xarray as xr
        except ModuleNotFoundError:
            raise ModuleNotFoundError("Heatmap.to_xarray needs xarray: pip install xarray") from None
        xe, ye = self.x_edges, self.y_edges
        return xr.DataArray(
            self.counts, dims=("y", "x"), name="counts",
            coords={"y": (ye[:-1] + ye[1:]) / 2, "x": (xe[:-1] + xe[1:]) / 2},
            attrs={"x_range": self.x_range, "y_range": self.y_range, "dropped": self.dropped})


def heatmap(x, y, weights=None, *, width=512, height=512, x_range=None, y_range=None,
            backend=None, deterministic=False) -> Heatmap:
    """Count points ``(x, y)`` on a ``height x width`` grid of cells.

    Parameters
    ----------
    x, y : array_like, 1-D, same length
        Coordinates: bool, integers or real floats, any layout and byte order.
        NumPy, CuPy or torch CUDA arrays.
    weights : array_like, optional
        One real weight per point; cells then hold the sum of their weights.
    width, height : int
        Number of cells along x (columns) and y (rows).
    x_range, y_range : (float, float), optional
        Half-open extents ``[lo, hi)``: a point is counted iff
        ``x_range[0] <= x < x_range[1]`` and likewise for ``y``. Defaults to the
        extent of the finite coordinates, with the upper end moved up by one
        float64 step so the largest point lands in the last cell (see
        :func:`data_range`).
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
        input's array type on its device; ``dropped``, the number of points in
        no cell (outside, NaN or infinite); the ranges used.

    Notes
    -----
    Cell edges are ``linspace(lo, hi, n + 1)`` in float64 and a coordinate lands
    in cell ``i`` iff ``edges[i] <= v < edges[i+1]``, compared in float64 (the
    exact rule of :mod:`hotbin.binning`, identical on every backend). Integer
    counts are always reproducible; float sums without ``deterministic`` may
    differ in the last bits between backends and thread counts. Dask arrays and
    dataframe columns are binned per chunk and merged (:mod:`hotbin.distributed`).
    """
    if _dask.is_dask(x, y, weights):
        return _dask.heatmap(x, y, weights, width=width, height=height, x_range=x_range,
                             y_range=y_range, backend=backend, deterministic=deterministic)
    be = _backends.select(backend, x, y, weights)
    xa = check_data(be.asarray(x), "x")
    ya = check_data(be.asarray(y), "y")
    if xa.ndim != 1 or ya.ndim != 1:
        raise ValueError(f"x, y: expected 1-D arrays, got shapes {tuple(xa.shape)} and {tuple(ya.shape)}")
    if xa.shape[0] != ya.shape[0]:
        raise ValueError(f"y: has {ya.shape[0]} points but x has {xa.shape[0]}")
    w = _weights(be, weights, xa.shape[0])
    width, height = positive_int(width, "width"), positive_int(height, "height")
    xr = _given_range(x_range, "x_range") if x_range is not None else _auto_range(be, xa, "x")
    yr = _given_range(y_range, "y_range") if y_range is not None else _auto_range(be, ya, "y")
    rx, ry = cell_rule(width, *xr, "width"), cell_rule(height, *yr, "height")
    n = int(xa.shape[0])
    if w is None:
        grid, kept = be.histogram2d(ya, xa, ry, rx)
    elif deterministic and w.dtype.kind == "f":
        s = fixedpoint.scale_for(be.max_abs(w), n)
        words, kept = be.histogram2d(ya, xa, ry, rx, w, s)
        grid = fixedpoint.combine(_backends.to_host(words), s)
    else:
        grid, kept = be.histogram2d(ya, xa, ry, rx, w)
    if w is not None and grid.dtype != np.float64:
        grid = grid.astype(np.float64)
    return Heatmap(be.to_output(grid, like=x), n - int(kept), xr, yr)


def data_range(lo, hi, name="x") -> tuple[float, float]:
    """The half-open range ``[lo', hi')`` that keeps every value in ``[lo, hi]``.

    ``lo`` and ``hi`` are the smallest and largest finite values. The upper end
    moves up by one float64 step so that ``hi`` lands in the last cell; equal
    ends widen by 0.5 each way. The streaming CLI uses this too, so a heatmap
    built chunk by chunk has the same cells as one built in memory.
    """
    lo, hi = float(lo), float(hi)
    up = float(np.nextafter(hi, np.inf))
    if lo == hi:
        lo, up = lo - 0.5, max(hi + 0.5, up)
    if not math.isfinite(up - lo):
        raise ValueError(f"{name}: the data's extent [{lo}, {hi}] is too wide to divide into "
                         f"cells; give {name}_range")
    return lo, up


def _auto_range(be, a, name) -> tuple[float, float]:
    """:func:`data_range` of the finite values of ``a``; ``(0, 1)`` when there are none."""
    if a.shape[0] == 0:
        return 0.0, 1.0
    lo, hi = be.minmax(a)
    if not (np.isfinite(lo) and np.isfinite(hi)):  # NaN or inf present: look at the finite ones
        xp = np if isinstance(a, np.ndarray) else importlib.import_module("cupy")
        finite = a[xp.isfinite(a)] if a.dtype.kind == "f" else a
        if finite.shape[0] == 0:
            return 0.0, 1.0
        lo, hi = finite.min(), finite.max()
    return data_range(lo, hi, name)


def _given_range(r, name) -> tuple[float, float]:
    try:
        lo, hi = r
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a (min, max) pair, got {r!r}") from None
    bounds = []
    for v in (lo, hi):
        if isinstance(v, (complex, np.complexfloating)):
            raise TypeError(f"{name}: bounds must be real numbers, got {r!r}")
        try:
            bounds.append(float(v))
        except (TypeError, ValueError):
            raise TypeError(f"{name}: bounds must be real numbers, got {r!r}") from None
    lo, hi = bounds
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"{name}: bounds must be finite, got [{lo}, {hi}]")
    if not lo < hi:
        raise ValueError(f"{name}: min must be less than max, got [{lo}, {hi}]")
    if not math.isfinite(hi - lo):
        raise ValueError(f"{name}: [{lo}, {hi}] is too wide to divide into cells")
    return lo, hi


def _weights(be, weights, n):
    if weights is None:
        return None
    w = be.asarray(weights)
    if w.dtype.kind not in "biuf":
        raise TypeError(f"weights: expected real numbers, got dtype {w.dtype}")
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"weights: expected one weight per point ({n}), got shape {tuple(w.shape)}")
    return w.astype(np.int64) if w.dtype == np.bool_ else w
