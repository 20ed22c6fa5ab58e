"""The bin rule of :mod:`hotbin.core.binning`, fused into the cpu kernels (no index array).

A rule travels into kernels as the tuple ``(e, e0, en, lo, scale, step, tab, split, mode)`` of
:func:`rule_args`: the kernel's edges, its ends, the multiply guess, SEARCH's tables
(:attr:`CpuRule.key_buckets`, :attr:`CpuRule.key_splits`; empty for the other modes) and how
bins are found (``mode``):

* LINEAR: every edge is ``i * step + lo`` (:attr:`CpuRule.linear`; rounded to float32
  for float32 rules, ``lo`` then maybe the float64 start NumPy's linspace ran from, so such
  data need not fall back to NEAR); LINEAR32: float32 edges computed in float32 arithmetic,
  and the whole loop in float32 (faster than LINEAR for float32 data); the
  guess rounded to the nearest edge, that edge computed and one compare (:func:`_linear`;
  results/probes-cpu.md, rule.py);
* SPAN32: float32 values under LINEAR's float32 edges from a float64 span (:attr:`BinRule.span`):
  the guess and the compare in float32 (8 lanes), only the edge nearest the guess computed in
  float64 and rounded to float32 (:func:`_span32`), where the float32 guess is within half a
  bin of every edge (:attr:`CpuRule.slack32`; benchmarks/probes/cpu_codes.py);
* NEAR: the guess is within one bin of the answer (:attr:`BinRule.slack` < 1); it is
  corrected by one compare each way against the loaded edges ``e[g]``, ``e[g + 1]``. The
  uniform rules no LINEAR mode takes: float16 data (float16 edges, recomputed by no
  formula here), float32 edges of float32 arithmetic in 2**22 bins or more (past
  LINEAR32's bound) and bins about an ulp wide; SEARCH there is slower
  (``benchmarks/cpu_suite.py --near``, results/cpu-zen5.md);
* SEARCH: binary search of the edges (edges not from linspace, or a guess that can be
  more than one bin off): :func:`.search.search`;
* SCALED (SCALED32 in float32): the guess alone, no correction, for LINEAR (LINEAR32) rules
  whose guess is exact (:attr:`CpuRule.exact_scale`): ``lo`` is 0, ``scale`` a power of 2 and
  every edge ``i / scale`` (ranges such as (0, 1) or (0, 256) in a power-of-2 number of
  bins, (0, 100) in 100 unit bins). ``floor(v * scale)``, the closed last edge clamped to
  the last bin, is then bit for bit what LINEAR finds, and faster (results/probes-cpu.md,
  rule.py).

LINEAR, SPAN32, NEAR and SEARCH are branch-free and cost the same wherever values fall: whole numbers,
values on edges and constants on an edge cost what uniform data costs.
The guess ``t(v) = (v - lo) * scale`` is monotone in ``v`` and ``|t(e[i]) - i| <= slack``
at every edge, so a value of bin ``b`` (``e[b] <= v < e[b + 1]``) has
``b - slack <= t(v) <= b + 1 + slack``. NEAR (``slack < 1``): ``floor(t(v))`` is ``b - 1``,
``b`` or ``b + 1``, so one step each way suffices. LINEAR (``slack < 1/2``): ``rint(t(v))``
is ``b`` or ``b + 1``, so ``r = rint(t(v))`` and one compare, ``v < e[r]``, tell them
apart (``r`` is at most nb, and a value with ``r`` nb is in the last bin either way).
SPAN32's float32 guess is monotone too (each rounding is), so its slack, taken at the edges
as the kernel computes it (:attr:`CpuRule.slack32`), bounds it the same way.
"""
from __future__ import annotations

import numpy as np

from ...core._jit import njit
from ...core.binning import BinRule
from .search import search
from .strategy import cpu_rule

__all__ = ["LINEAR", "LINEAR32", "NEAR", "SEARCH", "SCALED", "SCALED32", "SPAN32", "codes", "cells2", "in_bin",
           "rule_args"]

LINEAR, NEAR, SEARCH, LINEAR32, SCALED, SCALED32, SPAN32 = 0, 1, 2, 3, 4, 5, 6


