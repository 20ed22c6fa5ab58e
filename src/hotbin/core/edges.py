"""NumPy's edges of a range found in the data, by the steps of NumPy's ``linspace``.

``numpy.histogram_bin_edges`` checks its arguments generically; for the edges of ``n`` bins
over the data's extent those checks cost a small call more than its count, so the edges are
computed here by ``linspace``'s own arithmetic (the same values, bit for bit) wherever that
arithmetic provably gives NumPy's answer, and asked of NumPy everywhere else.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["data_edges"]

#: ends below this magnitude: no sum or difference of them overflows float32 (nor float64)
_NO_OVERFLOW = 1e38


def data_edges(dt, n: int, lo, hi) -> np.ndarray:
    """NumPy's edges of ``n`` bins over the data's finite extent ``lo, hi`` (scalars of the
    data's dtype ``dt``), bit for bit. Where NumPy's ``linspace`` computes them in float64
    (float64 and integer data) or in float32 (float32 data), they are computed here by its
    steps, ``i * step + lo`` with the last edge ``hi``, without ``histogram_bin_edges``'s
    generic checks (they cost a small call more than its count): when no step can overflow
    and the step is so far above the ends' ulp that the edges rise strictly (NumPy's "too
    many bins" check passes). Every other case asks NumPy."""
    if dt.kind in "iu" or dt == np.float64:
        ft, ulp, first, last = np.float64, 1.0, float(lo), float(hi)  # linspace's float64 ends
    elif type(lo) is np.float32 and type(hi) is np.float32:
        ft, ulp, first, last = np.float32, 2.0 ** 29, lo, hi  # float32 arithmetic throughout
    else:
        return np.histogram_bin_edges(np.empty(0, dt), n, (lo, hi))
    if lo == hi:  # NumPy widens an empty extent by half a unit
        first, last = first - 0.5, last + 0.5
    top = max(-float(first), float(last))
    if top < _NO_OVERFLOW:
        step = (last - first) / n
        # each edge lies within 4 ulps (of the ends' magnitude) of i * step + first: a step
        # above 8 such ulps keeps them rising
        if float(step) > 64 * max(ulp * math.ulp(top), 2.0 ** -149):
            edges = np.arange(n + 1, dtype=ft)
            edges *= step
            edges += first
            edges[-1] = last
            return edges
    return np.histogram_bin_edges(np.empty(0, dt), n, (lo, hi))

