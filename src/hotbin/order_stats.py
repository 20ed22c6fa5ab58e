"""Order statistics per heatmap cell: median, quantile, first and last, as plans.

=========  ==========================================  =======================================
agg        partial of a block                          value of a cell with ``n > 0`` values
=========  ==========================================  =======================================
median     its ``(cell, value)`` pairs, sorted          ``numpy.median`` of the cell's values
quantile   (:func:`hotbin.core.reductions.quantiles`)   ``numpy.quantile(values, q)`` (linear)
first      ``[value, index, n]`` per cell (FIRST)       the value of the first point
last       ``[value, index, n]`` per cell (LAST)        the value of the last point
=========  ==========================================  =======================================

Every block bins its points with the backend's ``cells2d`` primitive (the exact rule);
a NaN weight is no value (counted in ``skipped``), like a point without a category.
The executors merge the partials like any other (:mod:`hotbin.exec`): the median's
and the quantile's are every value of the block, so their results are exact and the
same bits under any point order, thread count, chunking and backend
(:mod:`hotbin.core.order`); first and last take the least / largest global point
index, so they follow the input's order across Dask chunks. Exact order statistics
need every value: memory grows with the points (a partial holds 8 bytes a float32 or
narrower value, 16 otherwise; an in-memory Heatmap keeps it for ``+``).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .core import order
from .core.arrays import to_host, xp
from .core.reductions import FIRST, LAST, quantiles, same

__all__ = ["ORDER_AGGS", "check_q", "aggregate_order", "merge_order", "first_last", "sorted_values"]

ORDER_AGGS = ("median", "quantile", "first", "last")


def check_q(agg, q):
    """``(q array or None, weak)`` for ``agg``: ``q`` only with quantile, and needed there."""
    if agg != "quantile":
        if q is not None:
            raise ValueError(f"q: only agg='quantile' takes q, got agg={agg!r}")
        return None, False
    if q is None:
        raise ValueError("q: agg='quantile' needs q, a number in [0, 1] or a sequence of them")
    return order.check_q(q)


def aggregate_order(ex, op, ins, w, shape, agg, q=None):
    """``(Cells fields, partial)`` of an order statistic over the cells ``shape``:
    ``(points, values, points, kept, n, skipped, value_counts)`` and, in memory, the
    merged partial that :func:`merge_order` adds to another (None on Dask).

    ``op`` is the heatmap's :class:`hotbin.exec.ops.Op` (its rules, rows then columns, and
    categories); ``ins`` the rows' and the columns' coordinates, then the category codes.
    """
    ncat = op.by
    grid = tuple(shape) if ncat is None else (ncat,) + tuple(shape)
    ncell = int(np.prod(grid))
    if agg in ("first", "last"):
        red = FIRST if agg == "first" else LAST
        run = op._replace(kernel=first_last, shape=(ncell,), red=red, weighted=True, params=(agg == "first",))
        part, tal = ex.compute(*ex.run(run, *ins, ex.starts(ins[0]), w))  # partials: red.lead + (ncell,)
        values, nv, partial = part[0], part[2], None
        values = values.reshape(grid)
    else:
        qa, weak = check_q(agg, q)
        red = quantiles(qa, weak, w.dtype, ncell)
        nq = 1 if qa is None else qa.size
        # in memory the partial is kept, finished here: a Heatmap adds to another by it
        run = op._replace(kernel=sorted_values, shape=(nq + 1, ncell), red=red if ex.lazy else replace(red, finish=same),
                          weighted=True)
        out, tal = ex.compute(*ex.run(run, *ins, w))
        partial = None if ex.lazy else (red, out)
        if not ex.lazy:
            out = red.finalize(out)
        values, nv = out[:-1], out[-1]
        lead = () if qa is None or qa.ndim == 0 else (nq,)
        values = values.reshape(lead + grid)
    counts = nv.reshape(grid).astype(np.int64)
    pts = counts if ncat is None else counts.sum(axis=0)
    kept, n = (int(v) for v in np.asarray(to_host(tal)))
    return (pts, values, pts, kept, n, kept - int(pts.sum()), counts), partial


def _valid(be, op, d, ww):
    """``(cell of each point with a value, -1 for none; points in a cell; weights)`` of a block
    ``d`` (rows, columns, codes) under ``op``'s rules."""
    c = be.cells2d(d[0], d[1], *op.rules)
    x = xp(c)  # the weights join the cells (host data too big for a device stays staged)
    inside = c >= 0
    kept = int(inside.sum())
    if op.by is not None:
        code = x.asarray(d[2]).astype(np.int64)
        inside &= (code >= 0) & (code < op.by)
        c = code * int(np.prod(op.rules[0].nbins * op.rules[1].nbins)) + c
    ww = x.asarray(ww)
    if ww.dtype.kind == "f":
        inside &= ~x.isnan(ww)
    return x.where(inside, c, -1), kept, ww


