"""What every executor offers the front doors: the :class:`Executor` protocol.

The executors (:class:`hotbin.exec.local.Local` in memory, :class:`hotbin.exec.dask.Dask`
per chunk, :class:`hotbin.exec.stream.Stream` a record batch at a time) run operations
declared as data (:class:`hotbin.exec.ops.Op`: a block's partials, merged by each output's
:class:`hotbin.core.reductions.Reduction`) and know nothing else about them.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Executor"]


@runtime_checkable
class Executor(Protocol):
    """What every executor offers the front doors (:mod:`hotbin.exec.local`): :class:`hotbin.exec.local.Local`,
    :class:`hotbin.exec.dask.Dask` and :class:`hotbin.exec.stream.Stream` implement it (``lazy``: whether
    results are lazy).
    ``scale_guess``, ``fixed_sums`` and ``finite_extents`` have defaults here; Dask also offers
    ``lazy_edges``."""

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

    def fixed_sums(self, op, x, w):
        """The finished ``deterministic=True`` sums of the 1-D histogram ``op`` over ``x`` weighted
        by ``w``, where the backend guesses and confirms their fixed-point scale on its device
        without waiting; else None (:func:`hotbin.exec.local.weighted` finds the scale)."""
        return None

    def extents(self, arrays, finite=False):
        """``(lo, hi)`` of each array now (``lo > hi`` for none); finite values with ``finite``."""

    def finite_extents(self, arrays):
        """``(min, max)`` of the finite values of each array, or None (one pass for all)."""
        return [None if lo > hi else (float(lo), float(hi)) for lo, hi in self.extents(arrays, True)]

    def percentiles(self, arrays, q):
        """Exact ``(lo, hi)`` percentiles of each array's finite values."""

    def run(self, op, *arrays):
        """The finished outputs of ``op`` (:class:`hotbin.exec.ops.Op`): one block in memory; per
        chunk, merged, lazily on Dask; per record batch, merged as they come, on a stream."""

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
