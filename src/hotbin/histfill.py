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

from . import backend as _backends
from . import distributed, fixedpoint
from . import validate
from .binning import BinRule, check_data, histogram2d_rules, histogram_rule


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
    ``[lowest, e0)``, ``[e0, en]``.
    """
    c = rule.cmp
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


def _nan_to_inf(x):
    """``x`` with NaN as ``+inf`` (a copy), for NumPy and CuPy arrays and dask blocks."""
    x = x.copy()
    x[x != x] = np.inf
    return x


def _check_nan(rule: BinRule, name: str) -> None:
    if rule.cmp.dtype.kind == "f" and np.isposinf(rule.cmp[-1]):
        raise ValueError(f"{name}: NaN values belong in the overflow bin, which an axis whose "
                         "last edge is +inf does not have")


@dataclass(frozen=True)
class Source:
    """Data to fill from, in memory (a backend) or on dask (lazy, computed together)."""

    rules: tuple  #: the histogram's rules, one per axis
    count: object  #: count(rules, weights, scale) -> sums or words under any per-axis rules
    finish: object  #: finish(*results) -> NumPy arrays
    square: object  #: square(weights, shift) -> float64 (w * 2**-shift)**2, same kind of array
    stats: object  #: stats() -> (max |w|, number of weights)


def memory(be, arrays, rules, w, names) -> Source:
    """A :class:`Source` of in-memory arrays (already validated) on backend ``be``."""
    flat = []
    for x, r, name in zip(arrays, rules, names):
        if x.dtype.kind == "f" and x.size and np.isnan(be.minmax(x)[0]):
            _check_nan(r, name)
            x = _nan_to_inf(x)
        flat.append(x)
    n = int(arrays[0].size)

    def count(rs, ww, s):
        if len(rs) == 1:
            return be.histogram(flat[0], rs[0], ww, s)
        return be.histogram2d(flat[0], flat[1], rs[0], rs[1], ww, s)[0]

    return Source(tuple(rules), count, lambda *r: [np.asarray(_backends.to_host(v)) for v in r],
                  lambda ww, c: np.ldexp(be.asarray(ww).astype(np.float64), -c) ** 2,
                  lambda: (be.max_abs(w), n) if w is not None else (0.0, n))


def dask(arrays, rules, w, name, run, names) -> Source:
    """A :class:`Source` of dask arrays: ``run(weights, scale)`` is the plan of ``rules``."""
    import dask as _dask
    import dask.array as da

    flow = []
    for x, r, nm in zip(arrays, rules, names):
        if x.dtype.kind == "f":
            if np.isposinf(r.cmp[-1]) and bool(da.isnan(x).any().compute()):
                _check_nan(r, nm)
            x = x.map_blocks(_nan_to_inf, dtype=x.dtype)
        flow.append(x)

    def count(rs, ww, s):
        if all(r is q for r, q in zip(rs, rules)):
            return run(ww, s)
        if len(rs) == 1:
            return distributed._histogram_plan(flow[0], rs[0].edges, None, w, name, None)[-1](ww, s)
        return distributed._histogram2d_plan(flow[0], flow[1], [r.edges for r in rs], None, w, name,
                                             None)[-1](ww, s)

    return Source(tuple(rules), count, lambda *r: [np.asarray(v) for v in _dask.compute(*r)],
                  lambda ww, c: np.ldexp(ww.astype(np.float64), -c) ** 2,
                  lambda: distributed._weight_stats(w, name, None) if w is not None
                  else (0.0, int(arrays[0].size)))


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
    if distributed.is_dask(*data, weights):
        if len(data) == 1:
            rule, x, w, name, run = distributed._histogram_plan(data[0], bins, range, weights,
                                                                backend, None)
            return dask([x], [rule], w, name, run, names), w
        rx, ry, w, name, run = distributed._histogram2d_plan(*data, bins, range, weights, backend, None)
        arrays = [distributed._data(v, n) for v, n in zip(data, names)]
        return dask(arrays, [rx, ry], w, name, run, names), w
    be = _backends.select(backend, *data, weights)
    if len(data) == 1:
        x = check_data(be.asarray(data[0]), "a")
        w = validate.check_weights(be, weights, x.shape)
        found = [histogram_rule(x, bins, range, minmax=be.minmax, weights=w)]
        arrays = [x]
    else:
        *arrays, w = validate.points(be, *data, weights)
        found = histogram2d_rules(*arrays, bins, range, minmax=be.minmax)
    if rules is not None:  # the histogram's own rules keep their fast guess
        found = [r if r.cmp.dtype == f.cmp.dtype else f for r, f in zip(rules, found)]
    return memory(be, arrays, found, w, names), w


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
