"""Dask: the executor of :mod:`hotbin.exec.local` for data that does not fit one machine.

It knows no operation: every public function builds the same
:class:`hotbin.exec.ops.Op` it runs in memory, and :class:`Dask` runs it

1. **one bin rule, computed once**: rules come from :mod:`hotbin.core.binning`
   exactly as in memory; when they need the data's extent, one pass computes
   ``(min, max)`` per chunk with the backend's ``minmax`` (:meth:`Dask.rules`);
2. **a partial per chunk**: ``op.block(be, *chunks)`` on the workers, the
   backend loaded there by name (workers may have devices the client lacks);
   partials stay on the device that computed them;
3. **a tree merge** with each output's :meth:`hotbin.core.reductions.Reduction.combine`
   (``split_every`` partials per node: dask's ``split_every`` config, default 8),
   then :meth:`~hotbin.core.reductions.Reduction.finalize`.

Results are lazy dask arrays (NumPy-backed). Passes that decide the op itself
(the extent for rules, ``max |w|`` and ``n`` for a fixed-point scale, exact
percentiles for ``clip=``) run at call time. Integer counts are exact under any
chunking; with ``deterministic=True`` float weights are quantized with the
scale of the *global* ``max |w|`` and count, so the result is bitwise the
in-memory one for any chunking. Needs ``pip install "hotbin[dask]"``.
"""
from __future__ import annotations

import numpy as np

from .. import backend as _backends
from ..core.arrays import adapt, align_dask, as_dask, cupy, dask_array, on_gpu, to_host
from .executor import Executor
from .ops import Op, extent, weight_stats
from ..core.ranges import percentile_ranges
from ..core.reductions import Reduction

__all__ = ["Dask"]

#: partials merged per tree node when dask's ``split_every`` config is unset (dask's own default)
SPLIT_EVERY = 8


def _extent_merge(parts):
    return np.stack([np.min(parts[:, 0]), np.max(parts[:, 1])])


def _stats_merge(parts):
    return np.array([np.max(parts[:, 0]), np.sum(parts[:, 1])])


#: ``(max |w|, n)`` partials of weights (float64)
STATS = Reduction("stats", "", np.dtype(np.float64), merge=_stats_merge)


def _extent(dtype) -> Reduction:
    """``(lo, hi)`` partials in ``dtype``; an empty chunk is ``(top, bottom)``."""
    return Reduction("extent", "", np.dtype(dtype), merge=_extent_merge)


def _on_worker(fn, name):
    """``fn(be, *blocks)`` as a task: the backend ``name`` loaded where it runs, the blocks
    adapted to it, the result on the host unless a block came from a device."""
    def task(*blocks):
        be = _backends.load(name)
        out = fn(be, *(adapt(be, b) for b in blocks))
        return out if any(on_gpu(b) for b in blocks) else np.asarray(to_host(out))
    return task


