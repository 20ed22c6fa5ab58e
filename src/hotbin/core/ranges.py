"""Where a heatmap's cells come from: the ranges and the size of its grid.

This module owns the rules that fix a heatmap's cells before any point is
counted: a given range (``[lo, hi)``, checked), a range taken from the data
(the finite extent, closed, :func:`data_range`), percentile ranges (``clip``:
exact, in memory or by a radix selection over chunks, :func:`percentile_ranges`),
the closure of each axis (:func:`check_closed`), and the number of cells a grid
may have (:func:`check_cells`). :func:`hotbin.heatmap`, the Dask path
(:mod:`hotbin.exec.dask`) and the streaming CLI all take their cells from
here, so a heatmap built in memory, per Dask chunk or per file chunk has the
same cells.
"""
from __future__ import annotations

import functools
import math
import os

import numpy as np

from .arrays import to_host
from .binning import positive_int

__all__ = ["MAX_CELLS", "check_cells", "check_clip", "check_closed", "data_range", "given_range",
           "percentile_ranges", "percentile_range"]


#: most cells a heatmap may have (the counting kernels index cells with 32-bit integers)
MAX_CELLS = 1 << 31
#: host bytes per cell a heatmap needs at its peak (partial and final grids; more with weights)
_CELL_BYTES = 16
#: grids needing more bytes than this are checked against the memory available now (reading
#: it is dear against a small call: results/probes-cpu.md, ranges.py); smaller ones fail, if
#: ever, as NumPy fails
ASK_MEMORY = 256 << 20


def check_cells(width, height, weighted=False, layers=1) -> tuple[int, int]:
    """``(width, height)`` checked before anything is allocated.

    Raises
    ------
    TypeError, ValueError
        Naming ``width`` / ``height``: not positive integers, more than
        :data:`MAX_CELLS` cells, or a grid whose memory (16 bytes per cell, twice
        that with weights) exceeds the memory available now (asked for grids of more
        than :data:`ASK_MEMORY` bytes). ``layers``: grids of these cells (the
        categories of ``by=``).
    """
    width, height = positive_int(width, "width"), positive_int(height, "height")
    cells = width * height * layers
    if cells > MAX_CELLS:
        per = f" x {layers} categories" if layers > 1 else ""
        raise ValueError(f"width, height: {width} x {height}{per} = {cells:,} cells is more than "
                         f"the {MAX_CELLS:,} a heatmap can have")
    need = cells * _CELL_BYTES * (2 if weighted else 1)
    avail = _available_memory() if need > ASK_MEMORY else None  # dear: not for every grid
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
    ``merge`` run on the workers) with the same answer as :func:`hotbin.heatmap` in
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
    from fractions import Fraction  # here, not at import (its import takes time)
    lo, hi = (Fraction(p) * (m - 1) / 100 for p in q)
    return math.floor(lo), math.ceil(hi)


def percentile_range(a, q) -> tuple[float, float] | None:
    """:func:`percentile_ranges` of one array in memory, in one partition (same values)."""
    v = np.asarray(to_host(a)).ravel().astype(np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    ranks = _ranks(v.size, q)
    part = np.partition(v, ranks)
    return float(part[ranks[0]]), float(part[ranks[1]])


def _keys(a) -> np.ndarray:
    """Order-preserving uint64 keys of the finite values of ``a`` as float64 (-0.0 as 0.0)."""
    v = np.asarray(to_host(a)).ravel().astype(np.float64)
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


def given_range(r, name) -> tuple[float, float]:
    """A given range ``(lo, hi)``, checked: real, finite, ``lo < hi``, of a finite width."""
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


def interval(r, closed, spec="") -> str:
    """``[lo, hi)`` or ``[lo, hi]`` (``closed``), the bounds formatted with ``spec``."""
    return f"[{format(r[0], spec)}, {format(r[1], spec)}{']' if closed else ')'}"
