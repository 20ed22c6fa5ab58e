"""Spatial heatmaps: count (or sum weights of) points on a grid of cells.

A heatmap is a 2-D histogram with heatmap conventions (DESIGN.md §3-4): the
grid is ``counts[row, column]`` with row 0 at ``y_range[0]`` (north up when
drawn, see :meth:`Heatmap.to_png`). Cells are ``linspace(lo, hi, n + 1)`` along
each axis. A given range is half-open, ``[lo, hi)``, so heatmaps of adjacent
ranges tile without double counting; a range taken from the data is closed,
``[min, max]``, with NumPy's edges, so every cell equals ``numpy.histogram2d``'s.
The cells come from :func:`hotbin.binning.cell_rule`; the counting is the
backend's ``histogram2d`` primitive. This module owns no kernel.
"""
from __future__ import annotations

import functools
import importlib
import math
import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from . import backend as _backends
from . import distributed as _dask
from . import png
from .api import _weighted
from .binning import cell_rule, check_data, positive_int

__all__ = ["Heatmap", "heatmap", "data_range", "check_cells", "percentile_ranges", "MAX_CELLS"]


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
                f"x_range={_interval(self.x_range, self.x_closed)}, "
                f"y_range={_interval(self.y_range, self.y_closed)}, dropped={self.dropped})")

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
        return (f"{self.width}x{self.height} over {_interval(self.x_range, self.x_closed)} x "
                f"{_interval(self.y_range, self.y_closed)}")

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


def _interval(r, closed) -> str:
    return f"[{r[0]!r}, {r[1]!r}{']' if closed else ')'}"


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
        :data:`MAX_CELLS` cells in all and no more than the memory available
        (:func:`check_cells`), checked before anything is allocated.
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
        four passes (:func:`percentile_ranges`) that finds the same values.
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
    columns are binned per chunk and merged (:mod:`hotbin.distributed`), with
    the same cells as in memory.
    """
    if _dask.is_dask(x, y, weights):
        return _dask.heatmap(x, y, weights, width=width, height=height, x_range=x_range,
                             y_range=y_range, clip=clip, closed=closed, backend=backend,
                             deterministic=deterministic)
    be = _backends.select(backend, x, y, weights)
    xa = check_data(be.asarray(x), "x")
    ya = check_data(be.asarray(y), "y")
    if xa.ndim != 1 or ya.ndim != 1:
        raise ValueError(f"x, y: expected 1-D arrays, got shapes {tuple(xa.shape)} and {tuple(ya.shape)}")
    if xa.shape[0] != ya.shape[0]:
        raise ValueError(f"y: has {ya.shape[0]} points but x has {xa.shape[0]}")
    w = _weights(be, weights, xa.shape[0])
    width, height = check_cells(width, height, weighted=w is not None)
    given = [_given_range(r, f"{a}_range") if r is not None else None
             for a, r in (("x", x_range), ("y", y_range))]
    xc, yc = check_closed(closed, given)
    q = check_clip(clip)
    auto = [i for i, r in enumerate(given) if r is None]
    if q is not None:
        found = [_percentiles(a, q) for a in [(xa, ya)[i] for i in auto]]
    else:
        found = [_auto_extent(be, (xa, ya)[i]) for i in auto]
    for i, ext in zip(auto, found):
        given[i] = (0.0, 1.0) if ext is None else data_range(*ext, "xy"[i])
    xr, yr = given
    rx, ry = cell_rule(width, *xr, "width", xc), cell_rule(height, *yr, "height", yc)
    n = int(xa.shape[0])
    points, kept = be.histogram2d(ya, xa, ry, rx)
    if w is None:
        grid = points
    else:  # api's one runner of weighted sums: fixed point, integers that never wrap
        grid = _weighted(lambda ww, s: be.histogram2d(ya, xa, ry, rx, ww, s)[0], be, w, deterministic)
    if w is not None and grid.dtype != np.float64:
        grid = grid.astype(np.float64)
    counts = be.to_output(grid, like=x)
    points = counts if w is None else be.to_output(points, like=x)
    return Heatmap(counts, n - int(kept), xr, yr, xc, yc, points)


#: most cells a heatmap may have (the counting kernels index cells with 32-bit integers)
MAX_CELLS = 1 << 31
#: host bytes per cell a heatmap needs at its peak (partial and final grids; more with weights)
_CELL_BYTES = 16


def check_cells(width, height, weighted=False) -> tuple[int, int]:
    """``(width, height)`` checked before anything is allocated.

    Raises
    ------
    TypeError, ValueError
        Naming ``width`` / ``height``: not positive integers, more than
        :data:`MAX_CELLS` cells, or a grid whose memory (16 bytes per cell, twice
        that with weights) exceeds the memory available now.
    """
    width, height = positive_int(width, "width"), positive_int(height, "height")
    cells = width * height
    if cells > MAX_CELLS:
        raise ValueError(f"width, height: {width} x {height} = {cells:,} cells is more than "
                         f"the {MAX_CELLS:,} a heatmap can have")
    need = cells * _CELL_BYTES * (2 if weighted else 1)
    avail = _available_memory()
    if avail is not None and need > avail:
        raise ValueError(f"width, height: {width} x {height} cells need about "
                         f"{need / 2**30:.1f} GiB of memory, more than the {avail / 2**30:.1f} GiB "
                         "available")
    return width, height


def _available_memory() -> int | None:
    """Bytes of memory available now (None when unknown)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ModuleNotFoundError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_closed(closed, given) -> tuple[bool, bool]:
    """Per axis: ``closed`` (a bool or a pair), default True where the range comes from the data."""
    if closed is None:
        return given[0] is None, given[1] is None
    pair = (closed, closed) if isinstance(closed, (bool, np.bool_)) else closed
    try:
        xc, yc = pair
    except (TypeError, ValueError):
        raise TypeError(f"closed: expected a bool or a pair of bools, got {closed!r}") from None
    if not all(isinstance(c, (bool, np.bool_)) for c in (xc, yc)):
        raise TypeError(f"closed: expected a bool or a pair of bools, got {closed!r}")
    return bool(xc), bool(yc)