@njit(inline="always")
def _guess(x, e0, en, lo, scale, top):
    """(the multiply guess of x's bin as a float in [0, top], whether x is in the edges)."""
    ok = (x >= e0) & (x <= en)
    return min(np.floor((x - lo) * scale if ok else 0.0), top), ok


@njit(inline="always")
def _fix(x, g, a0, a1, top):
    """The guess g one bin down when x < a0 (its edge), up when x >= a1 (the next edge)."""
    return g - (1.0 if x < a0 else 0.0) + (1.0 if (g < top) & (x >= a1) else 0.0)


@njit(nogil=True, cache=True)
def codes(v, r, out):
    """out[k] = bin of v[k] under the rule tuple r, nb when it lands in none.

    A function of its own on a block, called (not inlined) by the scatter kernels.
    LINEAR and NEAR are branch-free loops in float64 (selects, one int conversion at
    the end): numba vectorizes them (int32 arithmetic in the loop ran slower;
    results/probes-cpu.md, rule.py).
    """
    e, e0, en, lo, scale, step, tab, split, mode = r
    nb = e.size - 1
    top = nb - 1.0
    none = np.float64(nb)
    # SCALED: lo is 0, so an x inside the edges has x * scale >= 0, and converting it to an
    # integer (truncating) is its floor, with no floor call (results/probes-cpu.md, rule.py)
    if mode == SCALED32:
        sc32, top32, zero = np.float32(scale), np.float32(top), np.float32(0.0)
        for k in range(v.size):
            x = v[k]
            ok = (x >= e0) & (x <= en)
            out[k] = np.int32(min(x * sc32 if ok else zero, top32)) if ok else np.int32(nb)
    elif mode == SCALED:
        for k in range(v.size):
            x = v[k]
            ok = (x >= e0) & (x <= en)
            out[k] = np.int32(min(x * scale if ok else 0.0, top)) if ok else np.int32(nb)
    elif mode == LINEAR32:  # all in float32 (8 lanes): the guess, the edges, the compares
        lo32, sc32, s32 = np.float32(lo), np.float32(scale), np.float32(step)
        top32, none32 = np.float32(top), np.float32(nb)
        for k in range(v.size):
            g, ok = _linear32(v[k], e0, en, lo32, sc32, s32, top32)
            out[k] = np.int32(g if ok else none32)
    elif mode == SPAN32:
        lo32, sc32, top32, none32 = np.float32(lo), np.float32(scale), np.float32(top), np.float32(nb)
        for k in range(v.size):
            g, ok = _span32(v[k], e0, en, lo32, sc32, lo, step, top32)
            out[k] = np.int32(g if ok else none32)
    elif mode == LINEAR:
        is32 = e.itemsize == 4  # edges rounded to float32, as NumPy's linspace casts them
        for k in range(v.size):
            g, ok = _linear(v[k], e0, en, lo, scale, step, top, is32)
            out[k] = np.int32(g if ok else none)
    elif mode == NEAR:
        for k in range(v.size):
            x = v[k]
            g, ok = _guess(x, e0, en, lo, scale, top)
            i = np.uint64(g)
            out[k] = np.int32(_fix(x, g, e[i], e[min(i + np.uint64(1), np.uint64(nb))], top) if ok else none)
    else:
        search(v, e, tab, split, out)


@njit(inline="always")
def _linear32(x, e0, en, lo32, sc32, s32, top32):
    """(LINEAR32's bin of the float32 x as a float32, whether x is in the edges): :func:`_linear`
    in float32."""
    one, zero = np.float32(1.0), np.float32(0.0)
    ok = (x >= e0) & (x <= en)
    r = np.rint((x - lo32) * sc32)
    a = np.float32(r * s32) + lo32
    return min(r - (one if x < a else zero), top32), ok


