"""Cells of points on the device, for the order statistics of :mod:`hotbin.core.order`.

Each axis's bin is :meth:`hotbin.core.binning.BinRule.index` on the device (CuPy's
``searchsorted`` of the edges in the rule's compare dtype: exact). The cells then stay on the
device: the order statistics sort them with the values as uint64 keys (``cupy.sort``: CUB's radix sort, whose cost does not
depend on how many points share a cell, so hot cells do not slow it) and pick on the device.
"""
from __future__ import annotations

from ...core.binning import BinRule
from .runtime import cupy

__all__ = ["cells2d"]


def cells2d(x, y, rx: BinRule, ry: BinRule):
    """The cell ``ix * ny + iy`` of each point (int64 on the device), -1 for none."""
    cp = cupy()
    x, y = cp.asarray(x).reshape(-1), cp.asarray(y).reshape(-1)
    ix, iy = rx.index(x), ry.index(y)
    return cp.where((ix < 0) | (iy < 0), -1, ix * ry.nbins + iy)