def check_clip(clip) -> tuple[float, float] | None:
    """``clip`` as a pair of percentiles ``0 <= lo < hi <= 100`` (or None)."""
    if clip is None:
        return None
    try:
        lo, hi = (float(v) for v in clip)
    except (TypeError, ValueError):
        raise ValueError(f"clip: expected a (low, high) pair of percentiles, got {clip!r}") from None
    if not 0 <= lo < hi <= 100:
        raise ValueError(f"clip: expected percentiles 0 <= low < high <= 100, got {clip!r}")
    return lo, hi


def data_range(lo, hi, name="x") -> tuple[float, float]:
    """The closed range ``[lo, hi]`` of data whose finite values span ``lo..hi``.

    Equal ends widen by 0.5 each way, as ``numpy.histogram2d``. Used with
    ``closed`` cells, so ``hi`` lands in the last cell and the edges are
    ``numpy.linspace(lo, hi, n + 1)``. The streaming CLI and the Dask path use
    this too, so a heatmap built chunk by chunk has the same cells as one built
    in memory.
    """
    lo, hi = float(lo), float(hi)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    if not math.isfinite(hi - lo):
        raise ValueError(f"{name}: the data's extent [{lo}, {hi}] is too wide to divide into "
                         f"cells; give {name}_range")
    return lo, hi


def _auto_extent(be, a) -> tuple[float, float] | None:
    """(min, max) of the finite values of ``a``; None when there are none."""
    if a.shape[0] == 0:
        return None
    lo, hi = be.minmax(a)
    if not (np.isfinite(lo) and np.isfinite(hi)):  # NaN or inf present: look at the finite ones
        xp = np if isinstance(a, np.ndarray) else importlib.import_module("cupy")
        finite = a[xp.isfinite(a)] if a.dtype.kind == "f" else a
        if finite.shape[0] == 0:
            return None
        lo, hi = finite.min(), finite.max()
    return float(lo), float(hi)


# --- percentile ranges -------------------------------------------------------------------------

#: bits of the key fixed by each counting pass of the radix selection
_DIGIT = 16
#: a selection collects the candidate values themselves once this few remain
_COLLECT = 1 << 16
_SIGN = np.uint64(1 << 63)


