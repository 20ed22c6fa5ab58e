"""Where bin edges fall: NumPy's edges for every form of ``bins`` and ``range``.

The builders here turn NumPy's arguments into :class:`hotbin.core.binrule.BinRule`
objects (the rule itself, its reference :meth:`~hotbin.core.binrule.BinRule.index`
and the exact-integer-range fix live there): edges are produced by
``numpy.histogram_bin_edges`` itself, called so that it does not scan the data
unless NumPy's own rule needs it (string bin rules), except the float64 and float32
edges of a range found in the data, which :func:`hotbin.core.edges.data_edges` computes by the steps of
NumPy's ``linspace`` (the same values, bit for bit); the comparison dtype is the
one NumPy compares in (see :mod:`hotbin.core.binrule`). Heatmap cells
(:func:`cell_rule`) and flat cell numbers (:func:`index_rule`) are rules too.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import operator

import numpy as np

from .arrays import to_host
from .binrule import MAX_SLACK, BinRule, first_true, int_at_least
from .edges import data_edges

__all__ = ["BinRule", "MAX_SLACK", "exact_counts", "histogram_rule", "plain_rule", "histogram2d_rules",
           "histogramdd_rules", "index_rule", "cell_rule", "check_data", "positive_int"]


def check_data(a: np.ndarray, name: str = "a") -> np.ndarray:
    """Reject dtypes no histogram can take; bool becomes uint8 as NumPy converts it (a copy,
    not a view: a bool array viewed from other bytes, a 0/255 image mask say, holds bytes
    other than 0 and 1 that NumPy reads as 1)."""
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{name}: cannot histogram data of dtype {a.dtype}; "
                        "expected bool, integer or real floating-point values")
    return a


def exact_counts(rule: BinRule, out, run):
    """``out`` (bins on the last axis) with the bins fixed that the kernels' float64
    range test gets wrong under ``rule``: ``run(sub)`` counts under the integer rule of
    :attr:`BinRule.exact_bins` (one more pass over the data, only for such rules).

    Linear in the data, so partial counts of pieces (threads, Dask blocks) fixed this
    way add up to the fixed count of the whole.
    """
    fix = rule.exact_bins
    if fix is None:
        return out
    pairs, sub = fix
    part = None if sub is None else run(sub)
    for b, k in pairs:
        out[..., b] = 0 if k is None else part[..., k]
    return out


def _positive_int_bins(bins) -> int | None:
    """``bins`` as a count (NumPy's checks and messages), or None for an edges array."""
    if np.ndim(bins) != 0:
        return None
    try:
        n = operator.index(bins)
    except TypeError:
        raise TypeError("`bins` must be an integer, a string, or an array") from None
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    return n


def histogram_rule(a, bins=10, range=None, minmax=None, weights=None) -> BinRule:
    """The :class:`BinRule` of ``numpy.histogram(a, bins, range)``.

    ``minmax`` computes ``(a.min(), a.max())`` as NumPy scalars of ``a``'s dtype;
    it is called only when the range must come from the data, so backends can
    supply a fast parallel reduction.
    """
    dt = a.dtype
    rule = plain_rule(dt, bins, range)
    if rule is not None:
        return rule
    empty = np.empty(0, dt)
    if isinstance(bins, str):
        # NumPy's estimators need the data itself (and the weights check).
        edges = np.histogram_bin_edges(to_host(a), bins, range, weights=to_host(weights))
        return _rule(edges, edges.dtype, True)
    n = bins if type(bins) is int and bins >= 1 else _positive_int_bins(bins)
    if n is None:
        edges = np.asarray(bins)
        if edges.ndim != 1:
            raise ValueError("`bins` must be 1d, when an array")
        if edges.dtype.kind not in "iufb":
            raise TypeError(f"bins: edges of dtype {edges.dtype} are not real numbers")
        if not _increasing(edges):
            raise ValueError("`bins` must increase monotonically, when an array")
        edges = np.histogram_bin_edges(empty, edges)
        return _rule(edges, np.result_type(dt, edges.dtype), False)
    if range is None and a.size:
        lo, hi = minmax(a)
        if not (math.isfinite(lo) and math.isfinite(hi)):  # NumPy scalars of a real dtype
            raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
        edges = data_edges(dt, n, lo, hi)
        return _rule(edges, edges.dtype, True)
    elif range is not None:
        lo, hi = _check_range(range, "range")
        key = (dt, n, _bound_key(lo), lo, _bound_key(hi), hi)
        try:
            hash(key)
        except TypeError:  # bounds of a type that cannot be cached: built each time
            return _uniform_rule.__wrapped__(*key)
        return _uniform_rule(*key)
    edges = np.histogram_bin_edges(empty, n, range)
    return _rule(edges, edges.dtype, True)


def plain_rule(dt, bins, range) -> BinRule | None:
    """The rule of the common call, ``bins`` an int over a pair of Python numbers in order
    (checked without NumPy: they pass NumPy's checks), for data of dtype ``dt``, built once
    (:func:`_uniform_rule`); None for any other ``bins`` and ``range``."""
    if type(bins) is int and bins >= 1 and type(range) is tuple and len(range) == 2:
        lo, hi = range
        if type(lo) in _PLAIN and type(hi) in _PLAIN and -_FLOAT_MAX <= lo <= hi <= _FLOAT_MAX:
            return _uniform_rule(dt, bins, _plain_key(lo), lo, _plain_key(hi), hi)
    return None


def _increasing(edges: np.ndarray) -> bool:
    """Whether explicit edges are valid: at least one, non-decreasing, none NaN.

    NumPy's own check (``edges[:-1] > edges[1:]`` anywhere) lets NaN through.
    """
    if edges.size < 1 or (edges.dtype.kind == "f" and np.isnan(edges).any()):
        return False
    return bool(np.all(edges[:-1] <= edges[1:]))


def _bound_key(v) -> tuple:
    """What besides its value tells a range bound apart in the rule cache: its type
    (``np.float32(1)`` and ``1.0`` give edges of different dtypes) and the sign of a
    zero (``-0.0`` can be an edge: ``(-1.0, -0.0)`` ends in ``-0.0``)."""
    return type(v), bool(isinstance(v, (float, np.floating)) and np.signbit(v))


#: range bounds checked without NumPy (finite, in order: NumPy's checks pass)
_PLAIN = (int, float)
_FLOAT_MAX = float(np.finfo(np.float64).max)


def _plain_key(v) -> tuple:
    """:func:`_bound_key` of a Python int or float."""
    return type(v), type(v) is float and math.copysign(1.0, v) < 0


@functools.lru_cache(maxsize=256)
def _uniform_rule(dt, n, klo, lo, khi, hi) -> BinRule:
    """Rules of ``n`` bins over a given range depend on no data: built once, shared.

    ``klo``/``khi`` are the bounds' :func:`_bound_key`. The shared edges are
    read-only; callers hand out copies.
    """
    # a read-only array owning its data: arrays.shared_copy finds its device copy by identity
    # (65536 bins: 512 KiB, above the size it finds by contents, were uploaded every call)
    edges = np.histogram_bin_edges(np.empty(0, dt), n, (lo, hi)).copy()
    edges.flags.writeable = False
    rule = _rule(edges, edges.dtype, True)
    exact = None if lo == hi else _exact_ends(dt, lo, hi, rule.cmp)
    # float32 edges of a range of Python numbers: linspace ran in float64 from its bounds
    span = (float(lo), float(hi)) if rule.cmp.dtype == np.float32 and lo != hi else None
    if exact is None and span is None:
        return rule
    return dataclasses.replace(rule, exact=exact, span=span)


def _exact_ends(dt, lo, hi, cmp) -> tuple | None:
    """:attr:`BinRule.exact` of data of dtype ``dt`` over the range ``(lo, hi)``.

    NumPy keeps ``v`` iff ``v >= lo`` and ``v <= hi`` as NumPy compares them
    (integer ends: exactly), found here by bisection with NumPy itself; the kernels
    keep ``cmp[0] <= float64(v) <= cmp[-1]``. Only int64/uint64 data beyond 2**53
    can tell them apart.
    """
    if dt not in (np.dtype(np.int64), np.dtype(np.uint64)) or cmp.dtype != np.float64:
        return None
    e0, en = float(cmp[0]), float(cmp[-1])
    if max(abs(e0), abs(en)) < 2.0 ** 53:
        return None
    info = np.iinfo(dt)
    dmin, dmax = int(info.min), int(info.max)
    first = first_true(dmin, dmax, lambda v: bool((np.array([v], dt) >= lo)[0]))
    last = first_true(dmin, dmax, lambda v: not (np.array([v], dt) <= hi)[0]) - 1
    if (first, last) == (int_at_least(e0, dt), int_at_least(np.nextafter(en, np.inf), dt) - 1):
        return None
    if first > last:
        first, last = dmax, dmin
    return dt.type(first), dt.type(last)


def positive_int(n, name: str) -> int:
    """``n`` as a positive int (bins, cells): else a TypeError/ValueError naming ``name``."""
    if isinstance(n, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a positive integer, got {n!r}")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{name}: expected a positive integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"{name}: expected a positive integer, got {n}")
    return n


def _scalar(v):
    """A 0-d array bound (NumPy, CuPy, torch) as the NumPy scalar of its dtype, which
    NumPy promotes and compares the same way; other bounds as they are."""
    if isinstance(v, np.ndarray) or hasattr(v, "__cuda_array_interface__") or hasattr(v, "detach"):
        a = to_host(v)
        if a.ndim == 0:
            return a[()]
    return v


def _check_range(r, name):
    try:
        lo, hi = r
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a (min, max) pair, got {r!r}") from None
    lo, hi = _scalar(lo), _scalar(hi)
    for v in (lo, hi):
        if isinstance(v, complex) or np.iscomplexobj(v):
            raise TypeError(f"{name}: bounds must be real numbers, got {r!r}")
    if lo > hi:
        raise ValueError("max must be larger than min in range parameter.")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"supplied range of [{lo}, {hi}] is not finite")
    return lo, hi


def _rule(edges: np.ndarray, cmp_dtype, uniform: bool) -> BinRule:
    cmp_dtype = np.dtype(cmp_dtype)
    if cmp_dtype == np.bool_:
        cmp_dtype = np.dtype(np.uint8)
    cmp = edges.astype(cmp_dtype, copy=False)
    return BinRule(edges=edges, cmp=cmp, uniform=uniform)  # checked when read (BinRule.uniform)


def histogramdd_rules(sample, bins=10, range=None, minmax=None) -> list[BinRule]:
    """The rules of ``numpy.histogramdd(sample, bins, range)``, one per axis.

    ``sample`` is the sequence of the ``D`` coordinate arrays (the columns of
    NumPy's ``(N, D)`` sample). NumPy stacks them into one array, so every axis
    sees their common dtype; its edges come from ``linspace`` without a dtype,
    and it bins with ``searchsorted(edges, v, 'right')`` with the last edge
    closed: the same rule as the 1-D one. ``bins`` is one count or edges array
    for every axis, or a sequence of ``D`` of them; ``range`` a sequence of
    ``D`` ``(min, max)`` pairs or None, each None taken from the data.
    """
    d = len(sample)
    dt = np.result_type(*(v.dtype for v in sample)) if d else np.dtype(np.float64)
    try:
        nb = len(bins)
    except TypeError:
        bins = [bins] * d
    else:
        if nb != d:
            raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError("range argument must have one entry per dimension")
    return [_dd_rule(i, v, dt, b, r, minmax) for i, (v, b, r) in enumerate(zip(sample, bins, ranges))]


def histogram2d_rules(x, y, bins=10, range=None, minmax=None):
    """The two rules of ``numpy.histogram2d(x, y, bins, range)``: :func:`histogramdd_rules` of ``(x, y)``.

    As NumPy, ``bins`` of any length but 1 and 2 is one edges array shared by both axes.
    """
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb not in (1, 2):
        bins = [np.asarray(bins)] * 2
    return histogramdd_rules([x, y], bins, range, minmax)


def _dd_rule(i, v, dt, b, r, minmax) -> BinRule:
    if np.ndim(b) == 0:
        try:
            n = operator.index(b)
        except TypeError:
            n = None
        try:  # NumPy checks the sign first: 0.5 bins is a ValueError, 2.5 a TypeError
            small = bool(b < 1)
        except TypeError:
            small = False
        if small:
            raise ValueError(f"`bins[{i}]` must be positive, when an integer")
        if n is None:
            raise TypeError(f"`bins[{i}]` must be an integer, when a scalar")
        if r is not None:
            lo, hi = _check_range(r, f"range[{i}]")
        elif v.size == 0:
            lo, hi = 0, 1
        else:
            lo, hi = (np.asarray(m).astype(dt)[()] for m in minmax(v))
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, n + 1)
        return _rule(edges, np.result_type(dt, edges.dtype), True)
    edges = np.asarray(b)
    if edges.ndim != 1:
        raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
    if edges.dtype.kind not in "iufb":
        raise TypeError(f"bins[{i}]: edges of dtype {edges.dtype} are not real numbers")
    if not _increasing(edges):
        raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
    return _rule(edges, np.result_type(dt, edges.dtype), False)


