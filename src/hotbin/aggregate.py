"""What a heatmap cell holds: the aggregations of :func:`hotbin.heatmap` as plans.

``agg`` names the reduction of the weights (the values) of the points in a
cell; ``by`` splits every cell by category. Each aggregation is one or two
passes of the backends' ``histogram2d`` primitive (:mod:`hotbin.backend`) under
the accumulators of :mod:`hotbin.core.reductions`, whose partials merge across
threads, blocks, GPUs and Dask chunks:

=====  ============================================  ===========================================
agg    partial per cell                              value of a cell with ``n > 0`` values
=====  ============================================  ===========================================
count  points (int64), or the weights' sums          ``counts`` as float64 (0 when empty)
any    points (int64)                                1.0 when ``n > 0``, else 0.0
sum    ``[sum w, n]`` (``mean`` acc)                 ``sum w``
mean   ``[sum w, n]``                                ``sum w / n``
min    ``[min w, n]`` (``min`` acc)                  ``min w`` (exact)
max    ``[max w, n]`` (``max`` acc)                  ``max w`` (exact)
var    pass 1: mean ``m``; pass 2: ``[sum (w - m)**2, n]``  ``sum (w - m)**2 / n`` (ddof=0)
std    as var                                        ``sqrt(var)``
=====  ============================================  ===========================================

The order statistics ``median``, ``quantile`` (with ``q``), ``first`` and ``last`` are
plans of their own (:mod:`hotbin.order_stats`): their partials are the cells'
values, not sums.

Cells without a value are NaN for every agg but count and any. A NaN weight
is no value: it changes no partial and is counted in ``skipped``, like a point
whose category code is outside ``[0, ncat)``.

Variance is the two-pass algorithm: the cell means of pass 1 centre pass 2, so
no sum of squares cancels. With ``deterministic=True`` every float sum is a
fixed-point sum (:mod:`hotbin.core.fixedpoint`): integer words that add exactly, so
the partials merge to the same bits in any order, chunking and backend. The
deterministic variance (:func:`_fixed_variance`) takes the scale of its squares
from the data (each cell's exact minimum and maximum about its mean), scales
huge weights by a power of 2 so no square overflows, and removes the rounding of
the centring mean exactly; its error bound is stated there. min and max are
exact in any order.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .core import fixedpoint
from .core.arrays import as_float64, to_host, xp
from .exec import ops
from .exec.ops import Op
from .exec.local import weighted
from .core.reductions import COUNT, MAX, MEAN, MIN, centered, fixed, words
from .order_stats import ORDER_AGGS, aggregate_order, check_q, merge_order

__all__ = ["AGGS", "Cells", "aggregate", "check_agg", "merge", "merge_heatmaps"]

AGGS = ("count", "any", "sum", "mean", "min", "max", "std", "var") + ORDER_AGGS
_VALUE_ACC = {"sum": MEAN, "mean": MEAN, "min": MIN, "max": MAX, "std": MEAN, "var": MEAN}


def check_agg(agg, weights, q=None) -> str:
    """``agg``, checked with its weights and ``q`` (only quantile takes one, and needs it)."""
    if not isinstance(agg, str) or agg not in AGGS:
        raise ValueError(f"agg: expected one of {', '.join(AGGS)}, got {agg!r}")
    check_q(agg, q)
    if (agg in _VALUE_ACC or agg in ORDER_AGGS) and weights is None:
        raise ValueError(f"agg={agg!r}: needs weights, the values to aggregate")
    return agg


@dataclass
class Cells:
    """The finished aggregation: what :class:`hotbin.Heatmap` stores."""

    counts: Any  #: int64 points per cell, or float64 weight sums (count with weights)
    values: Any  #: float64, NaN where a cell has no value (None: the counts, as float64)
    points: Any  #: int64 points per cell (with a value, for the value aggregations)
    kept: int  #: points in a cell
    n: int  #: points in all
    skipped: int  #: points in a cell without a value (NaN weight, no category)
    value_counts: Any = None  #: int64 values behind each entry of ``values`` (its shape)
    means: Any = None  #: the cell means of var / std (what merges them)
    order: Any = None  #: median / quantile in memory: ``(Reduction, partial)`` (what merges them)


def aggregate(ex, rules, arrays, w, by, shape, agg, deterministic, q=None) -> Cells:
    """Run ``agg`` over the cells ``shape`` (rows, columns) under ``rules`` (one per axis of
    ``arrays``: the rows' coordinates, then the columns'); ``w``: the weights (or None); ``by``:
    ``(codes, ncat)`` or None; ``q``: the quantiles (:mod:`hotbin.order_stats`)."""
    ncat = None if by is None else by[1]
    grid = tuple(shape) if by is None else (ncat + 1,) + tuple(shape)
    ins = list(arrays) + ([] if by is None else [by[0]])
    # one block: the backend's 2-D histogram of the points by category, and the tally
    op = Op(ops.histogram2d, tuple(rules), grid, by=ncat, tally=True)
    if agg in ORDER_AGGS:
        fields, partial = aggregate_order(ex, op, ins, w, shape, agg, q)
        return Cells(*fields, order=partial)

    def run(red, with_weights, weights=None):  # one pass: (partial, [kept, n]), computed
        if with_weights:
            return ex.compute(*ex.run(op._replace(red=red, weighted=True), *ins, w if weights is None else weights))
        return ex.compute(*ex.run(op._replace(red=red), *ins))

    if agg in ("count", "any"):
        if w is None or agg == "any":
            counts, tal = run(COUNT, False)
            sums = None
        else:  # the weighted count: sums under the one weighted runner, the points beside them
            sums, counts, tal = ex.compute(*weighted(ex, op._replace(points=True), ins, w, deterministic))
            sums = sums.astype(np.float64)
        pts, per_cat = _categories(counts, by)
        if agg == "count" and sums is None and by is None:
            vals = None  # the counts as float64: Heatmap.values makes them when first read
        else:
            vals = as_float64(per_cat if sums is None else _categories(sums, by)[1])
        if agg == "any":
            vals = (vals > 0).astype(np.float64)
        total = pts if sums is None else _categories(sums, by)[0]
        # without categories every point in a cell counts: none skipped (no sum over the
        # cells, a reduction and a wait on a GPU)
        return _cells(total, vals, pts, tal, per_cat, skipped=0 if by is None else None)

    acc = _VALUE_ACC[agg]
    means = None
    fixed_var = deterministic and agg in ("var", "std")
    if fixed_var:  # the variance itself, finished
        s, nv, tal, center = _fixed_variance(run, ex, w)
        means = _categories(xp(s).where(nv > 0, center, np.nan), by)[1]
    else:
        s, nv, tal = _values(run, ex, w, acc, deterministic, None)
    if agg in ("var", "std") and not fixed_var:
        center = xp(s).where(nv > 0, s / xp(s).maximum(nv, 1), 0.0)
        means = _categories(xp(s).where(nv > 0, center, np.nan), by)[1]
        s, nv, _ = _values(run, ex, w, acc, deterministic, center)
    pts, counts = _categories(nv.astype(np.int64), by)
    s, nv = _categories(s, by)[1], _categories(nv, by)[1]
    x = xp(s)
    with np.errstate(invalid="ignore", divide="ignore"):  # in place: the partial is ours
        if agg == "mean" or (agg in ("var", "std") and not fixed_var):
            x.divide(s, nv, out=s)  # 0 / 0 = NaN where a cell has no value
        else:
            x.copyto(s, np.nan, where=nv == 0)
        if agg == "std":
            x.sqrt(s, out=s)
    return _cells(pts, s, pts, tal, counts, means)


def _values(run, ex, w, acc, deterministic, center):
    """One pass of a values accumulator: ``(sums or extremes, n, [kept, n])``.

    With ``deterministic`` (the sums of mean, sum, var, std), the sums are taken
    again in fixed point, so that their bits do not depend on the order."""
    red = acc if center is None else centered(acc, center)
    part, tal = run(red, True)
    s, nv = part[0], part[1]
    if deterministic and acc is MEAN:
        fred = fixed(_fixed_scale(ex, w, center))
        s, _ = run(fred if center is None else centered(fred, center), True)
        s = xp(nv).asarray(s)  # merged on the host (Dask); the counts may be on a GPU
    return s, nv, tal


def _fixed_scale(ex, w, center):
    """The fixed-point exponent for the weights (``center``: for ``(w - center)**2``)."""
    m, n = _value_stats(ex, w)
    if center is not None:
        m = 4.0 * m * m  # |w - c| <= 2 max|w| when c is a mean of weights
    return fixedpoint.scale_for(m, n)


def _value_stats(ex, w):
    """``(max |w|, n)`` of the weights, NaN weights (no values) left out of the maximum."""
    m, n = ex.stats(w)
    if np.isnan(m):
        m, _ = ex.stats(ex.each(lambda a: xp(a).where(a != a, 0, a), w))
    return m, n


#: ``|w - c|`` of the second pass is scaled below ``2**SPREAD_BITS``: its square is finite
SPREAD_BITS = 500
#: a cell whose half range is below ``2**COARSE_BITS`` first-sum quanta takes its mean's offset
#: from a second centred pass (:func:`_offset`), not from the first sum
COARSE_BITS = 40


def _fixed_variance(run, ex, w):
    """Deterministic variance (ddof 0) per cell: ``(var, n, [kept, n], means)``.

    Passes that are each bitwise the same for any order, chunking and backend: the
    exact minimum and maximum of each cell's values; their fixed-point sum, whose mean
    ``c`` (one rounding) centres the next pass, the fixed-point sum ``S`` of
    ``(w - c)**2``. That pass is scaled from the data: ``w`` and ``c`` times ``2**-k``
    (``k > 0`` only where a cell spreads beyond ``2**500``, so squares stay finite),
    quantum ``2**-s2`` from the largest ``(max - c)**2``/``(c - min)**2`` of any cell and
    the number of values ``n`` (:func:`hotbin.core.fixedpoint.scale_for`). The mean's
    rounding is taken out exactly: ``var = S / m - e**2`` with ``e`` the exact mean less
    ``c`` (:func:`hotbin.core.fixedpoint.residual` of the first sum's words). A cell of one
    value is 0. A cell whose range is below ``2**40`` quanta ``2**-s1`` of the first sum
    (values far below the largest ``|w|`` of the call) is centred on its midrange instead
    and takes ``e`` from one more centred pass (:func:`_offset`).

    Error bound, for a cell of exact mean ``mu`` and variance ``v`` (ddof 0)::

        |var - v| <= 2**-51 * (v + e**2) + 2**-(s2+1) + 2 * |e| * 2**-s1 + 2**-(2*s1)

    with ``|e| <= ulp(mu) / 2 + 2**-(s1+1)``, ``2**-s1`` the first sum's quantum (from
    the largest ``|w|`` and ``n``) and ``2**-s2`` the squares' (about ``2**-(91 -
    log2 n)`` of the largest squared deviation of any cell, times ``2**(2k)``): each
    ``w - c`` and square rounds once, the sums add exactly. For a midrange-centred
    cell of range ``R`` the last two terms are replaced by about ``2**-51 * R**2``.
    So within a few ulp of ``v`` when the cells of a call spread alike; a cell whose
    spread is far below that of another cell of the call (by about ``2**40``) gets the
    absolute error of the quantum ``2**-s2`` (one scale per call keeps the result
    bitwise the same under any chunking).
    """
    (low, tal), (high, _) = run(MIN, True), run(MAX, True)
    x = xp(low)
    nv = low[1]
    has, cnt = nv > 0, x.maximum(nv, 1)
    wmin, wmax = x.where(has, low[0], 0.0), x.where(has, x.asarray(high[0]), 0.0)  # empty: 0, not inf
    top, n = _value_stats(ex, w)
    s1 = fixedpoint.scale_for(top, n)
    sums, _ = run(words(s1), True)
    sums = x.asarray(sums)
    kc = max(0, math.frexp(top)[1] + n.bit_length() - 1000)  # sums scaled by 2**-kc are finite
    center = x.where(has, x.ldexp(fixedpoint.combine(sums, s1 + kc) / cnt, kc), 0.0)
    flat = has & (wmin == wmax)  # one value, however often: variance 0, mean that value
    half_range = x.where(has, wmax * 0.5 - wmin * 0.5, 0.0)
    # cells whose spread is below the first sums' quantum (values far below the largest |w|)
    coarse = has & ~flat & (x.ldexp(half_range, -COARSE_BITS) < math.ldexp(1.0, -s1))
    center = x.where(flat, wmin, x.where(coarse, wmin * 0.5 + wmax * 0.5, center))
    # the largest |w - c| of any cell (3 half ranges about a coarse cell's second centre), halved
    # so that it cannot overflow
    half = x.where(has, x.maximum(wmax * 0.5 - center * 0.5, center * 0.5 - wmin * 0.5), 0.0)
    half = x.where(coarse, 3.0 * half_range, half)
    spread = float(half.max()) if half.size else 0.0
    k = max(0, math.frexp(spread)[1] + 1 - SPREAD_BITS)
    reach = math.ldexp(spread, 1 - k)
    s2 = fixedpoint.scale_for(reach * reach, n)
    scaled = w if k == 0 else ex.each(lambda a: xp(a).ldexp(a.astype(np.float64), -k), w)
    cs = center if k == 0 else x.ldexp(center, -k)
    sq, _ = run(centered(words(s2), cs), True, scaled)
    sq = x.asarray(sq)
    d = x.ldexp(fixedpoint.residual(sums, s1 + kc, nv, x.ldexp(center, -kc)) / cnt, kc - k)
    if bool(coarse.any()):
        d = x.where(coarse, _offset(run, sq, s2, cs, x.ldexp(2.0 * half_range, -k), coarse, scaled, cnt), d)
    with np.errstate(over="ignore"):  # a variance beyond the float64 range is inf
        var = x.ldexp(x.maximum(fixedpoint.combine(sq, s2) / cnt - d * d, 0.0), 2 * k)
        means = x.where(coarse, center + x.ldexp(d, k), center)
    return x.where(flat, 0.0, var), nv, tal, means


def _offset(run, sq, s2, cs, h, coarse, scaled, cnt):
    """``mean - c`` of the ``coarse`` cells from a second centred pass at ``b = c + h``:
    ``sum (w - c)**2 - sum (w - b)**2 = 2 h sum (w - c) - m h**2``, the difference of the
    two passes' words exact; accurate to about ``2**-52`` of the cell's range."""
    x = xp(sq)
    b = cs + x.where(coarse, h, 0.0)
    other, _ = run(centered(words(s2), b), True, scaled)
    diff = fixedpoint.combine(sq - x.asarray(other), s2)
    step = b - cs
    with np.errstate(invalid="ignore", divide="ignore"):  # not coarse: step 0, replaced
        return (diff / cnt + step * step) / (2.0 * step)


def _categories(grid, by):
    """``(per-cell totals over the categories, per category)`` of a partial with categories
    (the last one: no category), or ``(grid, grid)`` without."""
    if by is None:
        return grid, grid
    per = grid[:by[1]]
    return per.sum(axis=0), per


def _cells(counts, values, points, tally, value_counts, means=None, skipped=None) -> Cells:
    kept, n = (int(v) for v in np.asarray(to_host(tally)))
    if skipped is None:
        skipped = kept - int(points.sum())
    return Cells(counts, values, points, kept, n, skipped, value_counts, means)


def merge(agg, a, b):
    """Two finished aggregations of the same cells as one: ``(values, value_counts, means)``
    each. Counts and extremes merge exactly, sums and means in float64, var and std by the
    pairwise update of Chan, Golub and LeVeque (1979) from each side's means."""
    va, na, ma = a
    vb, nb, mb = b
    x = xp(va)
    n = na + nb
    if agg == "count":
        return va + vb, n, None
    if agg == "any":
        return ((va + vb) > 0).astype(np.float64), n, None
    if agg in ("min", "max"):  # NaN (empty) loses; -0.0 below +0.0 as in the kernels
        best = (x.fmin if agg == "min" else x.fmax)(va, vb)
        neg = agg == "min"
        signed = lambda v: (v == 0) & (x.signbit(v) == neg)  # noqa: E731
        return x.where((best == 0) & (signed(va) | signed(vb)), -0.0 if neg else 0.0, best), n, None
    wa, wb = na / x.maximum(n, 1), nb / x.maximum(n, 1)
    z = lambda v: x.where(x.isnan(v), 0.0, v)  # noqa: E731  an empty side adds nothing
    if agg == "sum":
        return x.where(n == 0, np.nan, z(va) + z(vb)), n, None
    if agg == "mean":
        return x.where(n == 0, np.nan, z(va) * wa + z(vb) * wb), n, None
    var_a, var_b = (z(v * v if agg == "std" else v) for v in (va, vb))
    d = z(mb) - z(ma)
    mean = z(ma) * wa + z(mb) * wb
    var = var_a * wa + var_b * wb + d * d * wa * wb
    var = x.where(n == 0, np.nan, var)
    return (x.sqrt(var) if agg == "std" else var), n, x.where(n == 0, np.nan, mean)


