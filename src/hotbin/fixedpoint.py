"""Deterministic weighted sums by fixed-point integer accumulation.

With ``deterministic=True`` every weight ``w`` is quantized to the integer
``q = round_half_even(w * 2**s)`` and bins sum ``q`` in integers. Integer addition
is associative, so the sum is the same for any order, thread count, block
size, chunking (Dask partitions) and backend; the float64 result is a fixed
function of that integer.

``q`` is kept as two int64 words, ``q = hi * 2**32 + lo`` with ``0 <= lo <= 2**32``,
so the quantum ``2**-s`` is about ``2**-32`` finer than a single int64 would allow.
The scale ``s`` depends only on the largest ``|w|`` and the number of weights
``n`` (never on the chunking), chosen so ``n * |hi|`` stays below ``2**62``:
no sum can overflow.

Error bound: a bin holding ``k`` weights is off from the exact real sum by at
most ``k * 2**-(s+1)`` (quantization) plus 2 ulp of the result (conversion to
float64), with ``s = 94 - bit_length(n) - e`` and ``max|w| < 2**e``. For one
million weights of magnitude below 1 that is about ``1e6 * 2**-75``.

Kernels implement :func:`split` in float64 (floor, subtract, scale by a power
of two and round-half-even are exact or correctly rounded everywhere) and sum the
two words; :func:`combine` turns the sums into float64.
"""
from __future__ import annotations

import math

import numpy as np

SPLIT = 32  #: bits of the low word
_HEADROOM = 62  #: n * |hi| < 2**62 keeps every int64 sum (and the carry) in range
#: how many weights one low-word accumulator may take before its carry is folded
LO_CHUNK = 1 << 30


def scale_for(max_abs: float, n: int) -> int:
    """The exponent ``s`` of the quantum ``2**-s`` for ``n`` weights with ``max|w| = max_abs``."""
    if n <= 0:
        return 0
    if not np.isfinite(max_abs):
        raise ValueError("weights: deterministic=True needs finite weights (found NaN or inf)")
    if max_abs == 0:
        return 0
    e = math.frexp(max_abs)[1]  # max_abs < 2**e
    return _HEADROOM - int(n).bit_length() - e + SPLIT


def split(w: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference quantization: ``(hi, lo)`` with ``hi * 2**32 + lo == round(w * 2**s)``."""
    t = np.ldexp(np.asarray(w, np.float64), s - SPLIT)
    hi = np.floor(t)
    lo = np.rint(np.ldexp(t - hi, SPLIT))
    return hi.astype(np.int64), lo.astype(np.int64)


def fold(words: np.ndarray) -> np.ndarray:
    """Normalize words ``[hi, lo, ...]`` (axis 0) so that ``0 <= lo < 2**32``; same value."""
    words = np.asarray(words, np.int64)
    hi = words[0] + (words[1] >> SPLIT)
    return np.stack([hi, words[1] & ((1 << SPLIT) - 1)])


def merge(partials: np.ndarray) -> np.ndarray:
    """Exact sum of partial words stacked on axis 0 (shape ``(k, 2, ...)``) -> ``(2, ...)``.

    This is the one combine rule for fixed-point partials: threads, GPU blocks and
    Dask chunks all produce words, and any grouping of merges gives the same words.
    Each partial's low word must be below ``LO_CHUNK * 2**32`` (fold it first otherwise).
    """
    partials = np.asarray(partials, np.int64)
    folded = np.stack([fold(p) for p in partials]) if partials.shape[0] else partials
    return fold(folded.sum(axis=0))


def combine(words: np.ndarray, s: int) -> np.ndarray:
    """float64 value of words ``hi * 2**32 + lo`` times ``2**-s`` (a fixed function of them)."""
    hi, lo = fold(words)
    return np.ldexp(hi.astype(np.float64), SPLIT - s) + np.ldexp(lo.astype(np.float64), -s)


def max_abs(w) -> float:
    """``max |w|`` as a float (0 for empty input); NaN if any weight is NaN."""
    w = np.asarray(w)
    if w.size == 0:
        return 0.0
    hi, lo = float(np.max(w)), float(np.min(w))
    return math.nan if math.isnan(hi) or math.isnan(lo) else max(hi, -lo)