def index_rule(n: int) -> BinRule:
    """Bins ``0 .. n-1`` of integer codes: code ``k`` lands in bin ``k``, a negative code in none.

    Counts cell numbers computed elsewhere (the flat cells of a D-dimensional
    histogram) with any backend's 1-D histogram, weights and fixed point included.
    """
    edges = np.arange(n + 1, dtype=np.int64)
    return BinRule(edges=edges, cmp=edges, uniform=True)


def cell_rule(n: int, lo, hi, name: str, closed: bool = False) -> BinRule:
    """Heatmap cells along one axis: ``linspace(lo, hi, n + 1)`` in float64.

    With ``closed`` the last cell holds ``hi`` too (NumPy's rule, for ranges
    taken from the data). Otherwise it is open at ``hi``, so adjacent heatmaps
    tile without double counting: kernels implement that by using the rule with
    ``hi`` replaced by the largest float64 below it as the closed end
    (``cmp[-1]``), so both need the same kernel. A range only a few floats wide
    can have cells of zero width at ``hi``: they hold nothing under NumPy's edges
    (``edges[i] <= v < edges[i+1]``), and a closed end cannot say so, so those
    are the rule's :attr:`~hotbin.core.binrule.BinRule.tail` (counted without them, then padded).

    The rules of recent cells are kept (:data:`CELL_RULES`; their arrays read-only): a
    viewer or a loop asks for the same cells again, and a rule's linspace and checks are
    host time a GPU heatmap would otherwise wait for (results/probes-cpu.md, binning.py).
    """
    n = positive_int(n, name)
    lo, hi = float(lo), float(hi)
    # the signs tell -0.0 from 0.0, which compare equal as keys but give other edges
    rule = _cell_rule(n, lo, hi, closed, math.copysign(1.0, lo), math.copysign(1.0, hi))
    if rule is None:
        raise ValueError(f"{name}: [{lo}, {hi}] is too wide to divide into {n} cells")
    return rule


#: cell rules kept by :func:`cell_rule`
CELL_RULES = 64


@functools.lru_cache(maxsize=CELL_RULES)
def _cell_rule(n, lo, hi, closed, *_signs) -> BinRule | None:
    with np.errstate(over="ignore"):  # n * step may round past the largest float; linspace sets hi
        edges = np.linspace(lo, hi, n + 1)
    if not np.isfinite(edges).all():
        return None
    cmp = edges.copy()
    tail = 0
    if not closed:
        # closed at the float just below hi == open at hi; cells from the first edge equal
        # to hi on have zero width there and hold nothing (a range a few ulps wide)
        k = max(int(np.searchsorted(edges, hi, side="left")), 1)
        cmp[k:] = np.nextafter(hi, -np.inf)
        tail = n - k
    for a in (edges, cmp):
        a.flags.writeable = False  # shared by every caller of these cells
    return BinRule(edges=edges, cmp=cmp, uniform=True, tail=tail)
