"""Per-cell min and max of weights (the values accumulators "min" and "max") on the device.

The partial is :mod:`hotbin.core.reductions`' ``[extreme, n]`` in float64: row 0 the min (max)
of the cell's non-NaN weights (``red.identity``, +inf (-inf), where it has none), row 1
their number. kernels/extreme.wgsl compares float32 weights as order-preserving u32 keys
with atomicMin / atomicMax, so the result is exact and independent of the order: bitwise
the cpu backend's, which compares the same values in float64. Signed zeros are ordered,
-0.0 below +0.0 (IEEE 754's minimum and maximum): a cell holding both has min -0.0 and
max +0.0.

The weights go to the device as float32, which must hold each of them exactly
(:func:`f32_weights`): float32, float16, bool and 8/16-bit integer weights always do; for
float64 and 32/64-bit integer weights one host pass checks it, and NotImplemented (the cpu
backend) answers when one of them is not a float32.
"""
from __future__ import annotations

import numpy as np

from .device import gpu, pow2_floor, words64
from .counts import points2d, stream
from .tuning import CACHE_SLOTS, MIN_SLOTS

_SIGN = np.uint32(0x80000000)
#: dtypes whose every value is a float32
_EXACT = {np.dtype(t) for t in (np.float32, np.float16, np.bool_, np.int8, np.uint8,
                                np.int16, np.uint16)}


def f32_weights(w) -> np.ndarray | None:
    """Flat contiguous float32 weights with the float64 values of ``w``, or None when one
    weight is not a float32 (NaN weights pass: they are no value anyway)."""
    w = np.asarray(w).reshape(-1)
    dt = w.dtype.newbyteorder("=")
    if dt in _EXACT:
        return np.ascontiguousarray(w, np.float32)
    if dt.kind not in "iuf":
        return None
    v = w.astype(np.float64, copy=False)  # the values the cpu backend compares
    with np.errstate(over="ignore", invalid="ignore"):
        f = v.astype(np.float32)
    return f if np.array_equal(f, v, equal_nan=True) else None


def key_values(keys: np.ndarray) -> np.ndarray:
    """float64 values of extreme.wgsl's order keys (the inverse of its ``order_key``)."""
    bits = np.where(keys >> np.uint32(31), keys ^ _SIGN, ~keys).astype(np.uint32)
    return bits.view(np.float32).astype(np.float64)


def extremes2d(x, y, rx, ry, weights, red, by=None):
    """``(partial, kept)`` of ``red`` (MIN or MAX) over the cells of the flat native ``x``,
    ``y`` (with categories: ``by``, as the protocol's ``histogram2d``), or NotImplemented
    (64-bit coordinates, codes that are not integers, weights that are not float32s)."""
    pts = points2d(x, y, rx, ry, by)
    w = None if pts is NotImplemented else f32_weights(weights)
    if w is None:
        return NotImplemented
    ncell = int(np.prod(pts.shape))
    if pts.axes is None or ncell == 0:
        return red.zeros(pts.shape), 0
    g = gpu()
    is_max = red.acc == "max"
    enc = g.device.create_command_encoder()
    held = []
    keys = g.taken_with(np.full(ncell, 0 if is_max else 0xFFFFFFFF, np.uint32), held)
    counts = g.zeros(8 * (ncell + 1), enc)  # the last counter: points in a cell
    slots = max(MIN_SLOTS, 1 << (ncell - 1).bit_length())
    if 2 * slots + 1 <= g.wg_words:  # keys and counts of every cell, and the kept counter
        entry, words = "extreme_private", 2 * slots
    else:  # a cache of SLOTS cells: keys, counts, tags
        slots = min(CACHE_SLOTS, pow2_floor((g.wg_words - 1) // 3))
        entry, words = "extreme_global", 3 * slots
    try:
        enc = stream("extreme", entry, {"SLOTS": slots, "WORDS": words, "MAX": is_max}, 2, pts.data,
                     pts.kinds, pts.axes, ncell, ry.nbins, pts.cats, {4: counts, 7: keys}, weights=w,
                     encoder=enc, held=held)
        n, k = g.read_many([(counts, 8 * (ncell + 1), None), (keys, 4 * ncell, None)], enc)
    finally:
        g.give(counts, *held)
    n = words64(n)
    ext = key_values(k.view(np.uint32))
    ext[n[:ncell] == 0] = red.identity[0]
    part = np.stack([ext, n[:ncell].astype(np.float64)])
    return part.reshape(red.lead + pts.shape), int(n[ncell])
