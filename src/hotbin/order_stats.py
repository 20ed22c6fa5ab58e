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
from .core.reductions import COUNT, FIRST, LAST, quantiles, same
from .exec.plan import Plan

__all__ = ["ORDER_AGGS", "check_q", "aggregate_order", "merge_order"]

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


def aggregate_order(ex, cells, rules, arrays, w, by, shape, agg, q=None):
    """``(Cells fields, partial)`` of an order statistic over the cells ``shape``:
    ``(points, values, points, kept, n, skipped, value_counts)`` and, in memory, the
    merged partial that :func:`merge_order` adds to another (None on Dask).

    ``cells(be, blocks)`` is a block's cell per point (-1: none), the blocks being
    ``arrays`` then the category codes when ``by`` is ``(codes, ncat)``; ``rules``: the
    cell rules of ``arrays[1]`` and ``arrays[0]`` (rows, columns), for a backend's fused
    ``sorted_pairs``.
    """
    ncat = None if by is None else int(by[1])
    grid = tuple(shape) if by is None else (ncat,) + tuple(shape)
    ncell = int(np.prod(grid))
    ins = list(arrays) + ([] if by is None else [by[0]])
    k = len(ins)

    def valid(be, d):  # (cell of each point with a value, -1 for none; points in a cell; weights)
        c = cells(be, d[:len(arrays)])
        x = xp(c)  # the weights join the cells (host data too big for a device stays staged)
        inside = c >= 0
        kept = int(inside.sum())
        if by is not None:
            code = x.asarray(d[len(arrays)]).astype(np.int64)
            inside &= (code >= 0) & (code < ncat)
            c = code * int(np.prod(shape)) + c
        ww = x.asarray(d[k])
        if ww.dtype.kind == "f":
            inside &= ~x.isnan(ww)
        return x.where(inside, c, -1), kept, ww

    def tally(kept, d):
        return np.array([kept, int(d[0].shape[0])], np.int64)

    if agg in ("first", "last"):
        red = FIRST if agg == "first" else LAST

        def block(be, *d):
            c, kept, ww = valid(be, d)
            return _first_last(c, ww, int(np.asarray(to_host(d[k + 1]))[0]), ncell, agg == "first"), \
                tally(kept, d)
        plan = Plan(block, ((red, (ncell,)), (COUNT, (2,))))  # partials: red.lead + (ncell,)
        part, tal = ex.compute(*ex.run(plan, *ins, w, ex.starts(ins[0])))
        values, nv, partial = part[0], part[2], None
        values = values.reshape(grid)
    else:
        qa, weak = check_q(agg, q)
        red = quantiles(qa, weak, w.dtype, ncell)
        # in memory the partial is kept, finished here: a Heatmap adds to another by it
        run = red if ex.lazy else replace(red, finish=same)

        def block(be, *d):
            fused = getattr(be, "sorted_pairs", None)  # the backend's accumulator, where it has one
            if fused is not None:
                got = fused(d[1], d[0], *rules, d[k], None if by is None else (d[len(arrays)], ncat))
                if got is not NotImplemented:
                    return got[0], tally(got[1], d)
            c, kept, ww = valid(be, d)
            if order.packed(order.cell_bits(ncell), ww.dtype):
                return order.sort_words(c, order.to_keys(ww)), tally(kept, d)
            sel = c >= 0
            return order.sort_pairs(c[sel], order.to_keys(ww[sel]), order.cell_bits(ncell)), tally(kept, d)
        nq = 1 if qa is None else qa.size
        plan = Plan(block, ((run, (nq + 1, ncell)), (COUNT, (2,))))
        out, tal = ex.compute(*ex.run(plan, *ins, w))
        partial = None if ex.lazy else (red, out)
        if not ex.lazy:
            out = red.finalize(out)
        values, nv = out[:-1], out[-1]
        lead = () if qa is None or qa.ndim == 0 else (nq,)
        values = values.reshape(lead + grid)
    counts = nv.reshape(grid).astype(np.int64)
    pts = counts if by is None else counts.sum(axis=0)
    kept, n = (int(v) for v in np.asarray(to_host(tal)))
    return (pts, values, pts, kept, n, kept - int(pts.sum()), counts), partial


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
