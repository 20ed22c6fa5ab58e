"""Operations as data: what a block of the inputs contributes, declared, not written as a closure.

An :class:`Op` names a backend primitive (a module-level *kernel* function below, or one of
:mod:`hotbin.order_stats` and :mod:`hotbin.images`), the bin rules it runs under, the
accumulator of its output (a :class:`hotbin.core.reductions.Reduction`) and what comes with
it: weights, categories, the points behind a weighted count, the tally ``[points in a cell,
points]``. Both executors run it the same way (:meth:`Op.block` on the whole arrays in
memory, on every chunk on Dask), merging the partials by each output's Reduction. A front
door builds one Op and hands it to :func:`hotbin.exec.local.weighted` (which picks the
accumulator from the weights) or to ``ex.run``. An Op is plain data: it pickles, prints and
compares, so a Dask graph carries no closure.

A kernel is ``kernel(be, op, data, w, red) -> (partial, points in a cell or None)``: ``data``
the block's arrays before the weights, ``w`` the weights (or None), ``red`` the accumulator.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from ..core.arrays import to_host
from ..core.reductions import COUNT, SUM_I64, Reduction, fits_int64

__all__ = ["Op", "histogram", "histogram2d", "bincount", "extent", "weight_stats", "block_extent", "exact_int_sums"]


class Op(NamedTuple):
    """One operation: ``kernel`` over ``rules`` into ``red`` on cells ``shape`` (see the module)."""

    kernel: Callable  #: ``kernel(be, op, data, w, red)`` (module-level: it pickles by name)
    rules: tuple = ()  #: what the kernel bins by: one BinRule per axis
    shape: tuple = ()  #: the cells of the main output (categories first, with ``by``)
    red: Reduction = COUNT  #: the accumulator of the main output
    weighted: bool = False  #: the block's last array holds the weights
    by: int | None = None  #: categories: the array after the coordinates holds their codes
    points: bool = False  #: a second output: the unweighted counts (a weighted count's points)
    tally: bool = False  #: a last output: ``[points in a cell, points]``
    params: tuple = ()  #: what else the kernel needs (plain data)

    @property
    def outputs(self) -> tuple:
        """``(Reduction, shape)`` of each output, as the executors merge them."""
        outs = ((self.red, tuple(self.shape)),)
        if self.points:
            outs += ((COUNT, tuple(self.shape)),)
        return outs + (((COUNT, (2,)),) if self.tally else ())

    def block(self, be, *arrays):
        """The partials of one block (the whole arrays in memory, a chunk on Dask)."""
        data, w = (arrays[:-1], arrays[-1]) if self.weighted else (arrays, None)
        if w is not None and tuple(w.shape) != tuple(data[0].shape):  # dask partitions
            raise ValueError("weights should have the same shape as a.")
        if self.red is SUM_I64:
            kept = []
            part = exact_int_sums(lambda p, r: _first(kept, self.kernel(be, self, data, p, r)), be, w)
            kept = kept[0]
        else:
            part, kept = self.kernel(be, self, data, w, self.red)
        out = (part,)
        if self.points:
            part, kept = self.kernel(be, self, data, None, COUNT)
            out += (part,)
        if self.tally:
            out += (np.array([int(kept), int(data[0].shape[0])], np.int64),)
        return out


def _first(store, got):
    store.append(got[1])
    return got[0]


# --- the counting kernels -------------------------------------------------------------------

def histogram(be, op, data, w, red):
    """The backend's 1-D histogram of ``data[0]`` under ``op.rules[0]``."""
    return be.histogram(data[0], op.rules[0], w, red), None


def histogram2d(be, op, data, w, red):
    """The backend's 2-D histogram of ``data[0], data[1]`` (categories ``data[2]`` with ``op.by``)."""
    by = None if op.by is None else (data[2], op.by)
    return be.histogram2d(data[0], data[1], *op.rules, w, red, by)


def bincount(be, op, data, w, red):
    """The backend's bincount of ``data[0]`` into ``op.shape[0]`` bins."""
    return be.bincount(data[0], op.shape[0], w), None


def extent(be, op, data, w, red):
    """``[min, max]`` of ``data[0]`` (of its finite values, as float64, with ``op.params[0]``)."""
    return block_extent(be, data[0], op.params[0])[0], None


def weight_stats(be, op, data, w, red):
    """``[max |w|, number of weights]`` of ``data[0]``, as float64."""
    ww = data[0]
    return np.array([be.max_abs(ww) if ww.size else 0.0, ww.size], np.float64), None


def block_extent(be, x, finite=False):
    """``((min, max),)`` of a block (of its finite values, as float64, with ``finite``); an
    empty block gives ``(top, bottom)`` of the dtype."""
    dt = np.dtype(np.float64) if finite else x.dtype
    if x.size:
        lo, hi = be.minmax(x)
        if not finite or (np.isfinite(lo) and np.isfinite(hi)):
            return (np.array([lo, hi], dt),)
        v = np.asarray(to_host(x)).ravel()
        v = v[np.isfinite(v)]
        if v.size:
            return (np.array([v.min(), v.max()], dt),)
    if dt.kind == "f":
        return (np.array([np.inf, -np.inf], dt),)
    info = np.iinfo(dt)
    return (np.array([info.max, info.min], dt),)


_I64 = 1 << 63


def exact_int_sums(compute, be, w):
    """``compute(w, SUM_I64)``: int64 sums of integer weights that never wrap.

    When ``max|w| * n`` could reach 2**63 (decided from the dtype alone when it can
    be, else from the weights' minimum and maximum), each weight is cut into
    ``k``-bit pieces (``w = sum_j p_j * 2**(k*j)``, the top piece signed), small
    enough that ``n`` of them sum in int64; the pieces' sums are combined in
    Python integers.

    Raises
    ------
    OverflowError
        Naming the bin whose exact sum does not fit in int64.
    """
    n = int(w.size)
    info = np.iinfo(w.dtype)
    if max(-int(info.min), int(info.max)) * n < _I64:
        return compute(w, SUM_I64)
    lo, hi = be.minmax(w)
    if max(-int(lo), int(hi)) * n < _I64:
        return compute(w, SUM_I64)
    k = min(32, 62 - n.bit_length())  # n pieces below 2**k sum below 2**62
    npieces = math.ceil(64 / k)
    total = 0
    for j in range(npieces):
        p = w >> (k * j) if j else w & ((1 << k) - 1)
        if 0 < j < npieces - 1:
            p &= (1 << k) - 1
        p = p.view(np.int64) if p.dtype == np.uint64 else p.astype(np.int64, copy=False)
        total = total + to_host(compute(p, SUM_I64)).astype(object) * (1 << (k * j))
    return fits_int64(total)
