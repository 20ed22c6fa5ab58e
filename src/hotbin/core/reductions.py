"""Reductions as data: what a partial holds, how partials combine, how they finish.

A :class:`Reduction` is the one description of an accumulator that every layer
reads: the backends pick their accumulator by :attr:`Reduction.acc` (a kernel
template, a numba branch, a WGSL pipeline), the executors (in memory and the
Dask tree, :mod:`hotbin.exec.local`) merge partials with :meth:`Reduction.combine`
and turn the last one into the result with :meth:`Reduction.finalize`.

=========  ======  ===========  ==========================  ==========================
name       acc     partial      combine                     finalize
=========  ======  ===========  ==========================  ==========================
count      count   int64        addition                    as is
sum        f64     float64      addition                    as is
sum        i64     int64        exact (Python integers):    as is
                                OverflowError, never a wrap
fixed sum  fixed   (2, ...)     :func:`fixedpoint.merge`    :func:`fixedpoint.combine`
                   int64 words
values     mean    (2, ...)     addition                    as is: [sum, n]
                   float64
values     min     (2, ...)     [minimum, addition]         as is: [min, n]
values     max     (2, ...)     [maximum, addition]         as is: [max, n]
order      order   (m,) or      sort of the concatenation   :func:`order.picks`:
                   (2, m) uint64                            (nq + 1, cells) float64
first      first   (3, ...)     the row of the least index  as is: [value, index, n]
                   float64
last       last    (3, ...)     the row of the largest      as is: [value, index, n]
                   float64      index
=========  ======  ===========  ==========================  ==========================

The three ``values`` accumulators serve the heatmap aggregations
(:mod:`hotbin.aggregate`): row 0 accumulates the weights (the values being
aggregated), row 1 counts them, both in float64 (counts exact below 2**53 per
cell); a NaN weight changes neither row. ``fixed`` also skips NaN weights.
With :attr:`Reduction.center` (a float64 array of the cells' shape, ``mean``
and ``fixed`` only) a weight ``w`` in cell ``c`` is accumulated as
``(w - center[c])**2``: the second pass of the two-pass variance.

``order`` (:mod:`hotbin.core.order`, :func:`quantiles`) is *ragged*: a partial is
every value of its block as ``(cell, key)`` pairs sorted (``m`` of them, any
number), so :meth:`Reduction.combine` takes a list; it needs no accumulator of
the backends beyond their ``cells2d``. ``first`` and ``last`` hold each cell's
value of the least (largest) global point index, the index as float64 (exact
below 2**53 points).

Adding a reduction is one spec here plus, for a new ``acc``, one accumulator
per backend.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from . import fixedpoint, order
from .arrays import to_host, xp

__all__ = ["Reduction", "COUNT", "SUM_F64", "SUM_I64", "MEAN", "MIN", "MAX", "fixed", "words", "checked",
           "with_seen", "seen_of", "float_of", "centered", "for_weights", "fits_int64", "FIRST", "LAST",
           "quantiles", "same"]

_I64 = 1 << 63


def _add(parts):
    return parts.sum(axis=0)


def _exact(parts):
    """Integer sums merged in Python integers on the host: int64, or an OverflowError."""
    return fits_int64(np.asarray(to_host(parts)).astype(object).sum(axis=0))


def _words(parts):
    return fixedpoint.merge(np.asarray(to_host(parts)))


def same(partial):
    """The finish of a partial that is its result."""
    return partial


def _extreme(pick):
    """Merge of [extreme, n] partials: ``pick`` ("min" or "max") of row 0, sum of row 1; -0.0
    orders below +0.0 (IEEE 754's minimum and maximum), whatever the partials' order."""
    def merge(parts):
        x = xp(parts)
        v = parts[:, 0]
        best = getattr(v, pick)(axis=0)
        if v.shape[0] > 1 and bool((best == 0).any()):  # which zero wins must not be chance
            signed = x.signbit(v) if pick == "min" else ~x.signbit(v)
            zero = (best == 0) & ((v == 0) & signed).any(axis=0)
            best = x.where(zero, -0.0 if pick == "min" else 0.0, best)
        return x.stack([best, parts[:, 1].sum(axis=0)])
    return merge


@dataclass(frozen=True)
class Reduction:
    """One accumulator: its id in the backends, its partial, its combine and finalize."""

    name: str  #: what the result means: "count", "sum", "fixed"
    acc: str  #: the accumulator the backends implement: "count", "f64", "i64", "fixed"
    dtype: np.dtype  #: dtype of a partial
    merge: Callable = _add  #: partials stacked on axis 0 -> one partial
    finish: Callable = same  #: the last partial -> the result
    lead: tuple = ()  #: leading axes of a partial before the bins ((2,) for fixed-point words)
    scale: int | None = None  #: fixed-point exponent (acc "fixed")
    out: np.dtype | None = None  #: dtype of the result when it is not the partial's
    identity: tuple = ()  #: initial value of each lead row (empty: zeros)
    #: cell centers: accumulate (w - center[cell])**2 (acc "mean" and "fixed")
    center: object = field(default=None, compare=False, repr=False)
    #: acc "fixed": ``scale`` is a guess (:func:`hotbin.exec.local.weighted`); a backend that reads
    #: every weight in the pass that sums them may return :func:`with_seen`'s partial
    check: bool = False
    #: partials differ in size (``lead + (m,)``): :meth:`combine` takes them as a list
    ragged: bool = False

    @property
    def result_dtype(self) -> np.dtype:
        return self.dtype if self.out is None else self.out

    def combine(self, parts):
        """One partial from partials stacked on axis 0 (NumPy or CuPy); a list when ragged."""
        return self.merge(parts)

    def finalize(self, partial):
        """The result from the last partial."""
        return self.finish(partial)

    def zeros(self, shape):
        """An empty partial of bins ``shape`` (the identity of :meth:`combine`)."""
        if self.ragged:
            return np.zeros(self.lead + (0,), self.dtype)
        z = np.zeros(self.lead + tuple(shape), self.dtype)
        for row, v in enumerate(self.identity):
            z[row] = v
        return z


COUNT = Reduction("count", "count", np.dtype(np.int64))
SUM_F64 = Reduction("sum", "f64", np.dtype(np.float64))
SUM_I64 = Reduction("sum", "i64", np.dtype(np.int64), merge=_exact)
MEAN = Reduction("values", "mean", np.dtype(np.float64), lead=(2,))
MIN = Reduction("values", "min", np.dtype(np.float64), merge=_extreme("min"),
                lead=(2,), identity=(np.inf, 0.0))
MAX = Reduction("values", "max", np.dtype(np.float64), merge=_extreme("max"),
                lead=(2,), identity=(-np.inf, 0.0))


def _pick(parts, first: bool):
    """Merge of [value, index, n] partials: the value and index of the least (``first``) or
    largest index, the sum of n."""
    x = xp(parts)
    idx = parts[:, 1]
    j = (idx.argmin if first else idx.argmax)(axis=0)[None]
    v = x.take_along_axis(parts[:, 0], j, axis=0)[0]
    i = x.take_along_axis(idx, j, axis=0)[0]
    return x.stack([v, i, parts[:, 2].sum(axis=0)])


FIRST = Reduction("first", "first", np.dtype(np.float64), merge=functools.partial(_pick, first=True), lead=(3,),
                  identity=(np.nan, np.inf, 0.0))
LAST = Reduction("last", "last", np.dtype(np.float64), merge=functools.partial(_pick, first=False), lead=(3,),
                 identity=(np.nan, -np.inf, 0.0))


def quantiles(q, weak: bool, dtype, ncell: int) -> Reduction:
    """The ragged reduction of each cell's quantiles ``q`` (a NumPy array, :func:`order.check_q`;
    None: the median) of values of ``dtype`` over ``ncell`` cells: partials of
    :func:`order.sort_pairs`, finished as ``(nq + 1, ncell)`` float64 by :func:`order.picks`."""
    cbits, kd = order.cell_bits(ncell), order.key_dtype(dtype)
    lead = () if order.packed(cbits, dtype) else (2,)
    return Reduction("order", "order", np.dtype(np.uint64), lead=lead, ragged=True,
                     merge=functools.partial(order.merge_pairs, cbits=cbits, kdtype=kd),
                     finish=functools.partial(order.picks, ncell=ncell, dtype=dtype, q=q, weak=weak),
                     out=np.dtype(np.float64))


def centered(red: Reduction, center) -> Reduction:
    """``red`` (MEAN or a fixed-point sum) accumulating ``(w - center[cell])**2``."""
    if red.acc not in ("mean", "fixed"):
        raise ValueError(f"centered: no centered form of the accumulator {red.acc!r}")
    return replace(red, center=center)


def words(scale: int) -> Reduction:
    """Fixed-point sums of float weights at ``2**-scale`` kept as their integer words
    (:class:`hotbin.Histogram` merges them later)."""
    return Reduction("fixed", "fixed", np.dtype(np.int64), merge=_words, lead=(2,), scale=int(scale))


def checked(scale: int) -> Reduction:
    """:func:`words` at a guessed ``scale``, confirmed after the sums (:attr:`Reduction.check`)."""
    return replace(words(scale), check=True)


def with_seen(words, seen):
    """A checked partial: the words ``(2, n)`` and a column ``n`` holding the bits of the largest
    ``|w|`` read (``seen``: a 1-element uint32 array of float32 bits or uint64 of float64 bits)
    in row 0 and their width in bytes in row 1."""
    x = xp(words)
    col = x.empty((2, 1), np.int64)
    col[0] = seen.astype(np.int64)
    col[1] = seen.dtype.itemsize
    return x.concatenate([words, col], axis=1)


def seen_of(part, nbins: int):
    """``(words, max |w| as a callable)`` of a :func:`with_seen` partial (the call reads the
    device), or ``(part, None)`` for words of ``nbins`` alone."""
    if part.shape[-1] == nbins:
        return part, None

    def seen():
        bits, width = (int(v) for v in np.asarray(to_host(part[:, nbins])))
        return float_of(bits, width)
    return part[:, :nbins], seen


def float_of(bits: int, itemsize: int) -> float:
    """The float32 (``itemsize`` 4) or float64 (8) whose bits are ``bits``, as a float."""
    return float(np.array(bits, f"u{itemsize}").view(f"f{itemsize}"))


def fixed(scale: int) -> Reduction:
    """Fixed-point sums of float weights at ``2**-scale`` (:mod:`hotbin.core.fixedpoint`), finished
    as float64 where the words are (device words on the device: the host's bits)."""
    return replace(words(scale), finish=lambda w: fixedpoint.combine(w, scale), out=np.dtype(np.float64))


def for_weights(w, scale: int | None = None) -> Reduction:
    """The reduction of weights ``w`` (None: counts); ``scale``: fixed point for float weights."""
    if w is None:
        return COUNT
    if w.dtype.kind in "biu":
        return SUM_I64
    return SUM_F64 if scale is None else fixed(scale)


def fits_int64(total: np.ndarray) -> np.ndarray:
    """Exact integer sums (an object array of Python ints) as int64, or an OverflowError
    naming the first bin whose sum does not fit."""
    total = np.asarray(total)
    bad = np.flatnonzero((total < -_I64) | (total >= _I64))
    if bad.size:
        b = np.unravel_index(bad[0], total.shape)
        b = b[0] if len(b) == 1 else tuple(int(i) for i in b)
        raise OverflowError(f"weights: the sum of bin {b} is {total.flat[bad[0]]}, which does not "
                            "fit in int64 (the sums of integer weights)")
    return total.astype(np.int64)
