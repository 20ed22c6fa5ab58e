"""Which bin a value lands in: :class:`BinRule`, the one owner of the rule.

This module is the only owner of that rule. Every backend re-implements
:meth:`BinRule.index` in its own language (numba, CUDA C++, WGSL) and is tested
against it on the same edge cases.

The rule (DESIGN.md §4)
-----------------------
Edges are NumPy's, value for value and dtype for dtype: they are produced by
``numpy.histogram_bin_edges`` itself, called so that it does not scan the data
unless NumPy's own rule needs it (string bin rules).

A value ``v`` lands in bin ``i`` iff ``edges[i] <= v < edges[i+1]``, the last bin
closed (``v == edges[-1]`` lands in the last bin), compared in ``cmp_dtype``:

* ``bins`` an int: the edges' dtype (``np.result_type(first, last, a)``, made
  floating), exactly as NumPy casts the data before comparing;
* ``bins`` a sequence: ``np.result_type(a, edges)``, as ``searchsorted`` compares.

Values outside ``[edges[0], edges[-1]]`` and NaN land in no bin. Kernels may
guess ``i`` by multiplying (``(v - lo) * nbins / (hi - lo)``) but must then
correct the guess against the edges array until the rule above holds, so the
result does not depend on how the guess rounds; :attr:`BinRule.slack` says
when the guess needs no correction.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BinRule", "MAX_SLACK", "first_true", "int_at_least", "sort_keys"]

# Comparison dtypes that kernels implement. Narrower types are widened exactly.
_KERNEL_CMP = {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint64)}
#: largest :attr:`BinRule.slack` (bins) for which kernels guess by multiplying and
#: then step to the bin; beyond it the guess could be far off and rules are searched.
MAX_SLACK = 4.0


def sort_keys(bits: np.ndarray) -> np.ndarray:
    """Float bits (read as signed integers) to integer keys that order as the floats do (-0.0
    just below 0.0, NaNs outside the infinities), and back: the flip undoes itself."""
    return bits ^ ((bits >> (8 * bits.itemsize - 1)) & np.iinfo(bits.dtype).max)


class _Checked:
    """:attr:`BinRule.uniform`, a dataclass field checked on its first read, not when the rule
    is made: the check passes over every edge, and a small call's rule (searched,
    :mod:`hotbin.backend.cpu.small`) is made for one call and never asks."""

    def __get__(self, rule, owner=None):
        if rule is None:
            raise AttributeError("uniform")  # the field has no default
        d = rule.__dict__
        if d["_uniform"] is None:  # given True, not yet checked
            d["_uniform"] = rule._guessable()
        return d["_uniform"]

    def __set__(self, rule, value):
        rule.__dict__["_uniform"] = None if value else False


@dataclass(frozen=True)
class BinRule:
    """A 1-D bin rule: the edges returned to the user and how values are compared."""

    edges: np.ndarray  #: edges exactly as NumPy returns them
    cmp: np.ndarray  #: the same edges in the comparison dtype (what kernels compare against)
    #: edges came from ``linspace``, do not decrease and a multiply guess lands within
    #: MAX_SLACK bins: given as the first, checked for the rest on the first read (:class:`_Checked`)
    uniform: bool = _Checked()
    #: ``(first, last)``, NumPy scalars of the data's dtype, or None: for int64/uint64
    #: data binned over a range with integer ends, NumPy keeps only the values
    #: ``first <= v <= last`` compared exactly (``first > last``: none), then bins
    #: them by the float64 edges; the float64 test that kernels make differs for
    #: ends of magnitude 2**53 or more (see :attr:`exact_bins`). None when the
    #: float64 test is already exact.
    exact: tuple | None = None
    #: ``(lo, hi)``, the range as given, in float64; or None. For float32 edges NumPy's
    #: ``linspace`` ran in float64 from these (float32 data over a range of Python
    #: numbers), not from the float32 first edge: a hint for :attr:`linear`, which checks
    #: it bit for bit
    span: tuple | None = None
    #: how many of the last bins can hold nothing: cells of zero width at an open end
    #: (:func:`hotbin.core.binning.cell_rule` of a range a few ulps wide), which a closed end
    #: cannot express. Kernels count under :attr:`counted` and the bins are padded after it
    tail: int = 0

    def _guessable(self) -> bool:
        """Whether a multiply guess serves these edges. No rule may cost O(bins) per value: a
        guess that overflows (scale 0) or lands far from its bin (float32 edges collapsing
        under many bins) would be corrected one bin at a time, so such rules are searched."""
        c = self.cmp
        if c.size > 2 and not (c[1:] >= c[:-1]).all():  # a string rule's edges need not be linspace's
            return False
        slack = self._slack_from(self.lo) if self.scale > 0 else np.inf
        if slack <= MAX_SLACK:
            self.__dict__["slack"] = slack  # what :attr:`slack` caches
        return slack <= MAX_SLACK

    @property
    def nbins(self) -> int:
        return self.edges.size - 1

    @functools.cached_property
    def counted(self) -> BinRule:
        """The rule kernels count under: this one, or for a :attr:`tail` the first
        ``nbins - tail`` bins (the last closed at ``cmp[-1]``); the tail's bins are empty."""
        if not self.tail:
            return self
        k = self.nbins - self.tail
        return BinRule(edges=self.edges[:k + 1], cmp=np.append(self.cmp[:k], self.cmp[-1]),
                       uniform=self.uniform)

    @property
    def lo(self) -> float:
        return float(self.cmp[0])

    @property
    def hi(self) -> float:
        return float(self.cmp[-1])

    @functools.cached_property
    def scale(self) -> float:
        """Multiplier of the first guess: ``nbins / (hi - lo)``.

        Always finite: 0 when the width is 0, infinite or so small that the
        quotient overflows (the guess is then bin 0 and the edges correct it), so
        ``(v - lo) * scale`` is never NaN for a value inside the edges.
        """
        width = self.hi - self.lo  # Python floats: inf where they overflow, no warning
        s = self.nbins / width if width > 0 else 0.0
        return s if math.isfinite(s) else 0.0

    @functools.cached_property
    def slack(self) -> float:
        """How far the multiply guess can be from the edges, in bins.

        Kernels compute ``t(v) = (float64(v) - lo) * scale`` (subtract, then
        multiply: no fused multiply-add). ``t`` is monotone in ``v``, so with
        ``T[i] = t(edges[i])`` and ``slack = max |T[i] - i|``: if ``g = floor(t(v))``
        and ``slack < t(v) - g < 1 - slack`` then ``T[g] < t(v) < T[g+1]``, hence
        ``edges[g] < v < edges[g+1]`` and ``v`` is in bin ``g`` with no edge
        loaded. Only values whose fraction is within ``slack`` of an integer are
        compared against the edges. ``inf`` for non-uniform rules.
        """
        return self.__dict__["slack"] if self.uniform else np.inf  # cached by the check

    def _slack_from(self, lo: float) -> float:
        """:attr:`slack` of the guess ``(float64(v) - lo) * scale``."""
        if self.cmp.size <= 64:  # a few edges (a small call's rule): Python floats cost less than NumPy's calls
            d = [abs((x - lo) * self.scale - i) for i, x in enumerate(self.kernel_cmp.tolist())]
            return math.nan if any(v != v for v in d) else max(d)
        t = self.kernel_cmp.astype(np.float64)  # a copy, worked in place
        with np.errstate(all="ignore"):
            t -= lo
            t *= self.scale
            t -= np.arange(t.size)
            return float(np.abs(t, out=t).max())

    @functools.cached_property
    def slack32(self) -> float:
        """:attr:`slack` of the guess in float32 arithmetic from the :attr:`linear` start,
        ``float32(float32(v) - float32(lo)) * float32(scale)`` rounded at each step, which
        is monotone in ``v`` as the float64 guess is: ``inf`` for rules that are not
        linear in float32 edges. Computed at the edges as a kernel computes it."""
        lin = self.linear
        if lin is None or self.kernel_cmp.dtype != np.float32:
            return np.inf
        with np.errstate(all="ignore"):
            t = (self.kernel_cmp - np.float32(lin[0])) * np.float32(self.scale)
            slack = float(np.max(np.abs(t.astype(np.float64) - np.arange(t.size))))
        return slack if np.isfinite(slack) else np.inf

    @functools.cached_property
    def linear(self) -> tuple[float, float, bool] | None:
        """``(lo, step, f32)`` when every interior edge is exactly ``i * step + lo`` computed
        in float64 and cast to ``cmp.dtype`` (``f32`` False), or computed in float32 (``f32``
        True: ``float32(float32(i) * step) + lo`` rounded at each step); else None.
        float32 and float64 rules only. ``lo`` is the first edge, or for float32 edges
        from a float64 :attr:`span` that span's start, which kernels then guess from too.

        NumPy's ``linspace`` computes its edges one of those ways (float32 arithmetic
        when the ends are float32 scalars, as ranges found from float32 data are; float64
        from a range of Python numbers), so for those rules a kernel can recompute any edge
        instead of loading it (the last edge is the closed end, compared separately).
        Checked bit for bit here, once per rule, and only offered when the guess from
        ``lo`` is within half a bin of every edge (its slack < 1/2), so the edge nearest the
        guess and one compare find the bin (:mod:`hotbin.backend.cpu.rule`).
        """
        dt = self.cmp.dtype
        if not self.uniform or dt not in (np.float32, np.float64):
            return None
        n = self.nbins
        first, last = self.edges[0], self.edges[-1]
        i = np.arange(n, dtype=np.float64)
        with np.errstate(all="ignore"):
            step = (float(last) - float(first)) / n
            if dt == np.float32 and self.slack < 0.5:  # float32 arithmetic first: kernels need no float64
                for s32 in ((np.float32(last) - np.float32(first)) / np.float32(n), np.float32(step)):
                    if np.array_equal(i.astype(np.float32) * s32 + np.float32(self.lo), self.cmp[:n]):
                        return self.lo, float(s32), True
            starts = [(self.lo, step)]
            if dt == np.float32 and self.span is not None:
                lo, hi = self.span
                starts.append((lo, (hi - lo) / n))
            for lo, step in starts:
                if self._slack_from(lo) < 0.5 and np.array_equal((i * step + lo).astype(dt), self.cmp[:n]):
                    return lo, step, False
        return None

    @functools.cached_property
    def exact_scale(self) -> float:
        """The scale whose multiply guess is exact for every value, 0.0 for none: ``lo`` 0, a
        power of 2 ``s`` that float32 holds, every edge but the last ``i / s``, and the last
        (the closed end) above the one before it and at most ``nbins / s``. Then ``v * s`` is
        computed without rounding and strictly increasing, and maps edge ``i`` to ``i``, so
        ``floor(v * s)`` is the bin (a value on ``nbins / s`` clamped to the last bin), with
        no edge compared. ``s`` is ``nbins`` over the span of :attr:`edges`, not :attr:`scale`:
        heatmap cells open at ``hi`` close at the float just below it
        (:func:`hotbin.core.binning.cell_rule`), and those are exact too. Checked once per rule."""
        n, lo = self.nbins, self.lo
        if lo != 0.0 or not float(self.edges[-1]) > 0:
            return 0.0
        s = n / float(self.edges[-1])
        if math.frexp(s)[0] != 0.5 or not 2.0**-126 <= s <= 2.0**127:
            return 0.0
        e = self.kernel_cmp.astype(np.float64)
        ok = np.array_equal(e[:n], np.arange(n) / s) and e[n - 1] < e[n] <= n / s
        return s if ok else 0.0

    @functools.cached_property
    def float32(self) -> BinRule | None:
        """This float64 rule as float32 values meet it, with float32 edges; None for other rules.

        For a float32 ``v``, ``float64(v) >= e`` exactly when ``v >= ceil32(e)`` (the least
        float32 not below ``e``), and ``float64(v) <= e`` when ``v <= floor32(e)``. So the
        edges rounded up, the closed last one rounded down, give float32 values the same
        bins, and a kernel compares them in float32 (8 lanes instead of 4). None when an
        edge is beyond float32's range or for integer ends (:attr:`exact`).
        """
        if self.cmp.dtype != np.float64 or not self.uniform or self.exact is not None:
            return None
        with np.errstate(over="ignore"):
            c = self.cmp.astype(np.float32)
            ends = self.edges.astype(np.float32)
        if not (np.isfinite(c).all() and np.isfinite(ends).all()):
            return None
        inner = c[:-1]
        up = inner < self.cmp[:-1]  # compared in float64: exact
        inner[up] = np.nextafter(inner[up], np.float32(np.inf))
        if c[-1] > self.cmp[-1]:
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
        e = self.kernel_cmp
        nb = self.nbins
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
            return np.empty(0, self.kernel_cmp.dtype)
        lo = tab[3:]
        split = self.kernel_cmp[lo + 1]  # lo[b] <= nbins - 1: an edge each
        split[lo == self.nbins - 1] = np.nan
        return split

    @property
    def kernel_cmp(self) -> np.ndarray:
        """Edges widened exactly to a dtype every kernel implements (f32, f64, i64, u64).

        Comparing a value widened to this dtype against these edges gives the same
        answer as comparing in :attr:`cmp`'s dtype, because the widening is exact
        and order preserving (float16 -> float32, small ints -> int64).
        """
        dt = self.cmp.dtype
        if dt in _KERNEL_CMP:
            return self.cmp
        if dt == np.float16:
            return self.cmp.astype(np.float32)
        if dt.kind == "i" or dt.kind == "b":
            return self.cmp.astype(np.int64)
        if dt.kind == "u":
            return self.cmp.astype(np.uint64)
        raise TypeError(f"no kernel compares in {dt}")

    @functools.cached_property
    def exact_bins(self):
        """How callers make the kernels' float64 range test exact: None, or ``(pairs, rule)``.

        With :attr:`exact` set, kernels (which test ``edges[0] <= v <= edges[-1]``
        in float64) count correctly every bin but two: the first bin holding
        ``edges[0]`` and the last bin, which may take integers just outside the
        range whose float64 equals an end. ``rule`` has integer edges in the data's
        dtype (compared exactly, binary search) and, for each ``(b, k)`` of
        ``pairs``, its bin ``k`` holds exactly what NumPy puts in bin ``b``
        (``k`` None: bin ``b`` is empty). Callers count under ``rule`` too and
        replace those bins: one more pass over the data, only for such ranges.
        """
        if self.exact is None:
            return None
        dt = self.exact[0].dtype
        first, last = (int(v) for v in self.exact)
        e, nb = self.cmp, self.nbins
        b0 = min(int(np.count_nonzero(e == e[0])) - 1, nb - 1)  # the bin edges[0] lands in
        if b0 == nb - 1:
            spans = [(b0, first, last)]
        else:  # integers of bin b0 and of the last bin, cut to [first, last]
            spans = [(b0, first, min(int_at_least(e[b0 + 1], dt) - 1, last)),
                     (nb - 1, max(int_at_least(e[nb - 1], dt), first), last)]
        pairs, edges = [], []
        for b, lo, hi in spans:
            if lo > hi:
                pairs.append((b, None))
                continue
            if edges:
                edges[-1] += 1  # the previous span's closed top becomes its open edge
            pairs.append((b, len(edges)))
            edges += [lo, hi]
        if not edges:
            return pairs, None
        edges = np.array(edges, dt)
        return pairs, BinRule(edges=edges, cmp=edges, uniform=False)

    def index(self, v) -> np.ndarray:
        """Reference implementation: the bin of each value, -1 for none (NumPy only)."""
        v = np.asarray(v)
        if v.dtype == np.bool_:
            v = v.astype(np.uint8)
        c = v.astype(self.cmp.dtype)
        e = self.cmp
        i = np.searchsorted(e, c, side="right") - 1
        i[c == e[-1]] = self.nbins - 1
        i = np.minimum(i, self.nbins - self.tail - 1)
        out = (c >= e[0]) & (c <= e[-1])
        if self.exact is not None:
            out &= (v >= self.exact[0]) & (v <= self.exact[1])
        i[~out] = -1
        return i


def first_true(lo: int, hi: int, pred) -> int:
    """Smallest integer ``v`` in ``[lo, hi]`` with ``pred(v)`` (false, then true); ``hi + 1`` if none."""
    while lo <= hi:
        m = (lo + hi) // 2
        if pred(m):
            hi = m - 1
        else:
            lo = m + 1
    return lo


def int_at_least(e, dt) -> int:
    """Smallest integer of ``dt`` whose float64 is ``>= e`` (one past ``dt``'s maximum if none)."""
    info = np.iinfo(dt)
    e = float(e)
    return first_true(int(info.min), int(info.max), lambda v: float(v) >= e)
