"""Value ranges on the cpu: per-part min, max and NaN flags, reduced on the host."""
from __future__ import annotations

import numpy as np
from numba import prange

from ... import fixedpoint
from .chunks import chunks, kernel_dtype
from .parallel import Kernel, nparts

__all__ = ["minmax", "max_abs"]


@Kernel
def _minmax(a, parts):
    """Per-part (min, max, any-NaN) of a contiguous array."""
    n = a.size
    step = (n + parts - 1) // parts
    los = np.empty(parts, a.dtype)
    his = np.empty(parts, a.dtype)
    nan = np.zeros(parts, np.bool_)
    for p in prange(parts):
        start = p * step
        stop = min(n, start + step)
        lo = a[start]
        hi = a[start]
        for j in range(start, stop):
            v = a[j]
            if v != v:
                nan[p] = True
            if v < lo:
                lo = v
            if v > hi:
                hi = v
        los[p] = lo
        his[p] = hi
    return los, his, nan


def minmax(a):
    """``(lo, hi)`` as scalars of ``a.dtype``; NaN, NaN when ``a`` holds a NaN."""
    a = np.asarray(a)
    kd = kernel_dtype(a.dtype)
    lo = hi = None
    nan = False
    for (c,) in chunks([a], [kd]):
        if c.size == 0:
            continue
        los, his, nans = _minmax(c.size, c, nparts(c.size, 1))
        nan |= bool(nans.any())
        clo, chi = los.min(), his.max()
        lo = clo if lo is None else min(lo, clo)
        hi = chi if hi is None else max(hi, chi)
    if nan:
        return a.dtype.type(np.nan), a.dtype.type(np.nan)
    return a.dtype.type(lo), a.dtype.type(hi)


def max_abs(w) -> float:
    """``max |w|`` (0.0 when empty, NaN when a weight is NaN)."""
    if np.size(w) == 0:
        return 0.0
    lo, hi = minmax(w)
    return fixedpoint.max_abs(np.array([lo, hi]))
