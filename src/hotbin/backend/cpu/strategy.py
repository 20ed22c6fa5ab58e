"""What the cpu kernels compile from a bin rule: their strategies, once per rule.

:class:`hotbin.core.binrule.BinRule` holds the semantics (edges, the comparison dtype,
exactness, the multiply guess's tolerance); :class:`CpuRule` derives from it what the
numba kernels of :mod:`.rule` and :mod:`.search` choose among: whether the edges can be
recomputed (:attr:`CpuRule.linear`) and how closely a float32 guess follows them
(:attr:`CpuRule.slack32`), an exact multiply (:attr:`CpuRule.exact_scale`), float32 edges
for float32 values (:attr:`CpuRule.float32`), and the search tables of other edges
(:attr:`CpuRule.key_buckets`, :attr:`CpuRule.key_splits`). :func:`cpu_rule` builds it once
per rule (:meth:`BinRule.compiled`); the cuda backend compiles its own
(:mod:`hotbin.core.kernel_rule`, :mod:`hotbin.backend.cuda.rule`).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ...core.binrule import BinRule, sort_keys

__all__ = ["CpuRule", "cpu_rule", "in_kernels"]


def in_kernels(rule: BinRule) -> bool:
    """Whether the kernels bin by ``rule`` themselves: int32 bin numbers, and no integer ends that
    need :func:`hotbin.core.binning.exact_counts` (those go by :meth:`BinRule.index`)."""
    return rule.exact is None and rule.nbins < 2**31 - 1


def cpu_rule(rule: BinRule) -> CpuRule:
    """The :class:`CpuRule` of ``rule``, built on first use and kept with the rule."""
    return rule.compiled("cpu", CpuRule)


class CpuRule:
    """The cpu kernels' view of one :class:`BinRule` (each property computed once)."""

    def __init__(self, rule: BinRule):
        self.rule = rule

    @functools.cached_property
    def slack32(self) -> float:
        """:attr:`BinRule.slack` of the guess in float32 arithmetic from the :attr:`linear` start,
        ``float32(float32(v) - float32(lo)) * float32(scale)`` rounded at each step, which
        is monotone in ``v`` as the float64 guess is: ``inf`` for rules that are not
        linear in float32 edges. Computed at the edges as a kernel computes it."""
        lin = self.linear
        if lin is None or self.rule.kernel_cmp.dtype != np.float32:
            return np.inf
        with np.errstate(all="ignore"):
            t = (self.rule.kernel_cmp - np.float32(lin[0])) * np.float32(self.rule.scale)
            slack = float(np.max(np.abs(t.astype(np.float64) - np.arange(t.size))))
        return slack if np.isfinite(slack) else np.inf

    @functools.cached_property
    def linear(self) -> tuple[float, float, bool] | None:
        """``(lo, step, f32)`` when every interior edge is exactly ``i * step + lo`` computed
        in float64 and cast to ``cmp.dtype`` (``f32`` False), or computed in float32 (``f32``
        True: ``float32(float32(i) * step) + lo`` rounded at each step); else None.
        float32 and float64 rules only. ``lo`` is the first edge, or for float32 edges
        from a float64 :attr:`BinRule.span` that span's start, which kernels then guess from too.

        NumPy's ``linspace`` computes its edges one of those ways (float32 arithmetic
        when the ends are float32 scalars, as ranges found from float32 data are; float64
        from a range of Python numbers), so for those rules a kernel can recompute any edge
        instead of loading it (the last edge is the closed end, compared separately).
        Checked bit for bit here, once per rule, and only offered when the guess from
        ``lo`` is within half a bin of every edge (its slack < 1/2), so the edge nearest the
        guess and one compare find the bin (:mod:`hotbin.backend.cpu.rule`).
        """
        r = self.rule
        dt = r.cmp.dtype
        if not r.uniform or dt not in (np.float32, np.float64):
            return None
        n = r.nbins
        first, last = r.edges[0], r.edges[-1]
        i = np.arange(n, dtype=np.float64)
        with np.errstate(all="ignore"):
            step = (float(last) - float(first)) / n
            if dt == np.float32 and r.slack < 0.5:  # float32 arithmetic first: kernels need no float64
                for s32 in ((np.float32(last) - np.float32(first)) / np.float32(n), np.float32(step)):
                    if np.array_equal(i.astype(np.float32) * s32 + np.float32(r.lo), r.cmp[:n]):
                        return r.lo, float(s32), True
            starts = [(r.lo, step)]
            if dt == np.float32 and r.span is not None:
                lo, hi = r.span
                starts.append((lo, (hi - lo) / n))
            for lo, step in starts:
                if r.slack_from(lo) < 0.5 and np.array_equal((i * step + lo).astype(dt), r.cmp[:n]):
                    return lo, step, False
        return None

    @functools.cached_property
    def exact_scale(self) -> float:
        """The scale whose multiply guess is exact for every value, 0.0 for none: ``lo`` 0, a
        power of 2 ``s`` that float32 holds, every edge but the last ``i / s``, and the last
        (the closed end) above the one before it and at most ``nbins / s``. Then ``v * s`` is
        computed without rounding and strictly increasing, and maps edge ``i`` to ``i``, so
        ``floor(v * s)`` is the bin (a value on ``nbins / s`` clamped to the last bin), with
        no edge compared. ``s`` is ``nbins`` over the span of the edges, not
        :attr:`BinRule.scale`: heatmap cells open at ``hi`` close at the float just below it
        (:func:`hotbin.core.binning.cell_rule`), and those are exact too. Checked once per rule."""
        n, lo = self.rule.nbins, self.rule.lo
        if lo != 0.0 or not float(self.rule.edges[-1]) > 0:
            return 0.0
        s = n / float(self.rule.edges[-1])
        if math.frexp(s)[0] != 0.5 or not 2.0**-126 <= s <= 2.0**127:
            return 0.0
        e = self.rule.kernel_cmp.astype(np.float64)
        ok = np.array_equal(e[:n], np.arange(n) / s) and e[n - 1] < e[n] <= n / s
        return s if ok else 0.0

    @functools.cached_property
    def float32(self) -> BinRule | None:
        """This float64 rule as float32 values meet it, with float32 edges; None for other rules.

        For a float32 ``v``, ``float64(v) >= e`` exactly when ``v >= ceil32(e)`` (the least
        float32 not below ``e``), and ``float64(v) <= e`` when ``v <= floor32(e)``. So the
        edges rounded up, the closed last one rounded down, give float32 values the same
        bins, and a kernel compares them in float32 (8 lanes instead of 4). None when an
        edge is beyond float32's range or for integer ends (:attr:`BinRule.exact`).
        """
        if self.rule.cmp.dtype != np.float64 or not self.rule.uniform or self.rule.exact is not None:
            return None
        with np.errstate(over="ignore"):
            c = self.rule.cmp.astype(np.float32)
            ends = self.rule.edges.astype(np.float32)
        if not (np.isfinite(c).all() and np.isfinite(ends).all()):
            return None
        inner = c[:-1]
        up = inner < self.rule.cmp[:-1]  # compared in float64: exact
        inner[up] = np.nextafter(inner[up], np.float32(np.inf))
        if c[-1] > self.rule.cmp[-1]:
            c[-1] = np.nextafter(c[-1], np.float32(-np.inf))
        ends[:-1] = inner  # the last of ``edges``: the open end, rounded, for :attr:`linear`
        return BinRule(edges=ends, cmp=c, uniform=True)

    @functools.cached_property
    def key_buckets(self) -> np.ndarray:
        """Where a search of float edges starts, by the value's sortable key: the int64 array
        ``[k0, shift, length, lo[0], ..., lo[K]]``. A value's key is the bits of
        ``float64(v) + 0.0`` (-0.0 made 0.0) read as an int64, all but the sign bit flipped
        when negative, so keys order as the values do. For a value in the edges, with bucket
        ``b = (key - k0) >> shift`` (unsigned; ``b < K``), its bin lies in ``[lo[b], lo[b] +
        length)``: ``lo[b]`` is the bin of bucket ``b``'s least key, at most the value's
        bin, and ``lo[b + 1]`` the bin of the next bucket's least key, at least it. K: the
        least power of 2 from 4 bins on that keeps ``length`` 2 or less, at most 2**16
        (edges crowded in a few keys keep a longer search). Empty for integer edges."""
        e = self.rule.kernel_cmp
        nb = self.rule.nbins
        if e.dtype.kind != "f" or nb < 2:
            return np.empty(0, np.int64)
        keys = sort_keys((e.astype(np.float64) + 0.0).view(np.int64))
        k0 = keys[0]
        off = keys.view(np.uint64) - k0.view(np.uint64)  # exact: below 2**64, wrapping
        span = int(off[-1])
        k = 1 << max(2, (4 * nb - 1).bit_length())
        while True:
            k = min(k, 1 << 16)
            shift = max(0, span.bit_length() - (k.bit_length() - 1))  # span >> shift < k
            b = np.arange(k + 1, dtype=np.uint64)  # starts past 2**64 - 1 stand above every key
            starts = np.where(b <= (2**64 - 1) >> shift, b << np.uint64(shift), np.uint64(2**64 - 1))
            lo = np.maximum(np.searchsorted(off[:nb], starts, side="right").astype(np.int64) - 1, 0)
            length = int(np.max(lo[1:] - lo[:-1])) + 1
            if length <= 2 or k >= 1 << 16:
                return np.concatenate([np.array([k0, shift, length], np.int64), lo])
            k *= 4

    @functools.cached_property
    def key_splits(self) -> np.ndarray:
        """The one edge each bucket of :attr:`key_buckets` may hold, where its ``length`` is 2
        or less: ``split[b] = kernel_cmp[lo[b] + 1]``, NaN where ``lo[b]`` is the last bin. A
        value of bucket ``b`` in the edges then lies in bin ``lo[b] + (v >= split[b])`` (a
        compare with NaN is false): the bucket's start and its edge are loaded together, not
        one after the other. Empty for longer searches and integer edges."""
        tab = self.key_buckets
        if tab.size == 0 or tab[2] > 2:
            return np.empty(0, self.rule.kernel_cmp.dtype)
        lo = tab[3:]
        split = self.rule.kernel_cmp[lo + 1]  # lo[b] <= nbins - 1: an edge each
        split[lo == self.rule.nbins - 1] = np.nan
        return split
