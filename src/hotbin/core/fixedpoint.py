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
float64; a sum beyond the float64 range is ``inf``), with
``s = 94 - bit_length(n) - e`` and ``max|w| < 2**e``. For one million weights of
magnitude below 1 that is about ``1e6 * 2**-75``.

The whole float64 range: ``s`` runs from about -994 (weights near ``1.8e308``)
to 1167 (subnormal weights), so the factor ``2**(s-32)`` is not always a
float64. Kernels multiply by the two powers of two of :func:`factors` instead,
``t = (w * f1) * f2``: every product is exact or, where it rounds, too small to
change the words, so all backends compute the same words as :func:`split`.

Kernels implement :func:`split` in float64 (two power-of-two multiplies, floor,
subtract, scale by ``2**32`` and round-half-even are exact or correctly rounded
everywhere) and sum the two words; :func:`combine` turns the sums into float64.
"""
from __future__ import annotations

import math

import numpy as np

from .arrays import xp

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


def factors(s: int) -> tuple[float, float]:
    """Two powers of two ``(f1, f2)``, normal float64s, with ``f1 * f2 == 2**(s - SPLIT)``.

    ``t = (w * f1) * f2`` is the correctly rounded ``w * 2**(s - SPLIT)`` whenever
    that matters: scaling up (``s > SPLIT``) both products are exact (``|t|`` is
    below ``2**62``); scaling down, ``f2`` is 1 unless ``2**(s - SPLIT)`` is
    subnormal, and then an inexact first product implies ``|t| < 2**-1000``,
    which quantizes to zero either way.
    """
    k = int(s) - SPLIT
    if k > 1023:
        a = 1023
    elif k < -1022:
        a = k + 64
    else:
        a = k
    return math.ldexp(1.0, a), math.ldexp(1.0, k - a)


def split(w: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference quantization: ``(hi, lo)`` with ``hi * 2**32 + lo == round(w * 2**s)``."""
    f1, f2 = factors(s)
    t = (np.asarray(w, np.float64) * f1) * f2
    hi = np.floor(t)
    lo = np.rint(np.ldexp(t - hi, SPLIT))
    return hi.astype(np.int64), lo.astype(np.int64)


def fold(words):
    """Normalize words ``[hi, lo, ...]`` (axis 0) so that ``0 <= lo < 2**32``; same value
    (NumPy, or CuPy for device words)."""
    x = xp(words)
    words = x.asarray(words, np.int64)
    hi = words[0] + (words[1] >> SPLIT)
    return x.stack([hi, words[1] & ((1 << SPLIT) - 1)])


def merge(partials: np.ndarray) -> np.ndarray:
    """Exact sum of partial words stacked on axis 0 (shape ``(k, 2, ...)``) -> ``(2, ...)``.

    This is the one combine rule for fixed-point partials: threads, GPU blocks and
    Dask chunks all produce words, and any grouping of merges gives the same words.
    Each partial's low word must be below ``LO_CHUNK * 2**32`` (fold it first otherwise).
    """
    partials = np.asarray(partials, np.int64)
    folded = np.stack([fold(p) for p in partials]) if partials.shape[0] else partials
    return fold(folded.sum(axis=0))


def combine(words, s: int):
    """float64 value of words ``hi * 2**32 + lo`` times ``2**-s`` (a fixed function of them).

    ``fl(hi) * 2**32 + lo`` is rounded once, then scaled by ``2**-s`` (exact unless
    the value leaves the normal range: ``inf`` beyond it, subnormal below it), so
    no scale, however extreme, makes an intermediate overflow. Device words are
    combined on the device, with the same roundings (IEEE 754 conversions, one add,
    ``ldexp``), so the bits are the host's (tests/test_cuda.py).
    """
    x = xp(words)
    hi, lo = fold(words)
    with np.errstate(over="ignore"):
        return x.ldexp(x.ldexp(hi.astype(np.float64), SPLIT) + lo.astype(np.float64), -int(s))


def square_shift(max_abs: float) -> int:
    """``c`` with ``max_abs < 2**c``: squares are quantized as ``(w * 2**-c)**2``, below 1.

    Those never overflow (``w**2`` does from ``|w| = 2**512``), and equal
    ``w**2 * 2**(-2c)`` exactly wherever ``w**2`` is a normal float64; their words at
    scale ``s`` are the squares' words at scale ``s - 2c`` (see ``hotbin.hist``).
    """
    return math.frexp(max_abs)[1] if max_abs and math.isfinite(max_abs) else 0


def fits(s: int, max_abs: float, n: int) -> bool:
    """Whether ``n`` weights with ``max|w| = max_abs`` sum at scale ``s`` without overflow."""
    return n <= 0 or max_abs == 0 or scale_for(max_abs, n) >= s


def max_abs(w) -> float:
    """``max |w|`` as a float (0 for empty input); NaN if any weight is NaN."""
    w = np.asarray(w)
    if w.size == 0:
        return 0.0
    hi, lo = float(np.max(w)), float(np.min(w))
    return math.nan if math.isnan(hi) or math.isnan(lo) else max(hi, -lo)


def _two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    """``(hi, lo)``, ``hi + lo == a``, each of at most 26 significant bits (Veltkamp)."""
    t = a * 134217729.0  # 2**27 + 1
    hi = t - (t - a)
    return hi, a - hi


def residual(words, s: int, n, c):
    """float64 ``words * 2**-s - n * c`` (the exact sum of the words less ``n`` times ``c``)
    computed so that the nearly equal terms cancel exactly: the words and the product
    ``n * c`` as sums of float64s (Dekker's product), added with compensation. Accurate to
    a few ulp of the result plus ``2**-104`` of ``|n * c|``; ``n`` below ``2**53``,
    ``|n * c|`` below ``2**1000`` (the caller scales ``c``)."""
    x = xp(words)
    hi, lo = fold(words)
    top, mid = hi >> 31, hi & ((1 << 31) - 1)  # hi = top * 2**31 + mid, each exact in float64
    terms = [x.ldexp(top.astype(np.float64), 31 + SPLIT - int(s)),
             x.ldexp(mid.astype(np.float64), SPLIT - int(s)), x.ldexp(lo.astype(np.float64), -int(s))]
    n = x.asarray(n, np.float64)
    p = n * c
    nh, nl = _split(n)
    ch, cl = _split(c)
    e = ((nh * ch - p) + nh * cl + nl * ch) + nl * cl  # n * c == p + e
    total, comp = terms[0], x.zeros_like(p)
    for t in terms[1:] + [-p, -e]:
        total, err = _two_sum(total, t)
        comp = comp + err
    return total + comp
