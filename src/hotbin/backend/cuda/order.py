"""Cells of points on the device, for the order statistics of :mod:`hotbin.core.order`.

Each axis's bin is :meth:`hotbin.core.binning.BinRule.index` on the device (CuPy's
``searchsorted`` of the edges in the rule's compare dtype: exact). The order statistics sort
the cells with the values as uint64 keys (``cupy.sort``: CUB's radix sort, whose cost does not
depend on how many points share a cell, so hot cells do not slow it) and pick on the device.
For float32 values the words to sort come from one kernel (kernels/order.cu: both axes' bins
by the same steps, the category, the value's key), not from a dozen array operations each
reading and writing every point.
"""
from __future__ import annotations

import numpy as np

from ...core.binning import BinRule
from .runtime import cupy, device_info, kernel, launch

__all__ = ["cells2d", "sorted_pairs", "ci_name_expressions"]

#: the kernels' point types and compare types (float32, float64)
_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
#: threads a block of the words kernel, and blocks per SM at most (a grid-stride loop)
BLOCK, BLOCKS_PER_SM = 256, 8
#: no word: a point in no cell or without a value (sorted last, then cut off)
_NONE = np.uint64(0xFFFFFFFFFFFFFFFF)


def cells2d(x, y, rx: BinRule, ry: BinRule):
    """The cell ``ix * ny + iy`` of each point (int64 on the device), -1 for none."""
    cp = cupy()
    x, y = cp.asarray(x).reshape(-1), cp.asarray(y).reshape(-1)
    ix, iy = rx.index(x), ry.index(y)
    return cp.where((ix < 0) | (iy < 0), -1, ix * ry.nbins + iy)


def _name(x, y, rx, ry) -> str | None:
    types = [_TYPES.get(np.dtype(d)) for d in (x.dtype, y.dtype, rx.cmp.dtype, ry.cmp.dtype)]
    return None if None in types else f"packed_words<{', '.join(types)}>"


def sorted_pairs(x, y, rx: BinRule, ry: BinRule, weights, by=None):
    """``(sorted packed words, points in a cell)`` of float32 ``weights`` on the device (the
    partial of :func:`hotbin.core.order.sort_words`, bit for bit), or NotImplemented: other
    weights or coordinates, integer rules kept exact (:attr:`BinRule.exact`), cells beyond 32
    bits."""
    cp = cupy()
    x, y, w = (cp.asarray(a).reshape(-1) for a in (x, y, weights))
    name = _name(x, y, rx, ry)
    ngrid = rx.nbins * ry.nbins
    ncat = 0 if by is None else int(by[1])
    if (name is None or w.dtype != np.float32 or rx.exact is not None or ry.exact is not None
            or ngrid * max(ncat, 1) > 1 << 32):
        return NotImplemented
    x, y, w = (cp.ascontiguousarray(a) for a in (x, y, w))
    code = cp.ascontiguousarray(cp.asarray(by[0]).reshape(-1), dtype=np.int64) if by is not None \
        else cp.empty(1, np.int64)
    ex, ey = (cp.asarray(np.ascontiguousarray(r.cmp)) for r in (rx, ry))
    n = x.size
    words = cp.empty(n, np.uint64)
    kept = cp.zeros(1, np.uint64)
    if n:
        sms = device_info(words.device.id)["sms"]
        grid = max(1, min(-(-n // BLOCK), sms * BLOCKS_PER_SM))
        launch(kernel("order.cu", name), grid, BLOCK,
               (x, y, w, code, ex, np.int32(ex.size), np.int32(rx.nbins), np.int32(rx.tail),
                ey, np.int32(ey.size), np.int32(ry.nbins), np.int32(ry.tail),
                np.int64(ngrid), np.int64(ncat), np.int64(n), words, kept))
    words.sort()  # no value: all ones, last
    m = int(cp.searchsorted(words, cp.asarray([_NONE]))[0])
    return words[:m], int(kept.get()[0])


def ci_name_expressions() -> dict:
    """The words kernel's instantiations (.ci/compile_kernels.py)."""
    t = list(_TYPES.values())
    return {"order.cu": [f"packed_words<{a}, {b}, {c}, {d}>" for a in t for b in t for c in t for d in t]}
