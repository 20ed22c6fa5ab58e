"""Filling :class:`hotbin.Histogram` objects: every bin, flow bins, fixed point.

A histogram object loses no data: each axis has an underflow bin (values below
the first edge) and an overflow bin (values above the last edge, and NaN, where
boost-histogram puts it), compared in the rule's dtype as every other bin.

Flow bins are counted by the backends' own primitives under a *flow rule*: the
three bins ``[lowest, e0)``, ``[e0, after(en))``, ``[after(en), highest]`` of
the axis' comparison dtype (``-inf``/``+inf`` for floats, the integer limits
otherwise; ``after(en)`` the next value above the last edge). A 1-D histogram
is one pass under its rule plus one under the flow rule; a 2-D one adds the
three mixed combinations (each cell is counted by exactly one pass), so flow
costs a bounded number of passes and the fast multiply guess of the rule
itself is kept. NaN values are counted as ``+inf`` (a copy of the data is made
only when it has NaN; on dask, per chunk).

Deterministic histograms (:class:`Fixed`) keep fixed-point words of the
weights and of their squares. Squares are quantized as ``(w * 2**-shift)**2``
with ``2**shift`` above ``max|w|``: they never overflow, and their words mean
``words * 2**-scale2`` with ``scale2`` the exponent of ``w**2`` itself, so a
sum of squares beyond the float64 range (weights from about ``1e154``) reads
``inf`` while the sums of weights stay exact.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .core import fixedpoint, validate
from .core.arrays import to_host
from .core.binning import BinRule, histogram2d_rules, histogram_rule
from .exec import ops
from .exec.local import executor
from .core.reductions import for_weights, words


@dataclass(frozen=True)
class Fixed:
    """Fixed-point layout of a deterministic histogram.

    Sums of weights are words at ``2**-scale``; sums of squares are words at
    ``2**-scale2`` of the squares ``(w * 2**-shift)**2``, quantized at
    ``scale2 + 2 * shift``.
    """

    scale: int
    scale2: int
    shift: int

    @classmethod
    def of(cls, max_abs: float, n: int) -> Fixed:
        """The layout for ``n`` weights of ``max|w| = max_abs`` (which must be finite)."""
        s = fixedpoint.scale_for(max_abs, n)  # NaN or inf: the error names the weights
        c = fixedpoint.square_shift(max_abs)
        s2 = fixedpoint.scale_for(math.ldexp(max_abs, -c) ** 2, n)
        return cls(s, s2 - 2 * c, c)

    def fits(self, max_abs: float, n: int) -> bool:
        """Whether ``n`` weights of ``max|w| = max_abs`` sum in this layout without overflow."""
        if not fixedpoint.fits(self.scale, max_abs, n):
            return False
        return fixedpoint.fits(self.scale2 + 2 * self.shift, math.ldexp(max_abs, -self.shift) ** 2, n)


def flow_rule(rule: BinRule) -> tuple[BinRule, bool]:
    """The flow rule of ``rule`` and whether it has an overflow bin (bin 2).

    Without one (the last edge is the dtype's top: ``+inf`` or the integer
    maximum) nothing but NaN lies above the axis; the rule is then the two bins
    ``[lowest, e0)``, ``[e0, en]``. For a rule with exact integer ends
    (:attr:`BinRule.exact`) the ends are those integers, compared in the data's dtype.
    """
    c = rule.cmp
    if rule.exact is not None and rule.exact[0] <= rule.exact[1]:
        # integer range ends NumPy compares exactly: so do the flow bins, in the data's dtype
        c = np.array(rule.exact)
    dt = c.dtype
    if dt.kind == "f":
        lowest, highest = dt.type(-np.inf), dt.type(np.inf)
    else:
        info = np.iinfo(dt)
        lowest, highest = dt.type(info.min), dt.type(info.max)
    first, last = c[0], c[-1]
    over = bool(last < highest)
    if over:
        after = np.nextafter(last, highest) if dt.kind == "f" else dt.type(last + 1)
        e = np.array([lowest, first, after, highest], dt)
    else:
        e = np.array([lowest, first, last], dt)
    return BinRule(edges=e, cmp=e, uniform=False), over


def _inf_for_nan(x):
    """``x`` (a block) with NaN as ``+inf``: a copy."""
    x = x.copy()
    x[x != x] = np.inf
    return x


def _flow_arrays(ex, arrays, rules, names):
    """The coordinate arrays with NaN as ``+inf`` (the overflow bin), found in one pass over the
    float arrays; only those holding a NaN are copied, once for every count that follows."""
    floats = [i for i, x in enumerate(arrays) if x.dtype.kind == "f"]
    out = list(arrays)
    for i, (lo, _) in zip(floats, ex.extents([arrays[i] for i in floats])):
        if not np.isnan(lo):
            continue
        if np.isposinf(rules[i].cmp[-1]):
            raise ValueError(f"{names[i]}: NaN values belong in the overflow bin, which an axis whose "
                             "last edge is +inf does not have")
        out[i] = ex.each(_inf_for_nan, arrays[i])
    return tuple(out)


@dataclass(frozen=True)
class Source:
    """Data to fill from, in memory or on Dask, under the histogram's rules."""

    ex: object  #: the executor (:mod:`hotbin.exec.local`)
    arrays: tuple  #: the coordinate arrays, NaN as +inf
    rules: tuple  #: the histogram's rules, one per axis
    names: tuple  #: the arguments' names, for messages
    weights: object = None  #: the weights, checked

    def count(self, rs, ww, s):
        """Sums (words with a scale ``s``) of the weights ``ww`` under the per-axis rules
        ``rs`` (lazy on Dask)."""
        red = for_weights(ww, s) if s is None else words(s)
        kernel = ops.histogram if len(self.arrays) == 1 else ops.histogram2d
        op = ops.Op(kernel, tuple(rs), tuple(r.nbins for r in rs), red, weighted=ww is not None)
        return self.ex.run(op, *self.arrays, *([] if ww is None else [ww]))[0]

    def finish(self, *results):
        """NumPy arrays of the results (computed together on Dask)."""
        return [np.asarray(to_host(v)) for v in self.ex.compute(*results)]

    def square(self, ww, c):
        """float64 ``(w * 2**-c)**2``, the same kind of array as ``ww``."""
        return np.ldexp(ww.astype(np.float64), -c) ** 2

    def stats(self):
        """``(max |w|, number of weights)`` of the weights."""
        w = self.weights
        return self.ex.stats(w) if w is not None else (0.0, int(self.arrays[0].size))