def percentile_ranges(run_pass, naxes, q) -> list[tuple[float, float] | None]:
    """Exact ``(lo, hi)`` percentiles of the finite values of ``naxes`` columns.

    ``lo`` is the value of rank ``floor(q[0]/100 * (m-1))`` and ``hi`` that of
    rank ``ceil(q[1]/100 * (m-1))`` among the ``m`` finite values of a column
    (as float64): NumPy's ``percentile(..., method="lower")`` and
    ``method="higher"``. None for a column without finite values.

    ``run_pass(fn, merge)`` makes one pass over the data: it calls
    ``fn(*columns)`` on every chunk (host or device arrays, one per axis) and
    returns ``merge(results)``; ``merge`` also merges merged results (a tree) and
    ``merge([])`` is the result of no data. So the same selection serves
    streamed files (merged as they come) and Dask partitions (``fn`` and
    ``merge`` run on the workers) with the same answer as :func:`heatmap` in
    memory. Radix selection on the order-preserving 64-bit keys of the
    values: each pass counts the next 16 bits of the candidates' keys, or, once
    at most 65536 candidates remain, collects them; at most four passes.
    """
    # per target (axis, end): [prefix, shift (low bits not yet fixed), rank, collect, key]
    targets = [[np.uint64(0), 64, None, False, None] for _ in range(2 * naxes)]
    while any(t[4] is None for t in targets):
        todo = [(i, t[0], t[1], t[3]) for i, t in enumerate(targets) if t[4] is None]
        parts = run_pass(functools.partial(_select_pass, todo=todo),
                         functools.partial(_merge_parts, todo=todo))
        for (i, prefix, shift, collect), merged in zip(todo, parts):
            t = targets[i]
            axis, end = divmod(i, 2)
            if collect:
                t[4] = np.sort(merged)[t[2]]
                continue
            if t[2] is None:  # first pass: the number of finite values gives the rank
                m = int(merged.sum())
                if m == 0:
                    t[4] = False
                    continue
                t[2] = _ranks(m, q)[end]
            cum = np.cumsum(merged)
            d = int(np.searchsorted(cum, t[2], side="right"))
            t[2] -= int(cum[d - 1]) if d else 0
            t[0] = (prefix << np.uint64(_DIGIT)) | np.uint64(d)
            t[1] = shift - _DIGIT
            if t[1] == 0:
                t[4] = t[0]
            elif int(merged[d]) <= _COLLECT:
                t[3] = True
    out = []
    for axis in range(naxes):
        ends = [targets[2 * axis + e][4] for e in (0, 1)]
        out.append(None if ends[0] is False else tuple(float(_unkey(k)) for k in ends))
    return out


def _ranks(m, q) -> tuple[int, int]:
    """Ranks of the ``q`` percentiles among ``m`` sorted values (lower / higher)."""
    lo, hi = (Fraction(p) * (m - 1) / 100 for p in q)
    return math.floor(lo), math.ceil(hi)


def _percentiles(a, q) -> tuple[float, float] | None:
    """:func:`percentile_ranges` of one array in memory, in one partition (same values)."""
    v = np.asarray(_backends.to_host(a)).ravel().astype(np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    ranks = _ranks(v.size, q)
    part = np.partition(v, ranks)
    return float(part[ranks[0]]), float(part[ranks[1]])


def _keys(a) -> np.ndarray:
    """Order-preserving uint64 keys of the finite values of ``a`` as float64 (-0.0 as 0.0)."""
    v = np.asarray(_backends.to_host(a)).ravel().astype(np.float64)
    v = v[np.isfinite(v)] + 0.0
    b = v.view(np.uint64)
    return np.where(b >> np.uint64(63), ~b, b | _SIGN)


def _unkey(k) -> np.float64:
    k = np.uint64(k)
    b = k ^ _SIGN if k >> np.uint64(63) else ~k
    return np.array([b], np.uint64).view(np.float64)[0]


def _select_pass(*columns, todo):
    """One chunk's share of a selection pass: per target, a digit histogram or the candidates."""
    keys = [_keys(c) for c in columns]
    out = []
    for i, prefix, shift, collect in todo:
        k = keys[i // 2]
        if shift < 64:
            k = k[(k >> np.uint64(shift)) == prefix]
        if collect:
            out.append(k)
        else:
            digit = (k >> np.uint64(shift - _DIGIT)) & np.uint64((1 << _DIGIT) - 1)
            out.append(np.bincount(digit.astype(np.intp), minlength=1 << _DIGIT))
    return out


def _merge_parts(parts, todo):
    """Merge chunks' (or merged) results of one pass: histograms add, candidates concatenate."""
    merged = []
    for j, (_, _, _, collect) in enumerate(todo):
        pieces = [p[j] for p in parts]
        if collect:
            merged.append(np.concatenate(pieces) if pieces else np.empty(0, np.uint64))
        else:
            merged.append(np.sum(pieces, axis=0) if pieces else np.zeros(1 << _DIGIT, np.int64))
    return merged


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
