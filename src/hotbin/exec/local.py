"""One front door: an operation described once, run in memory or on Dask.

Every public function (:mod:`hotbin.api`, :func:`hotbin.heatmap`,
:func:`hotbin.hist`, :mod:`hotbin.images`) does the same five steps, each
owned here or below:

1. **executor**: :func:`executor` picks where it runs from the inputs:
   :class:`Local` (one backend of :mod:`hotbin.backend`, chosen by name or by
   the inputs' device) or :class:`hotbin.exec.dask.Dask` (dask arrays and
   dataframe columns, a lazy result). Both offer the same methods.
2. **arrays**: ``ex.array(a)`` adapts an input (:mod:`hotbin.core.arrays`) and
   ``ex.align(w, x)`` pairs weights with their values.
3. **rules**: ``ex.rules(build, arrays)`` calls ``build(arrays, minmax)``, the
   rule builders of :mod:`hotbin.core.binning` (in memory with the backend's
   ``minmax``; on Dask with stand-ins that hold the data's extent, found in one
   pass).
4. **op**: an :class:`hotbin.exec.ops.Op` declares what one block of the inputs
   contributes (a backend primitive, its rules, the accumulator of each output: a
   :class:`hotbin.core.reductions.Reduction` that merges and finishes the partials);
   :func:`weighted` picks the accumulator from the weights (fixed point, exact integer
   sums, complex weights).
5. **run**: ``ex.run(op, *arrays)`` returns the finished outputs (lazy on Dask: the
   op runs on every chunk, the partials merge in a tree); ``ex.restore(x, like)`` gives
   them the caller's array type.

What is no sum over blocks runs through the executor as well: a scan on the arrays
whole (``ex.whole``, :func:`hotbin.cumsum`) and per-block maps (``ex.blockwise``:
luma planes, equalized pixels, per-slice histograms). The methods are the
:class:`hotbin.exec.executor.Executor` protocol.
"""
from __future__ import annotations

import numpy as np

from .. import backend as _backends
from ..core import fixedpoint
from ..core.arrays import adapt, is_dask, restore, shared_copy
from .executor import Executor
from .ops import Op, block_extent, histogram
from ..core.ranges import percentile_range
from ..core.reductions import COUNT, checked, fixed, for_weights, seen_of

__all__ = ["Local", "executor", "portable", "weighted", "device_histogram"]


class Local(Executor):
    """In-memory executor on one loaded backend."""

    lazy = False

    def __init__(self, be):
        self.be = be
        self.name = be.NAME

    def array(self, a, name="a"):
        return adapt(self.be, a, name)

    def align(self, other, x, message):
        """``other`` checked to have ``x``'s shape (``message``: the ValueError's)."""
        if tuple(other.shape) != tuple(x.shape):
            raise ValueError(message)
        return other

    def check_bins(self, bins):
        pass

    def rules(self, build, arrays):
        return build(arrays, self.be.minmax)

    def stats(self, w) -> tuple[float, int]:
        """``(max |w|, number of weights)``."""
        return self.be.max_abs(w), int(w.size)

    def scale_guess(self, w) -> int | None:
        """The fixed-point scale of a sample of ``w`` where the backend samples (large device
        weights), else None (:func:`weighted`)."""
        sample = getattr(self.be.module, "sample_max_abs", None)
        m = None if sample is None else sample(w)
        return None if m is None else fixedpoint.scale_for(m, int(w.size))

    def run(self, op, *arrays):
        parts, outputs = op.block(self.be, *arrays), op.outputs
        if len(outputs) == 1:  # most plans: no loop (small calls)
            return (outputs[0][0].finalize(parts[0]),)
        return tuple([red.finalize(p) for (red, _), p in zip(outputs, parts)])

    def restore(self, x, like):
        return restore(x, like)

    def compute(self, *xs):
        return xs

    def each(self, fn, x):
        """``fn`` applied to every block of ``x``: here the whole array."""
        return fn(x)

    def whole(self, fn, *arrays, shape, dtype):
        """``fn(be, *arrays)`` on the arrays whole (``shape`` and ``dtype``: its result's)."""
        return fn(self.be, *arrays)

    def blockwise(self, fn, out_ind, *args, dtype, new_axes=None):
        """``fn(be, *blocks)`` per block of ``args`` (``array, index`` pairs, as
        :func:`dask.array.blockwise`): here one block, the whole arrays."""
        return fn(self.be, *args[::2])

    def starts(self, x):
        """The index of each block's first element: one block, at 0 (see :meth:`.dask.Dask.starts`)."""
        return np.zeros(1, np.int64)

    def fixed_sums(self, op, x, w):
        fused = getattr(self.be.module, "deterministic_sums", None)
        rule = op.rules[0]
        if fused is None or rule.exact is not None or rule.tail:  # what the counting wrapper fixes
            return None
        return fused(x, rule, w)

    def extents(self, arrays, finite=False):
        """``(lo, hi)`` of each array (of its finite values as float64 with ``finite``);
        ``lo > hi`` for no values."""
        return [tuple(block_extent(self.be, a, finite)[0]) for a in arrays]

    def percentiles(self, arrays, q):
        """Exact ``(lo, hi)`` percentiles of each array's finite values (:mod:`hotbin.core.ranges`)."""
        return [percentile_range(a, q) for a in arrays]


