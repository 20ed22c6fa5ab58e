"""What one block of the inputs contributes: the unit both executors run.

A :class:`Plan` is an operation as data: ``block(be, *arrays)`` computes one
partial per output on a block (the whole arrays in memory, one chunk on Dask)
with a backend's primitives, and each output's
:class:`hotbin.core.reductions.Reduction` merges and finishes the partials. The
executors (:class:`hotbin.exec.local.Local`, :class:`hotbin.exec.dask.Dask`) know
nothing else about the operation; what they offer is the :class:`Executor` protocol.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Protocol, runtime_checkable

import numpy as np

from ..core.arrays import to_host

__all__ = ["Plan", "Executor", "block_extent"]


class Plan(NamedTuple):
    """One operation: ``block(be, *arrays)`` -> one partial per output, and how outputs merge.

    ``outputs`` is a tuple of ``(Reduction, shape)``: a partial of output ``i``
    has shape ``reduction.lead + shape`` and dtype ``reduction.dtype``. A named tuple:
    every call builds one, small calls included.
    """

    block: Callable
    outputs: tuple


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


@runtime_checkable
class Executor(Protocol):
    """What every executor offers the front doors (:mod:`hotbin.exec.local`): :class:`hotbin.exec.local.Local`
    and :class:`hotbin.exec.dask.Dask` implement it (``lazy``: whether results are lazy).
    ``scale_guess`` and ``finite_extents`` have defaults here; Dask also offers ``lazy_edges``."""

    lazy: bool

    def array(self, a, name="a"):
        """``a`` adapted as an input (:mod:`hotbin.core.arrays`; a dask array on Dask)."""

    def align(self, other, x, message):
        """``other`` paired with ``x`` (same shape; chunked alike on Dask), else ``message``."""

    def check_bins(self, bins):
        """Refuse bins this executor cannot honour (string rules on Dask)."""

    def rules(self, build, arrays):
        """``build(arrays, minmax)``: the bin rules, with the data's extent where needed."""

    def stats(self, w) -> tuple[float, int]:
        """``(max |w|, number of weights)`` of the whole ``w``, now."""

    def scale_guess(self, w) -> int | None:
        """A guess of the fixed-point scale of ``w`` that the sums confirm, or None: the
        scale comes from :meth:`stats` first (:func:`hotbin.exec.local.weighted`)."""
        return None

    def extents(self, arrays, finite=False):
        """``(lo, hi)`` of each array now (``lo > hi`` for none); finite values with ``finite``."""

    def finite_extents(self, arrays):
        """``(min, max)`` of the finite values of each array, or None (one pass for all)."""
        return [None if lo > hi else (float(lo), float(hi)) for lo, hi in self.extents(arrays, True)]

    def percentiles(self, arrays, q):
        """Exact ``(lo, hi)`` percentiles of each array's finite values."""

    def run(self, plan: Plan, *arrays):
        """The plan's finished outputs: one block in memory; per chunk, merged, lazily on Dask."""

    def each(self, fn, x):
        """``fn`` on every block of ``x`` (same shape and dtype)."""

    def starts(self, x):
        """The index of each block's first element in ``x``, one element per block (first / last)."""

    def whole(self, fn, *arrays, shape, dtype):
        """``fn(be, *arrays)`` on the arrays whole (one task on Dask): a result of ``shape``, ``dtype``."""

    def blockwise(self, fn, out_ind, *args, dtype, new_axes=None):
        """``fn(be, *blocks)`` per block, indices as :func:`dask.array.blockwise` (lazy on Dask)."""

    def compute(self, *xs):
        """The results computed (in memory: as they are)."""

    def restore(self, x, like):
        """``x`` as ``like``'s kind of array and device (on Dask: as it is)."""