@njit(inline="always")
def _span32(x, e0, en, lo32, sc32, lo, step, top32):
    """(SPAN32's bin of the float32 x as a float32, whether x is in the edges): :func:`_linear`
    with the guess and the compare in float32 and the edge ``r * step + lo`` in float64,
    rounded to float32 as NumPy rounds its edges."""
    one, zero = np.float32(1.0), np.float32(0.0)
    ok = (x >= e0) & (x <= en)
    r = np.rint((x - lo32) * sc32)
    a = np.float32(np.float64(r) * step + lo)
    return min(r - (one if x < a else zero), top32), ok


@njit(inline="always")
def _linear(x, e0, en, lo, scale, step, top, is32=False):
    """(LINEAR's bin of x as a float64, whether x is in the edges): the edge nearest the
    guess, ``r``, computed (``is32``: rounded to float32) and x below it in bin ``r - 1``
    (the module's docstring says why). One edge and one compare where the guess corrected
    each way took two (benchmarks/probes/cpu_codes.py). A value outside the edges (NaN too)
    gets any bin: callers replace it where ``ok`` is false."""
    ok = (x >= e0) & (x <= en)
    r = np.rint((x - lo) * scale)
    a = r * step + lo
    if is32:
        a = np.float64(np.float32(a))
    return min(r - (1.0 if x < a else 0.0), top), ok


#: the modes :func:`cells2` fuses, by the arithmetic they bin in (SCALED's guess is exact, so
#: LINEAR's correction keeps it; float32 bins: cells exact in float32 below 2**24)
_FUSED32 = (LINEAR32, SCALED32)
_FUSED64 = (LINEAR, SCALED)


@njit(inline="always")
def _scaled_cells(x, y, e0, en, f0, fn, sx, sy, tx, ty, nyf, out, none):
    """cells2 where both axes' guesses are exact (SCALED, SCALED32: a heatmap over (0, 1), or
    of whole-number pixels), in the arithmetic of the constants ``sx`` .. ``nyf``: no edge
    compared. A heatmap's cells open at ``hi`` were LINEAR32 before (:attr:`CpuRule.exact_scale`;
    results/probes-cpu.md, rule.py)."""
    z = sx - sx
    d = 0
    for k in range(x.size):
        u, v = x[k], y[k]
        ok = (u >= e0) & (u <= en) & (v >= f0) & (v <= fn)
        gx = min(np.floor(u * sx if ok else z), tx)
        gy = min(np.floor(v * sy if ok else z), ty)
        out[k] = out.dtype.type(gx * nyf + gy) if ok else none
        d += not ok
    return d


@njit(nogil=True, cache=True)
def cells2(x, y, rx, ry, out, tmp, none):
    """out[k] = the cell ``bx * ny + by`` of the point (x[k], y[k]) under the rule tuples rx, ry
    (``ny`` bins), ``none`` where it lands in no cell; returns how many did. Both axes binned
    and combined in one loop, in the rules' arithmetic, where both are LINEAR or SCALED with
    float64 edges (LINEAR32 or SCALED32 in float32 below 2**24 cells), faster than binning
    the axes apart (results/probes-cpu.md, rule.py). Else :func:`codes` of each axis (y's
    into ``tmp``), then combined."""
    e, e0, en, lo, scale, step, _, _, mode = rx
    f, f0, fn, flo, fscale, fstep, _, _, fmode = ry
    nx, ny = e.size - 1, f.size - 1
    d = 0
    n = x.size
    if (mode == SCALED32) & (fmode == SCALED32) & (nx * ny < 2**24):
        f32 = np.float32
        return _scaled_cells(x, y, e0, en, f0, fn, f32(scale), f32(fscale), f32(nx - 1), f32(ny - 1),
                             f32(ny), out, none)
    if (mode == SCALED) & (fmode == SCALED):
        return _scaled_cells(x, y, e0, en, f0, fn, scale, fscale, nx - 1.0, ny - 1.0, np.float64(ny),
                             out, none)
    if (mode in _FUSED32) & (fmode in _FUSED32) & (nx * ny < 2**24):
        lo32, sc32, s32, top32 = np.float32(lo), np.float32(scale), np.float32(step), np.float32(nx - 1)
        flo32, fsc32, fs32 = np.float32(flo), np.float32(fscale), np.float32(fstep)
        ftop32, ny32 = np.float32(ny - 1), np.float32(ny)
        for k in range(n):
            gx, okx = _linear32(x[k], e0, en, lo32, sc32, s32, top32)
            gy, oky = _linear32(y[k], f0, fn, flo32, fsc32, fs32, ftop32)
            ok = okx & oky
            out[k] = out.dtype.type(gx * ny32 + gy) if ok else none
            d += not ok
        return d
    if (mode in _FUSED64) & (fmode in _FUSED64) & (e.itemsize == 8) & (f.itemsize == 8):
        top, ftop, nyf = nx - 1.0, ny - 1.0, np.float64(ny)
        for k in range(n):
            gx, okx = _linear(x[k], e0, en, lo, scale, step, top)
            gy, oky = _linear(y[k], f0, fn, flo, fscale, fstep, ftop)
            ok = okx & oky
            out[k] = out.dtype.type(gx * nyf + gy) if ok else none
            d += not ok
        return d
    codes(x, rx, out)
    codes(y, ry, tmp)
    nxc, nyc = out.dtype.type(nx), out.dtype.type(ny)
    for k in range(n):
        c, r = out[k], tmp[k]
        v = out.dtype.type(c * nyc + r) if (c < nxc) & (r < nyc) else none
        out[k] = v
        d += v == none
    return d


