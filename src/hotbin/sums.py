"""The one runner of weighted sums, shared by every front door.

:func:`weighted` runs a backend's weighted count ``compute(weights, scale)`` for
every front door (histogram, histogram2d, histogramdd, heatmap): float weights
are summed in fixed point when ``deterministic`` (:mod:`hotbin.fixedpoint`: the
scale, then the one combine rule), complex weights as two real runs, and integer
weights in int64 that never wraps (cut into pieces when their sums could).
"""
from __future__ import annotations

import numpy as np

from . import backend as _backends
from . import fixedpoint

__all__ = ["weighted", "fits_int64"]


def _scale(be, w, deterministic):
    """Fixed-point exponent for deterministic float sums; None when sums are exact already."""
    if not deterministic or w is None or w.dtype.kind != "f":
        return None
    return fixedpoint.scale_for(be.max_abs(w), int(w.size))


def weighted(compute, be, w, deterministic):
    """Run ``compute(weights, scale)``; complex weights are two real runs.

    The one place that runs weighted sums (histogram, histogram2d, histogramdd,
    heatmap). With a fixed-point scale the backend returns
    integer words, turned into float64 here by the one combine rule. Integer
    weights are summed in int64 and never wrap (:func:`_exact_int_sums`).
    """
    if w is not None and w.dtype.kind == "c":
        return (weighted(compute, be, w.real, deterministic)
                + 1j * weighted(compute, be, w.imag, deterministic))
    if w is not None and w.dtype.kind in "iu" and not _int_sums_fit(be, w):
        return _exact_int_sums(compute, w)
    s = _scale(be, w, deterministic)
    out = compute(w, s)
    return out if s is None else fixedpoint.combine(_backends.to_host(out), s)


_I64 = 1 << 63


def _int_sums_fit(be, w) -> bool:
    """Whether int64 sums of the integer weights ``w`` cannot wrap: ``max|w| * n < 2**63``.

    Decided from the dtype alone when it can be (int32 weights and fewer than 2**31
    of them: no pass over the weights), else from their exact minimum and maximum.
    """
    n = int(w.size)
    info = np.iinfo(w.dtype)
    if max(-int(info.min), int(info.max)) * n < _I64:
        return True
    lo, hi = be.minmax(w)
    return max(-int(lo), int(hi)) * n < _I64


def _exact_int_sums(compute, w):
    """Exact int64 sums of integer weights whose int64 partial sums could wrap.

    Each weight is cut into ``k``-bit pieces (``w = sum_j p_j * 2**(k*j)``, the top
    piece signed), small enough that ``n`` of them sum in int64 without wrapping;
    each piece is summed by ``compute`` (one int64 array of ``n`` pieces at a time)
    and the pieces' sums are combined in Python integers.

    Raises
    ------
    OverflowError
        Naming the bin whose exact sum does not fit in int64 (the result dtype
        of integer weights, uint64 weights included).
    """
    n = int(w.size)
    k = min(32, 62 - n.bit_length())  # n pieces below 2**k sum below 2**62
    npieces = -(-64 // k)
    total = 0
    for j in range(npieces):
        p = w >> (k * j) if j else w & ((1 << k) - 1)
        if 0 < j < npieces - 1:
            p &= (1 << k) - 1
        p = p.view(np.int64) if p.dtype == np.uint64 else p.astype(np.int64, copy=False)
        part = _backends.to_host(compute(p, None))
        total = total + part.astype(object) * (1 << (k * j))
    return fits_int64(total)


def fits_int64(total: np.ndarray) -> np.ndarray:
    """Exact integer sums (an object array of Python ints) as int64, or an OverflowError
    naming the first bin whose sum does not fit."""
    bad = np.flatnonzero((total < -_I64) | (total >= _I64))
    if bad.size:
        b = np.unravel_index(bad[0], total.shape)
        b = b[0] if len(b) == 1 else tuple(int(i) for i in b)
        raise OverflowError(f"weights: the sum of bin {b} is {total.flat[bad[0]]}, which does not "
                            "fit in int64 (the sums of integer weights)")
    return total.astype(np.int64)
