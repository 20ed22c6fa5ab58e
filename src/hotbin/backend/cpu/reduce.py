"""Value ranges on the cpu: the min and max of an array, one pass on every thread.

Floats are compared as sortable integers: the bits of a float read as a signed integer,
the negative ones with all but the sign bit flipped, order as the floats do (-0.0 just
below 0.0), and the NaNs fall outside -inf and inf, so one integer min and max (which
vectorize, where a float min that must keep NaN does not) find both ends and whether a
NaN is there, in one read: NumPy's min and max a piece at a time read each piece twice
(benchmarks/probes/cpu_minmax.py; results/probes-cpu.md, reduce.py).

NumPy's own min and max answer small and strided arrays, and a piece at a time on every
thread byte-swapped ones and dtypes other than float64, float32, int64 and int32. Where
both ends are zeros of both signs NumPy's answer depends on their order; this one's is
-0.0 for the min and 0.0 for the max (the edges of a range found from them compare alike).
"""
from __future__ import annotations

import numpy as np

from ...core.binrule import sort_keys
from .chunks import kernel_dtype, readonly
from .parallel import each, threads_for

__all__ = ["minmax"]

# --- tuning -------------------------------------------------------------------
#: arrays smaller than this take NumPy's min and max (no kernel to compile for them)
KERNEL_FROM = 1 << 16
#: elements per piece where NumPy answers a large array (:func:`_pieces`)
PIECE = 1 << 18

#: the integers the kernel reads each dtype it takes as (a float's sortable key), two
#: signatures, both in the wheel (:mod:`hotbin.precompile`); other dtypes (8/16-bit data,
#: category codes) take NumPy's min and max, compiling nothing
_KEYS = {np.dtype(np.float64): np.dtype(np.int64), np.dtype(np.float32): np.dtype(np.int32),
         np.dtype(np.int64): np.dtype(np.int64), np.dtype(np.int32): np.dtype(np.int32)}


def minmax(a):
    """``(lo, hi)`` as scalars of ``a.dtype``; NaN, NaN when ``a`` holds a NaN (non-empty ``a``)."""
    a = np.asarray(a)
    dt = a.dtype
    kernel_dtype(dt)  # the dtypes the cpu backend takes (else a TypeError)
    if a.size < KERNEL_FROM or not a.flags.c_contiguous:  # NumPy reads strides in place
        return dt.type(a.min()), dt.type(a.max())
    if dt not in _KEYS or not dt.isnative:
        return _pieces(a.reshape(-1))
    from .ends import PER_THREAD, ends  # numba: not imported by small calls

    key = _KEYS[dt]
    flat = readonly(a.reshape(-1).view(key))
    parts = threads_for(flat.size, per_thread=PER_THREAD)
    out = np.empty((parts, 2), key)
    rest = np.iinfo(key).max if dt.kind == "f" else 0
    ends(flat.size, flat, key.type(rest), key.type(8 * key.itemsize - 1), out)  # on ``parts`` threads
    lo, hi = out[:, 0].min(), out[:, 1].max()
    if dt.kind != "f":
        return dt.type(lo), dt.type(hi)
    keys = np.array([lo, hi], key)
    low, high = sort_keys(np.array([-np.inf, np.inf], dt).view(key))
    if keys[0] < low or keys[1] > high:  # a NaN's key lies outside the infinities'
        return dt.type(np.nan), dt.type(np.nan)
    return tuple(dt.type(v) for v in sort_keys(keys).view(dt))


def _pieces(flat):
    """NumPy's min and max a piece at a time on every thread (a piece read once from memory)."""
    pieces = -(-flat.size // PIECE)
    los, his = [None] * pieces, [None] * pieces

    def piece(u):
        c = flat[u * PIECE:(u + 1) * PIECE]
        los[u], his[u] = c.min(), c.max()

    each(flat.size, pieces, piece)
    dt = flat.dtype
    return dt.type(np.array(los, dt).min()), dt.type(np.array(his, dt).max())

