"""The stream executor: operations run over a source of record batches, a batch at a time.

A *source* is what the data layer streams (:class:`hotbin.io.Data`): ``for cols, done in
source`` yields each batch's columns and the share of the rows read so far, every loop a
new pass over the same rows; a source may also answer ``extent(axes)``, the finite
``(lo, hi)`` (or None) of its number columns ``axes`` from one aggregate query. The front
doors take a source's columns (:meth:`Batches.column`) as they take arrays, and
:func:`executor` gives them a :class:`Stream` for them: ``hotbin.heatmap(x, y, w)`` over a
source builds the same :class:`hotbin.exec.ops.Op` as in memory, and :meth:`Stream.run`
is one pass: each batch's partials by the Op's kernel on the batch's
:class:`hotbin.exec.local.Local`, folded into the running partials by each output's
:meth:`hotbin.core.reductions.Reduction.combine` (as the Dask executor merges its
chunks'), finished once. Memory holds a batch and the partials, whatever the data's size.
A source split in shares read elsewhere (a cluster's workers) offers ``fold``: each
share's batches folded where they are read (:meth:`Stream.fold`), the shares' partials
folded by the executor alike.
"""
from __future__ import annotations

import numpy as np

from ..core.arrays import cupy, on_gpu, to_host
from ..core.ranges import percentile_ranges
from .dask import STATS, Dask
from .executor import Executor
from .local import executor as _local
from .ops import Op, block_extent, weight_stats

__all__ = ["Batches", "Column", "Stream", "executor"]


class Batches:
    """A source of record batches whose columns hotbin's functions take (see the module);
    ``over(batches, what)``: each pass's batches, e.g. behind a progress bar saying ``what``."""

    def __init__(self, source, over=None, first=0):
        self.source = source
        self.over = over
        self.first = first  #: the index of the source's first row in the whole (of which it is a share)
        self.rows = None  #: rows of the last whole pass (None before one)

    def column(self, k, dtype=np.float64, read=None, labels=None) -> Column:
        """Column ``k`` of every batch, of ``dtype``; ``read(col)`` makes the array of the batch's
        column when it is not one already; ``labels``: a column of category codes (``by=``)
        and the label of each code."""
        return Column(self, _Read(k, read), np.dtype(dtype), k, None if labels is None else tuple(labels))

    def passes(self, what):
        """``(cols, start)`` of every batch in one pass: ``start``, the index of its first row."""
        batches = iter(self.source) if self.over is None else self.over(self.source, what)
        rows = 0
        for cols, _ in batches:
            yield cols, self.first + rows
            rows += len(cols[0])
        self.rows = rows


class _Read:
    """Column ``k`` of a batch, through ``fn`` when given (a category column: its codes)."""

    def __init__(self, k, fn=None):
        self.k, self.fn = k, fn

    def __call__(self, cols, start):
        col = cols[self.k]
        return col if self.fn is None else self.fn(col)


class _Each:
    """``fn`` applied to another column's block (:meth:`Stream.each`)."""

    def __init__(self, fn, read):
        self.fn, self.read = fn, read

    def __call__(self, cols, start):
        return self.fn(self.read(cols, start))


def _start(cols, start):
    """The block of :meth:`Stream.starts`: the batch's first row index."""
    return np.array([start], np.int64)


class Column:
    """A column of a :class:`Batches` as the front doors see an array: ``dtype``, one axis of
    ``shape`` ``(rows,)`` (None until a pass counted them); ``labels`` with category codes."""

    ndim = 1

    def __init__(self, batches, read, dtype, key=None, labels=None):
        self.batches, self.read, self.dtype, self.key, self.labels = batches, read, dtype, key, labels

    @property
    def shape(self) -> tuple:
        return (self.batches.rows,)

    @property
    def size(self):
        return self.batches.rows

    def categories(self) -> tuple:
        """``(codes, labels)`` as :func:`hotbin.io.frames.categories` gives them (``by=``)."""
        if self.labels is None:
            raise TypeError("by: a column of a stream is categories when it has labels "
                            "(Batches.column(k, read=..., labels=...))")
        return self, self.labels

    def __repr__(self) -> str:
        return f"Column({self.key!r}, {self.dtype})"


def executor(backend, *inputs, offload=None):
    """A :class:`Stream` when an input is a column of a stream of batches, else the in-memory or
    Dask executor of ``inputs`` (:func:`hotbin.exec.local.executor`)."""
    col = next((i for i in inputs if isinstance(i, Column)), None)
    if col is None:
        return _local(backend, *inputs, offload=offload)
    return Stream(col.batches, backend, offload)


def _fold(outputs, acc, parts):
    """The running partials ``acc`` and a batch's ``parts`` as one, by each output's Reduction
    (as the Dask tree merges: stacked, or a list when ragged; on the device when one is)."""
    if acc is None:
        return parts
    out = []
    for (red, _), a, p in zip(outputs, acc, parts):
        if red.ragged:
            out.append(red.combine([a, p]))
            continue
        ns = cupy() if on_gpu(a) or on_gpu(p) else np
        out.append(red.combine(ns.stack([ns.asarray(a), ns.asarray(p)])))
    return tuple(out)


