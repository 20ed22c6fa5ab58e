"""The cpu backend: numba kernels, one private histogram per thread, merged at the end.

The protocol surface of :mod:`hotbin.backend`; the work is in the modules:

=============  ==================================================================
``hist``       1-D/2-D counts and sums, per-row counts, D >= 3 bins (bin_index)
``count1d``    1-D counts and sums into interleaved copies, bincount, 8/16-bit tables
``copies``     how many interleaved copies of the bins, and their sum in order
``prefetch``   a software prefetch (the 1-D counts fetch their values ahead)
``scatter``    the per-thread kernels behind hist: cells a block at a time, hot cells apart
``wraps``      count partials in uint8, their wraps past 255 recorded
``compact``    a hot block's other cells packed (AVX-512 where there is one)
``values``     the [value, n] accumulators of mean, min and max, and their merge
``banded``     2-D values on grids beyond the caches: points sorted by band of cells
``rule``       the bin rule fused into kernels (no index array)
``reduce``     minmax, floats as sortable integer keys (the kernel: ``ends``)
``scan``       prefix sums in the shared block order (:mod:`hotbin.core.scan_order`)
``luma``       the fused luma histogram of RGB(A) images
``order``      each point's cell, and float32 (cell, value) words sorted (median, quantile)
``chunks``     contiguous native-endian pieces of any input, bounded memory
``parallel``   the thread pool that runs kernels, thread count, partials per job
``kept``       work buffers and partials kept between calls (no page faults per call)
``small``      inputs up to ``small.SMALL`` elements through NumPy (no numba import)
=============  ==================================================================
"""
from __future__ import annotations

import os

import numpy as np

from ...core import fixedpoint
from ...core.reductions import COUNT
from . import reduce, small
from .parallel import MIN_PER_THREAD, threads
from .strategy import in_kernels

__all__ = ["NAME", "INSTALL", "DEVICE", "CAPABILITIES", "claims", "available", "require", "devices",
           "minmax", "max_abs", "histogram", "histogram2d", "histogram_rows", "bin_index", "cells2d", "sorted_pairs", "bincount",
           "cumsum", "luma_histogram", "MIN_PER_THREAD"]

NAME = "cpu"
INSTALL = "pip install hotbin"
DEVICE = "host"
CAPABILITIES = frozenset({"histogram_rows", "luma"})


def available() -> bool:
    return True


def require() -> None:
    return None


def devices() -> list[str]:
    return [f"{os.cpu_count()} CPU cores, {threads()} threads"]


def claims(a) -> bool:
    return False  # the default for whatever no other backend claims


# Small inputs take NumPy (module ``small``); the numba kernel modules are imported
# on the first larger call, so a small first call never imports numba.

def minmax(a):
    return reduce.minmax(a)


def max_abs(w) -> float:
    if w.size == 0:
        return 0.0
    return fixedpoint.max_abs(np.array(minmax(w)))


def histogram(a, rule, weights=None, red=COUNT):
    if small.takes(a.size, red):
        return small.histogram(a, rule, weights, red)
    from .partials import histogram as kernel
    return kernel(a, rule, weights, red)


def histogram2d(x, y, rx, ry, weights=None, red=COUNT, by=None):
    if small.takes(x.size, red):
        return small.histogram2d(x, y, rx, ry, weights, red, by)
    from .partials import histogram2d as kernel
    return kernel(x, y, rx, ry, weights, red, by)


def bin_index(a, rule):
    """The bin of each value of ``a`` (-1: none), as :meth:`hotbin.core.binning.BinRule.index`
    (which answers for small inputs, and for rules whose kernels' range test counts need
    :func:`~hotbin.core.binning.exact_counts`)."""
    if a.size <= small.SMALL or not in_kernels(rule):
        return rule.index(a)
    from .partials import bin_index as kernel
    return kernel(a, rule)


def cells2d(x, y, rx, ry):
    """The cell ``ix * ny + iy`` of each point (int64), -1 for none: the fused 2-D rule a
    piece per thread (:mod:`.order`), or each axis's :func:`bin_index` combined (small
    inputs, rules the kernels leave to :meth:`~hotbin.core.binning.BinRule.index`)."""
    if x.size > small.SMALL and in_kernels(rx) and in_kernels(ry):
        from .order import cells2d as kernel  # numba: imported by larger calls only
        return kernel(x, y, rx, ry)
    ix, iy = bin_index(x, rx), bin_index(y, ry)
    c = ix * ry.nbins + iy
    c[(ix < 0) | (iy < 0)] = -1
    return c


def sorted_pairs(x, y, rx, ry, weights, by=None):
    """The order statistics' sorted partial of float32 weights and the points in a cell, or
    NotImplemented (:func:`hotbin.backend.cpu.order.sorted_pairs`)."""
    if x.size <= small.SMALL:
        return NotImplemented  # NumPy's path: no numba import for a small call
    from .order import sorted_pairs as kernel
    return kernel(x, y, rx, ry, weights, by)


def histogram_rows(a, rule):
    from .partials import histogram_rows as kernel
    return kernel(a, rule)


def bincount(x, length, weights=None):
    if x.size <= small.SMALL:
        return small.bincount(x, length, weights)
    from .count1d import bincount as kernel
    return kernel(x, length, weights)


def cumsum(a, axis, od, exclusive=False):
    if a.size <= small.SMALL:
        return small.cumsum(a, axis, od, exclusive)
    from .scan import cumsum as kernel
    return kernel(a, axis, od, exclusive)


def luma_histogram(img):
    from .luma import luma_histogram as kernel
    return kernel(img)