_LOCAL: dict = {}  #: loaded backend -> its Local executor


def executor(backend, *inputs, offload=None):
    """The executor of ``inputs``: Dask for dask collections, else the chosen backend in memory
    (``offload``: the operation's key when large NumPy inputs may go to the GPU, see
    :func:`hotbin.backend.name_for` and :func:`portable`)."""
    if is_dask(*inputs):
        from .dask import Dask

        return Dask(backend, *inputs)
    be = _backends.select(backend, *inputs, offload=offload)
    ex = _LOCAL.get(be)
    if ex is None:  # one per loaded backend: it holds nothing else (small calls)
        ex = _LOCAL[be] = Local(be)
    return ex


def portable(weights, deterministic, agg="count") -> bool:
    """Whether a result is bitwise the same on every backend, so that its host inputs may move
    to the GPU for speed (:func:`hotbin.backend.name_for`): counts (no ``weights``), counts
    weighted by integers or bools (exact in int64), min, max and any, and anything with
    ``deterministic`` (fixed point). A heatmap's sum, mean, std and var add their values as
    floats, in any order on a GPU."""
    if deterministic or agg in ("min", "max", "any"):
        return True
    if agg != "count":
        return False
    return weights is None or getattr(getattr(weights, "dtype", None), "kind", None) in ("b", "i", "u")


# --- weighted counts ------------------------------------------------------------------------

def weighted(ex, op, arrays, w, deterministic):
    """The finished outputs of ``op`` (:class:`hotbin.exec.ops.Op`) over ``arrays`` weighted by ``w``.

    The one runner of weighted counts for every front door: it picks ``op``'s accumulator
    from the weights. ``w`` None counts; integer weights sum exactly (int64, or an
    OverflowError naming the bin); float weights in float64, or in fixed point when
    ``deterministic`` (the scale from the whole data's ``max |w|`` and count: first, or for
    1-D sums where the backend samples, guessed and confirmed by the sums,
    :func:`_guessed`); complex weights are two real runs. Returns the tuple of finished
    outputs, sums first (then ``op``'s points and tally).
    """
    if w is None:
        return ex.run(op._replace(red=COUNT, weighted=False), *arrays)
    if w.dtype.kind == "c":
        re = weighted(ex, op, arrays, w.real, deterministic)
        im = weighted(ex, op._replace(points=False, tally=False), arrays, w.imag, deterministic)
        return (re[0] + 1j * im[0],) + re[1:]

    def run(red):
        return ex.run(op._replace(red=red, weighted=True), *arrays, w)

    scale = None
    if deterministic and w.dtype.kind == "f":
        single = len(op.shape) == 1 and not (op.points or op.tally)
        if single and op.kernel is histogram:  # the backend may guess and confirm on its device
            done = ex.fixed_sums(op, arrays[0], w)
            if done is not None:
                return (done,)
        guess = ex.scale_guess(w) if single else None
        if guess is not None:
            found, scale = _guessed(run(checked(guess)), guess, ex, w, op.shape[0])
            if found is not None:
                return found
        else:
            scale = fixedpoint.scale_for(*ex.stats(w))
    return run(for_weights(w, scale))


def _guessed(out, guess, ex, w, nbins):
    """``(result, None)`` of a fixed-point run at the scale ``guess`` (:func:`checked`) when
    the largest ``|w|`` makes it the scale, else ``(None, the scale)``.

    The guess is the scale of a sample of the weights (large device weights); the sums'
    own pass over the weights finds their largest ``|w|`` (a last column of the words), so
    confirming costs no second pass. The words are combined on the device first, so the
    read of that column waits for nothing more. A wrong guess (the sample missed the
    largest binade) runs the sums again at the right scale: results are always those of
    the scale from the whole data, bit for bit.
    """
    words, seen = seen_of(out[0], nbins)
    result = fixed(guess).finalize(words)
    # a path that did not report what it read (the cpu fallback) costs one more pass
    m = ex.stats(w)[0] if seen is None else seen()
    scale = fixedpoint.scale_for(m, int(w.size))
    return ((result,), None) if scale == guess else (None, scale)


def device_histogram(backend, a, bins, range, weights=None, deterministic=False):
    """``(hist, edges)`` of ``hotbin.histogram(a, bins, range, weights=weights,
    deterministic=deterministic)`` for the common calls on CuPy arrays, or None: the general
    path answers. The rule is built at once (:func:`hotbin.backend.device_rule`, which says
    which calls), and the op runs as every call's does, by the executor through
    :func:`weighted`: the same answer, bit for bit, without the general path's checks."""
    rule = _backends.device_rule(backend, a, bins, range, weights)
    if rule is None:
        return None
    ex = executor(backend, a, weights)
    (hist,) = weighted(ex, Op(histogram, (rule,), (rule.nbins,)), [a], weights, deterministic)
    return hist, shared_copy(rule.edges, a)