class Stream(Executor):
    """Executor of operations over the columns of a :class:`Batches` (see the module): a pass
    over the batches per run, each batch on the in-memory executor of ``backend``."""

    lazy = False

    def __init__(self, batches, backend=None, offload=None):
        self.batches, self.backend, self.offload = batches, backend, offload
        self.runs = 0  #: passes of :meth:`run` so far (the progress says which)

    def _local(self, blocks):
        """The in-memory executor of a batch's ``blocks`` (the backend picked as for arrays)."""
        return _local(self.backend, *blocks, offload=self.offload)

    # --- arrays ---------------------------------------------------------------------------

    def array(self, a, name="a"):
        """``a``, a column of this stream (arrays and another stream's columns are refused)."""
        if isinstance(a, Column) and a.batches is self.batches:
            return a
        got = "a column of another stream" if isinstance(a, Column) else type(a).__name__
        raise TypeError(f"{name}: expected a column of the same stream of batches as the other inputs, got {got}")

    def align(self, other, x, message):
        """``other``, a column of ``x``'s stream (its batches pair up), else ``message``."""
        if not isinstance(other, Column) or other.batches is not x.batches:
            raise ValueError(message)
        return other

    def check_bins(self, bins):
        """Refuse string rules: they need all the data in memory."""
        for b in (bins if isinstance(bins, (list, tuple)) else [bins]):
            if isinstance(b, str):
                raise ValueError(f"bins: the string rule {b!r} needs all the data in memory; give a stream "
                                 "of batches a number of bins (the range is found in one query or pass) or edges")

    def rules(self, build, arrays):
        """Rules from ``build(stand_ins, minmax)`` with the data's extent (as on Dask: stand-ins
        holding each needed column's extent, found by :meth:`extents`)."""
        return Dask.rules(self, build, arrays)

    def restore(self, x, like):
        """``x`` as NumPy: a stream's results are on the host."""
        return np.asarray(to_host(x))

    def compute(self, *xs):
        return xs

    def each(self, fn, x):
        """``fn`` applied to every batch's block of ``x``: a column read as it is needed."""
        return Column(self.batches, _Each(fn, x.read), x.dtype, x.key)

    def starts(self, x):
        """A column whose block is its batch's first row index (first / last follow row order)."""
        return Column(self.batches, _start, np.dtype(np.int64))

    def whole(self, fn, *arrays, shape, dtype):
        raise TypeError("a stream of batches is read a batch at a time: this needs the data in memory")

    def blockwise(self, fn, out_ind, *args, dtype, new_axes=None):
        raise TypeError("a stream of batches is read a batch at a time: this needs the data in memory")

    # --- passes that decide the op ----------------------------------------------------------

    def extents(self, arrays, finite=False):
        """``(lo, hi)`` of each column (of its finite values as float64 with ``finite``), ``lo >
        hi`` for none: the source's one aggregate query where it answers for these columns,
        else one pass."""
        if not arrays:
            return []
        query = getattr(self.batches.source, "extent", None)
        if finite and query is not None and all(isinstance(a.read, _Read) and a.read.fn is None for a in arrays):
            found = query([a.read.k for a in arrays])
            return [(np.inf, -np.inf) if e is None else e for e in found]
        # no batch: (top, bottom); the batches' extents merge as the Dask chunks' (NaN wins)
        out = [block_extent(None, np.zeros(0, np.float64 if finite else a.dtype), finite)[0] for a in arrays]
        for cols, start in self.batches.passes("finding the extent"):
            blocks = [a.read(cols, start) for a in arrays]
            loc = self._local(blocks)
            for k, b in enumerate(blocks):
                lo, hi = block_extent(loc.be, loc.array(b), finite)[0]
                out[k] = np.array([np.min([out[k][0], lo]), np.max([out[k][1], hi])], out[k].dtype)
        return [tuple(v) for v in out]

    def stats(self, w) -> tuple[float, int]:
        """``(max |w|, number of weights)``: one pass."""
        m, n = self.run(Op(weight_stats, shape=(2,), red=STATS), w)[0]
        return float(m), int(n)

    def percentiles(self, arrays, q):
        """Exact ``(lo, hi)`` percentiles of each column's finite values: the radix selection of
        :func:`hotbin.core.ranges.percentile_ranges`, two to four passes, merged batch by batch."""
        count = [0]

        def run_pass(fn, merge):
            count[0] += 1
            acc = merge([])
            for cols, start in self.batches.passes(f"finding the percentiles (pass {count[0]})"):
                acc = merge([acc, fn(*(a.read(cols, start) for a in arrays))])
            return acc

        return percentile_ranges(run_pass, len(arrays), q)

    # --- the op ------------------------------------------------------------------------------

    def run(self, op, *arrays):
        """``op``'s finished outputs: one pass (:meth:`fold`), finished once; no batch: the empty
        partials'. A source that folds where its batches are (``fold(op, columns, backend,
        offload)``: each share's :meth:`fold` and rows, a cluster's) has its shares' partials
        folded here alike."""
        outputs, acc = op.outputs, None
        self.runs += 1
        shares = getattr(self.batches.source, "fold", None)
        if shares is None:
            acc = self.fold(op, *arrays)
        else:
            got = shares(op, arrays, self.backend, self.offload)
            for parts, _ in got:
                acc = acc if parts is None else _fold(outputs, acc, parts)
            self.batches.rows = sum(rows for _, rows in got)
        if acc is None:
            acc = tuple(red.zeros(shape) for red, shape in outputs)
        return tuple(np.asarray(to_host(red.finalize(p))) for (red, _), p in zip(outputs, acc))

    def fold(self, op, *arrays):
        """``op``'s partials over one pass, unfinished (None: no batch): each batch's by
        ``op.block`` on the batch's backend, folded into the running ones."""
        outputs, acc = op.outputs, None
        for cols, start in self.batches.passes("counting" + (f" (pass {self.runs})" if self.runs > 1 else "")):
            blocks = [a.read(cols, start) for a in arrays]
            loc = self._local(blocks)
            parts = op.block(loc.be, *(loc.array(b) for b in blocks))
            acc = _fold(outputs, acc, tuple(p if on_gpu(p) else np.asarray(p) for p in parts))
        return acc
