"""Which bin a value lands in: :class:`BinRule`, the one owner of the rule.

This module is the only owner of that rule. Every backend re-implements
:meth:`BinRule.index` in its own language (numba, CUDA C++, WGSL) and is tested
against it on the same edge cases.

The rule (DESIGN.md §4)
-----------------------
Edges are NumPy's, value for value and dtype for dtype: they are produced by
``numpy.histogram_bin_edges`` itself, called so that it does not scan the data
unless NumPy's own rule needs it (string bin rules), or for a range found in the data
by the steps of its ``linspace`` (:mod:`hotbin.core.binning`).

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

from .arrays import xp

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
        slack = self.slack_from(self.lo) if self.scale > 0 else np.inf
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

    def slack_from(self, lo: float) -> float:
        """:attr:`slack` of the guess ``(float64(v) - lo) * scale``."""
        if self.cmp.size <= 64:  # a few edges (a small call's rule): Python floats cost less than NumPy
            d = [abs((x - lo) * self.scale - i) for i, x in enumerate(self.kernel_cmp.tolist())]
            return math.nan if any(v != v for v in d) else max(d)
        t = self.kernel_cmp.astype(np.float64)  # a copy, worked in place
        with np.errstate(all="ignore"):
            t -= lo
            t *= self.scale
            t -= np.arange(t.size)
            return float(np.abs(t, out=t).max())

    def compiled(self, backend: str, build):
        """What ``backend``'s kernels derive from this rule (its kernel rule: strategies,
        tables, float32 edges), ``build(rule)`` once per rule. The rule itself holds only the
        semantics; each backend compiles its own (:mod:`hotbin.backend.cpu.strategy`)."""
        done = self.__dict__.setdefault("_compiled", {})
        if backend not in done:
            done[backend] = build(self)
        return done[backend]

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
        """Reference implementation: the bin of each value, -1 for none (NumPy; a CuPy array's
        on its device, by the same steps)."""
        x = xp(v)
        v = x.asarray(v)
        if v.dtype == np.bool_:
            v = v.astype(np.uint8)
        c = v.astype(self.cmp.dtype)
        e = x.asarray(self.cmp)
        i = x.searchsorted(e, c, side="right").astype(np.int64) - 1
        i = x.where(c == e[-1], self.nbins - 1, i)
        i = x.minimum(i, self.nbins - self.tail - 1)
        ok = (c >= e[0]) & (c <= e[-1])
        if self.exact is not None:
            ok &= (v >= self.exact[0]) & (v <= self.exact[1])
        return x.where(ok, i, -1)


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