def layout(stats, w, deterministic, bounds) -> Fixed | None:
    """The fixed-point layout of deterministic float weights, else None.

    ``stats()`` gives ``(max |w|, number of weights)`` of the data.
    """
    if bounds is not None and not deterministic:
        raise ValueError("bounds: only meaningful with deterministic=True")
    if not deterministic or w is None or w.dtype.kind != "f":
        return None
    m, n = stats()
    fixedpoint.scale_for(m, n)  # NaN or inf weights: the error names them
    if bounds is None:
        return Fixed.of(m, n)
    try:
        bound, count = float(bounds[0]), int(bounds[1])
    except (TypeError, ValueError, IndexError):
        raise ValueError(f"bounds: expected (max_abs_weight, total_count), got {bounds!r}") from None
    if m > bound or count < n:
        raise ValueError(f"bounds: {bounds!r} does not bound these weights (max |w| = {m}, count = {n})")
    return Fixed.of(bound, count)


def source(data, weights, bins, range, backend, rules=None):
    """``(Source, weights)`` of 1 or 2 coordinate arrays; ``rules``: reuse where they compare alike."""
    names = ("a",) if len(data) == 1 else ("x", "y")
    ex = executor(backend, *data, weights)
    ex.check_bins(bins)
    if len(data) == 1:
        x = validate.check_data(ex.array(data[0], "a"), "a")
        w = validate.check_weights(ex, weights, x)
        arrays = [x]
        build = lambda s, mm: [histogram_rule(s[0], bins, range, minmax=mm,  # noqa: E731
                                              weights=None if ex.lazy else w)]
    else:
        *arrays, w = validate.points(ex, *data, weights)
        build = lambda s, mm: histogram2d_rules(s[0], s[1], bins, range, minmax=mm)  # noqa: E731
    found = ex.rules(build, arrays)
    if rules is not None:  # the histogram's own rules keep their fast guess
        found = [r if r.cmp.dtype == f.cmp.dtype else f for r, f in zip(rules, found)]
    return Source(ex, _flow_arrays(ex, arrays, found, names), tuple(found), names, w), w


def fill(src: Source, runs):
    """Sums (or words) over every bin and flow bin, one array ``(..., n1+2[, n2+2])`` per run.

    ``runs`` is a list of ``(weights, scale)`` (``(None, None)``: counts). Each run
    is one pass per combination of rule and flow rule over the axes (each cell
    counted by exactly one), all computed together.
    """
    flows = [flow_rule(r) for r in src.rules]
    combos = list(itertools.product(*[(r, f) for r, (f, _) in zip(src.rules, flows)]))
    parts = src.finish(*[src.count(rs, ww, s) for ww, s in runs for rs in combos])
    return [_assemble(src.rules, flows, combos, parts[i:i + len(combos)])
            for i in range(0, len(parts), len(combos))]


def _assemble(rules, flows, combos, parts):
    lead = parts[0].shape[:parts[0].ndim - len(rules)]  # (2,) for words
    full = np.zeros(lead + tuple(r.nbins + 2 for r in rules), parts[0].dtype)
    lead_ix = (slice(None),) * len(lead)
    for rs, part in zip(combos, parts):
        dst, take = [], []
        for r, got, (_, over) in zip(rules, rs, flows):
            if got is r:
                dst.append(np.arange(1, r.nbins + 1))
                take.append(np.arange(r.nbins))
            else:
                dst.append(np.array([0, r.nbins + 1] if over else [0]))
                take.append(np.array([0, 2] if over else [0]))
        full[lead_ix + np.ix_(*dst)] = part[lead_ix + np.ix_(*take)]
    return full
