"""Cells of points on the device, for the order statistics of :mod:`hotbin.core.order`.

Each axis's bin is :meth:`hotbin.core.binning.BinRule.index` in CuPy: the value in the rule's
compare dtype, ``searchsorted`` of the edges (CuPy's binary search, exact), the closed last
edge and the rule's integer guard. The cells then stay on the device: the order statistics
sort them with the values as uint64 keys (``cupy.sort``: CUB's radix sort, whose cost does not
depend on how many points share a cell, so hot cells do not slow it) and pick on the device.
"""
from __future__ import annotations

import numpy as np

from ...core.binning import BinRule
from .runtime import cupy

__all__ = ["cells2d"]


def _index(v, rule: BinRule):
    """The bin of each value of the device array ``v``, -1 for none (:meth:`BinRule.index`)."""
    cp = cupy()
    if v.dtype == np.bool_:
        v = v.view(cp.uint8)
    c = v.astype(rule.cmp.dtype, copy=False)
    e = cp.asarray(rule.cmp)
    i = cp.searchsorted(e, c, side="right").astype(np.int64) - 1
    i = cp.where(c == e[-1], rule.nbins - 1, i)
    i = cp.minimum(i, rule.nbins - rule.tail - 1)
    ok = (c >= e[0]) & (c <= e[-1])
    if rule.exact is not None:
        ok &= (v >= rule.exact[0]) & (v <= rule.exact[1])
    return cp.where(ok, i, -1)


def cells2d(x, y, rx: BinRule, ry: BinRule):
    """The cell ``ix * ny + iy`` of each point (int64 on the device), -1 for none."""
    cp = cupy()
    x, y = cp.asarray(x).reshape(-1), cp.asarray(y).reshape(-1)
    ix, iy = _index(x, rx), _index(y, ry)
    return cp.where((ix < 0) | (iy < 0), -1, ix * ry.nbins + iy)
