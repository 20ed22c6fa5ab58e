"""UHI indexing of :class:`hotbin.Histogram`: the rules of boost-histogram, on hotbin's arrays.

``h[i]``, ``h[bh.loc(x)]``, ``h[bh.underflow]`` / ``h[bh.overflow]`` pick one bin
(flow bins included); ``h[a:b]`` keeps bins ``a .. b-1`` and adds the cut-away
bins to the flow bins; ``h[a:b:bh.rebin(k)]`` merges ``k`` neighbours (bins left
over at the top go to the overflow bin); ``h[a:b:sum]`` sums an axis away
(``h[::sum]`` with the flow bins, ``h[0:len:sum]`` without); a dict
``{axis: index}`` and ``...`` work as in boost-histogram, and ``uhi.tag`` and
``boost_histogram`` locators are both taken (anything with ``factor`` is a rebin,
any other callable is a locator called with the axis). A histogram comes back
where an axis is left, else a scalar: an int count, or a :class:`WeightedSum`
for a weighted histogram (boost-histogram returns a float for a summed count;
hotbin keeps counts exact as ints).

Differences from boost-histogram: hotbin's (NumPy's) last bin is closed, so
``loc(last_edge)`` is the last bin, where a fill of that value lands, not the
overflow bin; a rebin wider than its slice is refused (boost-histogram refuses it
on a Regular axis, and makes an axis of no bins on a Variable one); a rebin by
``groups=`` / ``edges=`` of a bounded slice adds the cut-away bins to the flow
bins, as a rebin by a factor does (boost-histogram drops them and the flow bins
there); NumPy-array (gather) and list (category) indices are not taken.
Deterministic histograms stay deterministic: their fixed-point words are summed
exactly, as :func:`hotbin.core.fixedpoint.merge` does.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from .core import fixedpoint
from .core.axis import Axis

__all__ = ["WeightedSum", "getitem", "setitem", "bin_index"]


class WeightedSum(NamedTuple):
    """One bin of a weighted histogram: the sum of weights and of squared weights
    (boost-histogram's ``accumulators.WeightedSum``)."""

    value: float
    variance: float


def bin_index(edges: np.ndarray, value) -> int:
    """The bin a fill of ``value`` lands in: ``-1`` below the edges, ``len(edges) - 1``
    above them or NaN, the last bin closed (NumPy's rule)."""
    n = edges.size - 1
    if value != value:  # NaN: the overflow bin, as hotbin fills it
        return n
    if value == edges[-1]:
        return n - 1
    return int(np.searchsorted(edges, value, side="right")) - 1


class _LocAxis:
    """An axis as UHI locators call it: ``len``, ``index(value)``, and the axis' own attributes."""

    def __init__(self, axis):
        self._axis = axis

    def __len__(self) -> int:
        return len(self._axis)

    def index(self, value) -> int:
        return bin_index(self._axis._edges, value)

    def __getattr__(self, name):
        return getattr(self._axis, name)


def _locate(axis, v) -> int:
    """A locator's (or a bin number's) index; ``-1`` and ``len(axis)`` are the flow bins."""
    k = v(_LocAxis(axis))
    try:
        return operator.index(k)
    except TypeError:
        raise IndexError(f"a locator gave {k!r}, not a bin number") from None


def _integer(v, n: int, i: int) -> int:
    if isinstance(v, (float, np.floating)):
        raise TypeError(f"index {v} on axis {i} must be an integer, not a float: use loc({v}) for a value")
    try:
        k = operator.index(v)
    except TypeError:
        raise IndexError(f"index on axis {i}: expected an integer, a slice or a UHI locator "
                         f"(loc, underflow, overflow), got {v!r}") from None
    if not -n <= k < n:
        raise IndexError(f"bin {k} out of range for axis {i} of {n} bins")
    return k % n


def _bound(axis, v, default: int) -> int:
    """A slice end in bin numbers: None is ``default``, a locator may reach the flow bins,
    an integer counts from the end when negative and is clipped to ``[0, len]`` (NumPy's rule)."""
    n = len(axis)
    if v is None:
        return default
    if callable(v):
        return _locate(axis, v)
    v = operator.index(v)
    return min(max(v + n if v < 0 else v, 0), n)


def _expand(h, index) -> list:
    """One index per axis: dicts fill the rest with ``:``; ``...`` expands."""
    nd = h.ndim
    if isinstance(index, dict):
        out = [slice(None)] * nd
        for k, v in index.items():
            if not -nd <= k < nd:
                raise IndexError(f"axis {k} out of range for a {nd}-D histogram")
            out[k] = v
        return out
    index = list(index) if isinstance(index, tuple) else [index]
    dots = [j for j, v in enumerate(index) if v is Ellipsis]
    if len(dots) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if dots:
        j = dots[0]
        index[j:j + 1] = [slice(None)] * (nd - len(index) + 1)
    if len(index) != nd:
        raise IndexError(f"a {nd}-D histogram takes {nd} indices, got {len(index)}")
    return index


def _plan(h, index) -> list:
    """Per axis, in flow-bin numbers (0 underflow, ``n + 1`` overflow): ``("pick", k)``,
    ``("sum", lo, hi)``, ``("groups", starts, edge numbers)`` or ``None`` (kept as is)."""
    plan = []
    for i, (axis, v) in enumerate(zip(h.axes, _expand(h, index))):
        n = len(axis)
        if v is sum or getattr(v, "factor", None) is not None:
            v = slice(None, None, v)
        if isinstance(v, slice):
            plan.append(_slice_plan(axis, v, i))
        elif callable(v):
            k = _locate(axis, v)
            if not -1 <= k <= n:
                raise IndexError(f"bin {k} out of range for axis {i} of {n} bins and its flow bins")
            plan.append(("pick", k + 1))
        else:
            plan.append(("pick", _integer(v, n, i) + 1))
    return plan


def _slice_plan(axis, v: slice, i: int):
    n = len(axis)
    if any(isinstance(x, slice) for x in (v.start, v.stop, v.step)):
        raise TypeError("a slice in a slice: did you mean a dict {axis: slice}?")
    start, stop = _bound(axis, v.start, -1), _bound(axis, v.stop, n + 1)
    step = v.step
    if step is sum:
        if v.start is None and v.stop is None:
            return ("sum", 0, n + 2)
        if start >= stop:
            raise IndexError(f"slice [{v.start}:{v.stop}] on axis {i} selects no bins")
        return ("sum", max(start, -1) + 1, min(stop, n + 1) + 1)
    if step is None:
        if v.start is None and v.stop is None:
            return None
        m = 1
    elif getattr(step, "factor", None) is not None:
        m = operator.index(step.factor)
        if m < 1:
            raise ValueError(f"rebin: the factor must be a positive integer, got {m}")
    elif callable(getattr(step, "group_mapping", None)):
        m = None
    else:
        raise IndexError(f"the step of a slice must be rebin(k) or sum, got {step!r}")
    b, e = max(start, 0), min(stop, n)
    if m is not None:
        e -= (e - b) % m if e > b else 0
    if e <= b:
        raise IndexError(f"slice [{v.start}:{v.stop}:{step!r}] on axis {i} leaves no bins "
                         "(a hotbin axis, as a boost-histogram one, has at least one)")
    if m is None:  # boost-histogram's rebin(groups=...), rebin(edges=...): over the slice's bins
        groups = [operator.index(g) for g in step.group_mapping(Axis(axis._edges[b:e + 1]))]
        if not groups or min(groups) < 1 or sum(groups) != e - b:
            raise ValueError(f"rebin: groups {groups} must be positive and cover the {e - b} bins")
        cuts = b + np.cumsum([0, *groups])
    else:
        cuts = np.arange(b, e + 1, m)
    return ("groups", np.r_[0, cuts[:-1] + 1, e + 1], cuts)


def _apply(a: np.ndarray, plan, lead: int = 0) -> np.ndarray:
    """``a`` (flow bins, after ``lead`` leading non-axis dimensions) reduced as ``plan`` says."""
    for i in reversed(range(len(plan))):  # the last axes first: removing one keeps the rest in place
        op, ax = plan[i], lead + i
        if op is None:
            continue
        if op[0] == "pick":
            a = np.take(a, op[1], axis=ax)
        elif op[0] == "sum":
            a = np.take(a, np.arange(op[1], op[2]), axis=ax).sum(axis=ax)
        else:
            a = np.add.reduceat(a, op[1], axis=ax)
    return a.copy() if all(op is None for op in plan) else a


def _words(words, plan):
    """Fixed-point words reduced as ``plan`` says: folded (``0 <= lo < 2**32``), summed as
    integers, folded again; the one canonical form of the exact sums, as
    :func:`hotbin.core.fixedpoint.merge` gives."""
    return fixedpoint.fold(_apply(fixedpoint.fold(words), plan, 1))


def getitem(h, index):
    """``h[index]``: a :class:`hotbin.Histogram` or, with every axis picked or summed, a scalar."""
    Histogram = type(h)
    plan = _plan(h, index)
    kept = [i for i, op in enumerate(plan) if op is None or op[0] == "groups"]
    edges = []
    for i in kept:
        e = h.axes[i]._edges
        edges.append(e if plan[i] is None else e[plan[i][2]])
    labels = [h.axes[i].label for i in kept]
    if h._fixed is not None:
        (w, w2), layout, stats = h._fixed
        w, w2 = _words(w, plan), _words(w2, plan)
        if not kept:
            return WeightedSum(float(fixedpoint.combine(w, layout.scale)),
                               float(fixedpoint.combine(w2, layout.scale2)))
        out = Histogram._from_words(edges, w, w2, layout, stats, h.label, labels)
    else:
        v = _apply(h._values, plan)
        var = None if h._variances is None else _apply(h._variances, plan)
        if not kept:
            if var is not None and not h._unknown_variances:
                return WeightedSum(v.item(), float(var))
            return v.item()
        out = Histogram(v, *edges, variances=var, label=h.label, axis_labels=labels)
        out._unknown_variances = h._unknown_variances
    out._rules = h._rules if all(op is None for op in plan) else None
    return out


def _value_pairs(h, value):
    """``(values, variances or None)`` to set: a weighted histogram with variances takes
    ``(value, variance)`` pairs (a :class:`WeightedSum`, or an array whose last axis has 2).
    A histogram gives its bins with their flow bins (so it sets a slice whose ends are open)."""
    if isinstance(value, type(h)):
        with_variances = h._variances is not None and not h._unknown_variances
        value = (np.stack([value.values(flow=True), value.variances(flow=True)], axis=-1)
                 if with_variances else value.values(flow=True))
    if h._variances is None or h._unknown_variances:
        return _whole(h, np.asarray(value)), None
    if hasattr(value, "value") and hasattr(value, "variance"):
        return _whole(h, np.asarray(value.value)), np.asarray(value.variance, np.float64)
    a = np.asarray(value)
    if a.ndim == 0 or a.shape[-1] != 2:
        raise ValueError("value: a weighted histogram takes (value, variance) pairs: a WeightedSum, "
                         f"or an array whose last axis has length 2; got shape {a.shape}")
    return _whole(h, a[..., 0]), a[..., 1].astype(np.float64)


def _whole(h, v: np.ndarray) -> np.ndarray:
    """``v`` for a histogram of integer sums (counts, integer weights): whole numbers only."""
    if h._values.dtype.kind in "iu" and v.dtype.kind not in "iub":
        if not np.all(np.isfinite(v)) or np.any(v != np.round(v)):
            raise ValueError(f"value: this histogram holds integer sums, got {v!r}")
        v = v.astype(np.int64)
    return v


def setitem(h, index, value) -> None:
    """``h[index] = value`` in place, with boost-histogram's rule for flow bins: an array one
    or two longer than a slice whose ends are left open also sets the flow bins it reaches."""
    if h._fixed is not None:
        raise TypeError("cannot set bins of a deterministic histogram: its fixed-point words "
                        "are the data's own; build Histogram(values, edges, variances=...) instead")
    v, var = _value_pairs(h, value)
    slices = [i for i, x in enumerate(_expand(h, index)) if isinstance(x, slice)]
    if v.ndim and v.ndim != len(slices):
        raise ValueError(f"value: setting a {h.ndim}-D histogram's {len(slices)} sliced axes "
                         f"with a {v.ndim}-D array; the dimensions must match")
    where = []
    for i, (axis, x) in enumerate(zip(h.axes, _expand(h, index))):
        n = len(axis)
        if x is sum or getattr(x, "factor", None) is not None:
            x = slice(None, None, x)
        if not isinstance(x, slice):
            k = _locate(axis, x) if callable(x) else _integer(x, n, i)
            if not -1 <= k <= n:
                raise IndexError(f"bin {k} out of range for axis {i} of {n} bins and its flow bins")
            where.append(k + 1)
            continue
        if x.step is not None:
            raise IndexError(f"cannot set a slice with a step ({x.step!r}) on axis {i}")
        start, stop = _bound(axis, x.start, -1), _bound(axis, x.stop, n + 1)
        start, stop = max(start, -1), min(stop, n + 1)
        under, over = start < 0, stop > n
        want = min(stop, n) - max(start, 0)
        got = v.shape[slices.index(i)] if v.ndim else None
        lo, hi = start + 1, stop + 1
        if got is None or got in (want, 1):
            lo, hi = lo + under, hi - over
        elif got != want + under + over:
            raise ValueError(f"value: {got} entries for {want} bins on axis {i}"
                             + (f" (or {want + under + over} with flow)" if under or over else ""))
        where.append(slice(lo, hi))
    where = tuple(where)
    h._values[where] = v
    if var is not None:
        h._variances[where] = var