@njit
def in_bin(v, b, m, r, g):
    """Whether v[b:b+m] all lie in bin g of the rule tuple r: ``e[g] <= v < e[g + 1]``,
    ``<= e[g + 1]`` for the last bin (:mod:`hotbin.core.binning`'s rule; NaN lies in none): the
    edges are the rule itself, so the answer is what :func:`codes` would give."""
    e = r[0]
    lo, hi = e[g], e[g + 1]
    last = g == e.size - 2
    vs = v[b:b + m]  # indices from 0: no negative-index checks, so the loop vectorizes
    n = 0
    for k in range(m):
        n += (vs[k] >= lo) & ((vs[k] < hi) | (last & (vs[k] == hi)))
    return n == m


def _mode(rule: BinRule):
    """(lo, step, mode) of :func:`codes` for the rule: ``lo`` the guess's origin."""
    lin = cpu_rule(rule).linear
    small = rule.nbins < 2**31 - 1  # bins as int32
    # LINEAR32 guesses in float32: off by at most 3 * (nbins + 1) * 2**-24 bins more than
    # the float64 guess whose error ``slack`` bounds (a subtraction, a product and the
    # rounded scale), so the guess is still within half a bin of every edge
    exact32 = rule.nbins < 2**22 and rule.slack + 4 * (rule.nbins + 1) * 2.0**-24 < 0.5
    if lin is not None and small and (not lin[2] or exact32):
        return lin[0], lin[1], (LINEAR32 if lin[2] else LINEAR)
    if rule.uniform and rule.slack < 1 and small:
        return rule.lo, 0.0, NEAR
    return rule.lo, 0.0, SEARCH


def rule_args(rule: BinRule, dtype=None):
    """The rule as the tuple kernels take, for values of ``dtype`` (the kernel's). float32
    values under a float64 rule are binned in float32 (:attr:`CpuRule.float32`) when its
    float32 edges are LINEAR32's (faster; results/probes-cpu.md, rule.py)."""
    f32 = cpu_rule(rule).float32 if dtype == np.float32 else None
    if f32 is not None and _mode(f32)[2] == LINEAR32:
        rule = f32
    cr = cpu_rule(rule)
    lo, step, mode = _mode(rule)
    e = rule.kernel_cmp
    scale = rule.scale
    if mode in (LINEAR, LINEAR32) and cr.exact_scale:
        mode, scale = (SCALED32 if mode == LINEAR32 else SCALED), cr.exact_scale
    elif mode == LINEAR and dtype == np.float32 and cr.slack32 < 0.5:
        mode = SPAN32
    tab, split = (cr.key_buckets, cr.key_splits) if mode == SEARCH else (_NO_TABLE, e[:0])
    return (e, e[0], e[-1], lo, scale, step, tab, split, mode)


_NO_TABLE = np.empty(0, np.int64)
