"""What one block of the inputs contributes: the unit both executors run.

A :class:`Plan` is an operation as data: ``block(be, *arrays)`` computes one
partial per output on a block (the whole arrays in memory, one chunk on Dask)
with a backend's primitives, and each output's
:class:`hotbin.reductions.Reduction` merges and finishes the partials. The
executors (:class:`hotbin.plan.Local`, :class:`hotbin.distributed.Dask`) know
nothing else about the operation.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .arrays import to_host

__all__ = ["Plan", "Executor", "block_extent"]


@dataclass(frozen=True)
class Plan:
    """One operation: ``block(be, *arrays)`` -> one partial per output, and how outputs merge.

    ``outputs`` is a tuple of ``(Reduction, shape)``: a partial of output ``i``
    has shape ``reduction.lead + shape`` and dtype ``reduction.dtype``.
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


class Executor:
    """What every executor offers the front doors (:mod:`hotbin.plan`).

    ``lazy``; ``array(a, name)`` and ``align(other, x, message)`` (inputs);
    ``check_bins(bins)``; ``rules(build, arrays)``; ``stats(w)`` (``max |w|``, n);
    ``scale_guess(w)``; ``extents(arrays, finite)``; ``percentiles(arrays, q)``;
    ``run(plan, *arrays)``; ``each(fn, x)`` (a blockwise map); ``compute(*results)``;
    ``restore(x, like)``.
    """

    lazy = False

    def scale_guess(self, w) -> int | None:
        """A guess of the fixed-point scale of ``w`` that the sums confirm, or None: the
        scale comes from :meth:`stats` first (:func:`hotbin.plan.weighted`)."""
        return None

    def finite_extents(self, arrays):
        """``(min, max)`` of the finite values of each array, or None (one pass for all)."""
        return [None if lo > hi else (float(lo), float(hi)) for lo, hi in self.extents(arrays, True)]