def first_last(be, op, d, w, red):
    """An :class:`hotbin.exec.ops.Op` kernel: ``[value, global index, n]`` of each cell's first
    (``op.params[0]``) or last point with a value; ``d[-1]`` holds the block's first index."""
    c, kept, ww = _valid(be, op, d[:-1], w)
    return _first_last(c, ww, int(np.asarray(to_host(d[-1]))[0]), op.shape[0], op.params[0]), kept


def sorted_values(be, op, d, w, red):
    """An :class:`hotbin.exec.ops.Op` kernel: the block's ``(cell, value)`` pairs sorted (the
    quantiles' partial), by the backend's fused accumulator where it has one."""
    fused = getattr(be, "sorted_pairs", None)
    if fused is not None:
        got = fused(d[0], d[1], *op.rules, w, None if op.by is None else (d[2], op.by))
        if got is not NotImplemented:
            return got
    ncell = op.shape[1]
    c, kept, ww = _valid(be, op, d, w)
    if order.packed(order.cell_bits(ncell), ww.dtype):
        return order.sort_words(c, order.to_keys(ww)), kept
    sel = c >= 0
    return order.sort_pairs(c[sel], order.to_keys(ww[sel]), order.cell_bits(ncell)), kept


def _first_last(c, w, start, ncell, first):
    """``(3, ncell)`` float64 ``[value, global index, n]`` of the first (last) point with a value
    of each cell: the points' ``cell << b | index`` sorted once, a cell's run starting
    (ending) at its first (last) point."""
    x = xp(c)
    sel = x.flatnonzero(c >= 0)
    out = x.empty((3, ncell), np.float64)
    out[0], out[1], out[2] = np.nan, np.inf if first else -np.inf, 0.0
    if sel.size == 0:
        return out
    cs = c[sel]
    ib = max(1, int(c.shape[0] - 1).bit_length())
    if ib + order.cell_bits(ncell) <= 64:
        key = x.sort((cs.astype(np.uint64) << np.uint64(ib)) | sel.astype(np.uint64))
        cs, sel = (key >> np.uint64(ib)).astype(np.int64), (key & np.uint64((1 << ib) - 1)).astype(np.int64)
    else:
        o = x.argsort(cs, kind="stable")
        cs, sel = cs[o], sel[o]
    edge = x.empty(cs.shape[0], bool)
    if first:
        edge[0] = True
        edge[1:] = cs[1:] != cs[:-1]
    else:
        edge[-1] = True
        edge[:-1] = cs[1:] != cs[:-1]
    at, pick = cs[edge], sel[edge]
    out[0, at] = w[pick].astype(np.float64)
    out[1, at] = (pick + start).astype(np.float64)
    bounds = x.searchsorted(cs, x.arange(ncell + 1))  # runs of the sorted cells (no atomics on a hot cell)
    out[2] = bounds[1:] - bounds[:-1]
    return out


def merge_order(agg, a, b):
    """``(values, value_counts, partial)`` of two heatmaps' order statistics of the same
    cells, ``a``'s points first: first and last pick a side per cell; median and quantile
    merge the partials that :func:`aggregate_order` kept and pick again (exact)."""
    x = xp(a.values)
    na, nb = a.value_counts, b.value_counts
    if agg in ("first", "last"):
        take_a = (na > 0) if agg == "first" else (nb == 0)
        return x.where(take_a, a.values, b.values), na + nb, None
    if a.order is None or b.order is None:
        raise ValueError(f"other: heatmaps of agg={agg!r} add only with their partials (computed in "
                         "memory, not on Dask)")
    red, pa = a.order
    merged = red.combine([pa, b.order[1]])
    done = red.finalize(merged)
    return done[:-1].reshape(a.values.shape), done[-1].reshape(na.shape).astype(np.int64), (red, merged)