class Dask(Executor):
    """Executor of plans over dask arrays and dask dataframe columns (lazy results)."""

    lazy = True

    def __init__(self, backend, *inputs):
        import dask

        self._dask = dask
        self.split_every = max(int(dask.config.get("split_every", None) or SPLIT_EVERY), 2)
        # the backend claims a dask input by its chunks' type (meta), other inputs by their own
        self.name = _backends.name_for(backend, *(getattr(i, "_meta", i) for i in inputs if i is not None))

    # --- arrays ---------------------------------------------------------------------------

    def array(self, a, name="a"):
        x = as_dask(a, name)
        return x.reshape(1) if x.ndim == 0 else x

    def align(self, other, x, message):
        """``other`` chunked like ``x`` (blocks pair up); ``message`` when the shapes differ."""
        try:
            return align_dask(x, other, "weights")
        except ValueError as exc:
            raise ValueError(message if "shape" in str(exc) else str(exc)) from None

    def check_bins(self, bins):
        for b in (bins if isinstance(bins, (list, tuple)) else [bins]):
            if isinstance(b, str):
                raise ValueError(f"bins: the string rule {b!r} needs all the data in memory; "
                                 "give dask data a number of bins (the range is found in one pass) "
                                 "or edges")

    def restore(self, x, like):
        return x

    def compute(self, *xs):
        return self._dask.compute(*xs)

    def each(self, fn, x):
        """``fn`` applied to every chunk of ``x`` (same shape and dtype), lazily."""
        return x.map_blocks(fn, dtype=x.dtype)

    def whole(self, fn, *arrays, shape, dtype):
        """``fn(be, *arrays)`` on the arrays whole, lazily: one task (on one worker) that
        receives each array concatenated, so chunks of unknown size are welcome; ``shape``
        (nan where unknown) and ``dtype`` are the result's."""
        task = self._dask.delayed(_on_worker(fn, self.name))(*arrays)
        return dask_array().from_delayed(task, shape=shape, dtype=dtype,
                                         meta=np.empty((0,) * len(shape), dtype))

    def blockwise(self, fn, out_ind, *args, dtype, new_axes=None):
        """``fn(be, *blocks)`` per output block, lazily: :func:`dask.array.blockwise` with
        ``args`` as ``array, index`` pairs, the blocks of an index missing from ``out_ind``
        concatenated (a block then holds those axes whole)."""
        return dask_array().blockwise(_on_worker(fn, self.name), out_ind, *args, dtype=dtype,
                                      new_axes=new_axes, concatenate=True,
                                      meta=np.empty((0,) * len(out_ind), dtype))

    def starts(self, x):
        """The index of each chunk's first element in ``x``: one element per chunk, so that a
        op's block knows where its points lie in the whole (first / last per cell). Chunks
        of unknown size are counted in the graph."""
        da = dask_array()
        sizes = x.chunks[0]
        if not any(np.isnan(s) for s in sizes):
            at = np.concatenate([[0], np.cumsum(sizes[:-1], dtype=np.int64)]).astype(np.int64)
            return da.from_array(at, chunks=1)
        counts = x.map_blocks(lambda b: np.array([b.shape[0]], np.int64), chunks=((1,) * len(sizes),),
                              dtype=np.int64)
        return da.cumsum(counts) - counts

    # --- passes that decide the op ----------------------------------------------------------

    def rules(self, build, arrays):
        """Rules from ``build(stand_ins, minmax)``: the binning module sees stand-ins.

        A stand-in has the array's dtype and holds the data's extent ``[lo, hi]``
        (or nothing for empty data), which is all a rule reads of the data. A
        first call finds out which arrays' extents the rule needs; only those are
        computed, in one pass.
        """
        needed = []

        def probe(v):
            needed.append(v)
            return v.dtype.type(0), v.dtype.type(1)

        stand = [np.zeros(0 if a.size == 0 else 1, a.dtype) for a in arrays]
        rules = build(stand, probe)
        if not needed:
            return rules
        which = [i for i, s in enumerate(stand) if any(s is v for v in needed)]
        for i, (lo, hi) in zip(which, self.extents([arrays[i] for i in which])):
            dt = arrays[i].dtype
            stand[i] = np.empty(0, dt) if lo > hi else np.array([lo, hi], dt)
        return build(stand, lambda v: (v[0], v[1]))

    def lazy_edges(self, build, arrays):
        """The edges of the rules of ``build(stand_ins, minmax)`` (as :meth:`rules`) as dask
        arrays: when the rules need the data's extent, its pass runs in their graph, so
        nothing is computed now (errors about the data, such as a range that is not finite,
        come with the result)."""
        dask, da = self._dask, dask_array()
        needed = []

        def probe(v):
            needed.append(v)
            return v.dtype.type(0), v.dtype.type(1)

        stand = [np.zeros(0 if a.size == 0 else 1, a.dtype) for a in arrays]
        shapes = [r.edges for r in build(stand, probe)]  # shape and dtype: no data read
        if not needed:
            return [da.from_array(e.copy(), chunks=e.shape) for e in shapes]
        which = [i for i, s in enumerate(stand) if any(s is v for v in needed)]
        lazy = [self.run(Op(extent, shape=(2,), red=_extent(arrays[i].dtype), params=(False,)), arrays[i])[0]
                for i in which]

        def edges(*found):
            st = list(stand)
            for i, (lo, hi) in zip(which, found):
                dt = arrays[i].dtype
                st[i] = np.empty(0, dt) if lo > hi else np.array([lo, hi], dt)
            return [r.edges.copy() for r in build(st, lambda v: (v[0], v[1]))]

        task = dask.delayed(edges, pure=True)(*lazy)
        return [da.from_delayed(task[k], shape=e.shape, dtype=e.dtype, meta=np.empty(0, e.dtype))
                for k, e in enumerate(shapes)]

    def extents(self, arrays, finite=False):
        """``(lo, hi)`` of each array now (of the finite values as float64 with ``finite``);
        ``lo > hi`` for no values."""
        lazy = [self.run(Op(extent, shape=(2,), red=_extent(np.float64 if finite else a.dtype), params=(finite,)),
                         a)[0] for a in arrays]
        return [tuple(v) for v in self.compute(*lazy)]

    def stats(self, w) -> tuple[float, int]:
        """``(max |w|, number of weights)`` of the whole array, in one pass now."""
        m, n = self.run(Op(weight_stats, shape=(2,), red=STATS), w)[0].compute()
        return float(m), int(n)

    def percentiles(self, arrays, q):
        """Exact ``(lo, hi)`` percentiles of each array's finite values: the radix
        selection of :func:`hotbin.core.ranges.percentile_ranges`, two to four passes."""
        return percentile_ranges(self.passes(arrays), len(arrays), q)

    def passes(self, arrays):
        """``run_pass(fn, merge)`` over the chunks of ``arrays`` (see
        :func:`hotbin.core.ranges.percentile_ranges`): a tree of ``merge`` on the workers."""
        dask = self._dask
        blocks = list(zip(*(a.to_delayed().ravel() for a in arrays)))
        k = self.split_every

        def run(fn, merge):
            parts = [dask.delayed(fn)(*b) for b in blocks]
            while len(parts) > 1:
                parts = [dask.delayed(merge)(parts[i:i + k]) for i in range(0, len(parts), k)]
            return parts[0].compute() if parts else merge([])
        return run

    # --- the op ------------------------------------------------------------------------------

    def run(self, op, *arrays):
        """``op``'s outputs as lazy dask arrays: a partial per chunk, tree-merged, finished."""
        dask, da = self._dask, dask_array()
        blocks = list(zip(*(a.to_delayed().ravel() for a in arrays)))
        name, outputs = self.name, op.outputs

        def partial(*chunks):
            be = _backends.load(name)
            parts = op.block(be, *(adapt(be, c) for c in chunks))
            return tuple(p if on_gpu(p) else np.asarray(p) for p in parts)

        def merge(parts):
            out = []
            for i, (red, _) in enumerate(outputs):
                ps = [p[i] for p in parts]
                if len(ps) == 1 or red.ragged:  # ragged partials merge as a list
                    out.append(ps[0] if len(ps) == 1 else red.combine(ps))
                    continue
                ns = cupy() if any(on_gpu(p) for p in ps) else np
                out.append(red.combine(ns.stack([ns.asarray(p) for p in ps])))
            return tuple(out)

        def finish(parts):
            return tuple(np.asarray(to_host(red.finalize(p))) for (red, _), p in zip(outputs, parts))

        empty = tuple(red.zeros(shape) for red, shape in outputs)
        parts = [dask.delayed(partial)(*b) for b in blocks]
        if not parts:
            parts = [dask.delayed(lambda: empty)()]
        while len(parts) > 1:
            parts = [dask.delayed(merge)(parts[i:i + self.split_every])
                     for i in range(0, len(parts), self.split_every)]
        done = dask.delayed(finish)(parts[0])
        return tuple(da.from_delayed(done[i], shape=shape, dtype=red.result_dtype,
                                     meta=np.empty((0,) * len(shape), red.result_dtype))
                     for i, (red, shape) in enumerate(outputs))
