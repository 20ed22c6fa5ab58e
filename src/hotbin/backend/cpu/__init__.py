"""The cpu backend: numba kernels, one private histogram per thread, merged at the end.

The protocol surface of :mod:`hotbin.backend`; the work is in the modules:

=============  ==================================================================
``hist``       1-D/2-D counts and sums, per-row counts, bincount, 8/16-bit tables
``rule``       the bin rule fused into kernels (no index array)
``reduce``     minmax and max_abs
``scan``       prefix sums in the shared block order (:mod:`hotbin.scan_order`)
``luma``       the fused luma histogram of RGB(A) images
``chunks``     contiguous native-endian pieces of any input, bounded memory
``parallel``   serial twins of threaded kernels, the parallel-region lock, parts
=============  ==================================================================
"""
from __future__ import annotations

import os

import numba

from .hist import bincount, histogram, histogram2d, histogram_rows
from .luma import luma_histogram
from .parallel import MIN_PER_THREAD
from .reduce import max_abs, minmax
from .scan import cumsum

__all__ = ["NAME", "INSTALL", "DEVICE", "CAPABILITIES", "claims", "available", "require", "devices",
           "minmax", "max_abs", "histogram", "histogram_rows", "histogram2d", "bincount", "cumsum",
           "luma_histogram", "MIN_PER_THREAD"]

NAME = "cpu"
INSTALL = "pip install hotbin"
DEVICE = "host"
CAPABILITIES = frozenset({"histogram_rows", "luma"})


def available() -> bool:
    return True


def require() -> None:
    return None


def devices() -> list[str]:
    return [f"{os.cpu_count()} CPU cores, {numba.get_num_threads()} numba threads"]


def claims(a) -> bool:
    return False  # the default for whatever no other backend claims