def merge_heatmaps(a, b):
    """``(categories, values, value_counts, means, order)`` of the sum of Heatmaps ``a`` and ``b``."""
    if a.agg in ORDER_AGGS:
        if a.categories != b.categories:
            raise ValueError(f"other: categories {a.categories} and {b.categories} differ (heatmaps of "
                             f"agg={a.agg!r} add with the same categories)")
        values, n, part = merge_order(a.agg, a, b)
        return a.categories, values, n, None, part
    labels = _common_labels(a.categories, b.categories)
    return (labels,) + merge(a.agg, *(_padded(h, labels) for h in (a, b))) + (None,)


def _common_labels(a, b):
    """The categories of a sum: the longer when one is a prefix of the other (categories
    found in a later chunk append labels), else a ValueError."""
    if a is None or a == b:
        return a
    short, long = sorted((a, b), key=len)
    if tuple(long[:len(short)]) != tuple(short):
        raise ValueError(f"other: categories {a} and {b} differ (one must extend the other)")
    return long


def _padded(hm, labels):
    """``(values, value_counts, means)`` of ``hm`` with empty categories up to ``labels``."""
    parts = (hm.values, hm.value_counts, hm.means)
    extra = 0 if labels is None else len(labels) - len(hm.categories)
    if not extra:
        return parts
    fill = (0.0 if hm.agg in ("count", "any") else np.nan, 0, np.nan)
    return tuple(None if a is None else _pad(a, extra, f) for a, f in zip(parts, fill))


def _pad(a, extra, fill):
    x = xp(a)
    return x.concatenate([a, x.full((extra,) + tuple(a.shape[1:]), fill, a.dtype)])
