"""Per-bin and per-cell sums of float weights in fixed point (:mod:`hotbin.core.fixedpoint`) on the device.

kernels/fixed.wgsl turns each float32 weight into fixedpoint.split's two integer words with
integer arithmetic only (WGSL has no float64) and sums them exactly, so the words are bitwise
the cpu backend's in any order. Three accumulators use them:

* ``fixed`` (``deterministic=True``): the words themselves, at the reduction's scale;
* ``mean`` (heatmap mean, sum and the first pass of std / var): ``[sum, n]`` in float64, the sum
  the words' value (:func:`hotbin.core.fixedpoint.combine`) at the scale ``s`` of this call's
  largest ``|w|`` and size: the exact sum of the weights quantized at ``2**-s``, rounded once,
  where a float64 running sum rounds at every add. A cell of ``k`` weights is within
  ``k * 2**-(s+1)`` of its exact sum, i.e. ``2**-(95 - log2 n)`` of the largest ``|w|`` a
  weight: better than float64 sums for every cell but one of tiny weights beside huge ones
  elsewhere (tests/test_wgpu_fixed.py bounds both);
* ``f64`` (weighted histograms): the same sums, for weights without NaN.

Weights go to the device as float32, which must hold each of them exactly
(:func:`.extreme.f32_weights`). NotImplemented (the cpu backend) answers for the rest: other
weights, infinite ones (no scale holds them), the centred second pass of std / var
(``(w - center)**2`` is float64 arithmetic), and calls of 2**31 weights or more (the low
words' sums stay below 2**63).
"""
from __future__ import annotations

import math

import numpy as np

from ...core import fixedpoint
from .device import gpu, pow2_floor, words64
from .memory import extremes
from .extreme import f32_weights
from .counts import points2d, stream
from .keys import axis, keyed, widen
from .tuning import CACHE_SLOTS, MIN_SLOTS

#: the accumulators this module computes
ACCS = ("fixed", "mean", "f64")
#: workgroup words a slot takes: the hi and lo sums (two each), the count (and the cache tag)
_PRIVATE_WORDS, _CACHE_WORDS = 5, 6


def sums1d(a, rule, weights, red):
    """The partial of ``red`` (:data:`ACCS`) over the bins of ``rule`` for the flat native
    ``a``, or NotImplemented."""
    k = keyed(widen(a))
    if k is None:
        return NotImplemented
    ax = axis(rule, k[1])
    got = _partial(1, [k[0]], [k[1]], None if ax is None else [ax], (rule.nbins,), 1, None, weights, red)
    return got if got is NotImplemented else got[0]


def sums2d(x, y, rx, ry, weights, red, by=None):
    """``(partial, kept)`` of ``red`` (:data:`ACCS`) over the cells of the flat native ``x``,
    ``y`` (with categories: ``by``, as the protocol's ``histogram2d``), or NotImplemented."""
    pts = points2d(x, y, rx, ry, by)
    if pts is NotImplemented:
        return NotImplemented
    return _partial(2, pts.data, pts.kinds, pts.axes, pts.shape, ry.nbins, pts.cats, weights, red)


def max_abs(w) -> float:
    """:func:`hotbin.core.fixedpoint.max_abs` of ``w`` (NaN where a weight is NaN), its passes
    over large contiguous weights split over the device's copy threads (:func:`.memory.extremes`)."""
    w = np.asarray(w)
    threads = gpu().copy_threads
    if w.size == 0 or threads <= 1 or not w.flags.c_contiguous:
        return fixedpoint.max_abs(w)
    return fixedpoint.max_abs(np.array(extremes(w.reshape(-1), threads)))


def _scale(w, red):
    """The fixed-point exponent of the call: the reduction's, or from this call's weights
    (NaN weights are no values); None where no scale holds them."""
    if red.acc == "fixed":
        return red.scale
    m = max_abs(w)
    if math.isnan(m):
        if red.acc == "f64":
            return None  # a NaN weight makes its bin's sum NaN
        m = max_abs(np.where(np.isnan(w), np.float32(0), w))
    return fixedpoint.scale_for(m, w.size) if math.isfinite(m) else None


def _partial(dims, data, kinds, axes, shape, ny, cats, weights, red):
    """``(partial of red over shape, points in a cell)``, or NotImplemented."""
    w = f32_weights(weights)
    if w is None or red.center is not None or w.size >= 1 << 31:
        return NotImplemented
    s = _scale(w, red)
    if s is None:
        return NotImplemented
    ncell = int(np.prod(shape))
    if axes is None or ncell == 0:
        words, n, kept = np.zeros((2, ncell), np.int64), np.zeros(ncell, np.int64), 0
    else:
        words, n, kept = _words(dims, data, kinds, axes, ncell, ny, cats, w, s)
    if red.acc == "fixed":
        part = words
    else:
        sums = fixedpoint.combine(words, s)
        part = np.stack([sums, n.astype(np.float64)]) if red.acc == "mean" else sums
    return part.reshape(red.lead + tuple(shape)), kept


def _words(dims, data, kinds, axes, ncell, ny, cats, w, s):
    """(the (2, ncell) int64 words [hi, lo], 0 <= lo < 2**32; the non-NaN weights of each
    cell; the points in a cell) of fixed.wgsl at scale ``s``."""
    g = gpu()
    enc = g.device.create_command_encoder()
    counts = g.zeros(8 * (ncell + 1), enc)  # the last counter: points in a cell
    sums = g.zeros(16 * ncell, enc)
    slots = max(MIN_SLOTS, 1 << (ncell - 1).bit_length())
    if _PRIVATE_WORDS * slots + 1 <= g.wg_words:  # every cell's sums and count, and the kept counter
        entry, nwords = "fixed_private", _PRIVATE_WORDS * slots
    else:  # a cache of slots cells: sums, counts, tags
        slots = min(CACHE_SLOTS, pow2_floor((g.wg_words - 1) // _CACHE_WORDS))
        entry, nwords = "fixed_global", _CACHE_WORDS * slots
    held = []
    try:
        enc = stream("fixed", entry, {"SLOTS": slots, "WORDS": nwords}, dims, data, kinds, axes, ncell,
                     ny, cats, {4: counts, 7: sums}, weights=w, encoder=enc, scale=s, held=held)
        n, raw = g.read_many([(counts, 8 * (ncell + 1), None), (sums, 16 * ncell, None)], enc,
                             recycle=True)
    finally:
        g.give(*held)
    n = words64(n)
    raw = raw.view(np.uint64).reshape(ncell, 2)
    hi, lo = raw[:, 0].view(np.int64), raw[:, 1]  # lo: the sum of words up to 2**32 each
    words = np.stack([hi + (lo >> np.uint64(fixedpoint.SPLIT)).astype(np.int64),
                      (lo & np.uint64((1 << fixedpoint.SPLIT) - 1)).astype(np.int64)])
    return words, n[:ncell], int(n[ncell])
