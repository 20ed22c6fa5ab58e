"""The wgpu backend: WGSL compute shaders through wgpu-py, on any GPU (Vulkan, Metal, D3D12).

Inputs are NumPy arrays (copied to the device a binding at a time), results are NumPy.
Kernels live in ``hotbin/kernels/*.wgsl``, are specialized with WGSL ``override``
constants and compiled once per device (:mod:`.device`). Modules: :mod:`.device` (adapter,
pipelines, dispatches), :mod:`.memory` (the buffer pool, uploads, read-backs), :mod:`.tuning`
(launch and transfer sizes), :mod:`.keys` (a rule as u32 key
thresholds), :mod:`.counts` (1-D and 2-D counting, categories), :mod:`.extreme` (per-cell
min and max), :mod:`.fixed` (fixed-point sums), :mod:`.scan`, :mod:`.luma`.

What runs on the device, and what is exact
------------------------------------------
* ``histogram`` counts (``red.acc`` "count") of 8/16/32-bit integers, float32, float16
  and bool, for any edges (:mod:`.counts`); ``histogram2d`` counts of the same dtypes,
  with categories (``by=``: integer codes of any width) or without.
* ``histogram2d`` min and max (the ``[min, n]`` / ``[max, n]`` partials of
  :mod:`hotbin.core.reductions`, with or without categories) of weights that are all float32
  values: float32, float16, bool, 8/16-bit integers, and float64 or 32/64-bit integers
  once a host pass has checked it (:mod:`.extreme`). Exact: order keys under u32 atomics.
* sums of such weights in fixed point (:mod:`.fixed`): ``histogram`` and ``histogram2d``
  with the accumulators ``fixed`` (``deterministic=True``: the words, bitwise the cpu
  backend's), ``f64`` (weighted histograms) and ``mean`` (heatmap mean, sum, and the first
  pass of std / var), the last two as the words' float64 value.
* ``bincount`` without weights (int64/uint64 input narrowed to 32 bits: the caller has
  checked ``0 <= x < length``).
* ``cumsum`` of integers (64-bit two's-complement sums: exact, wrapping as NumPy) and
  float32 (the block order every backend shares: bitwise the cpu backend's result).
* ``luma_histogram`` of uint8 RGB/RGBA batches (exact integer Rec. 709 levels).

Every other input is answered ``NotImplemented`` and the registry runs the cpu backend's
primitive on it: float64 and 64-bit integer data (WGSL has no f64, and the data could not
be compared exactly in 32 bits), integer sums (``i64``), the centred accumulators of std /
var's second pass (``(w - center)**2`` is float64 arithmetic), weights that are not all
float32 values (and infinite ones for sums), results larger than one storage binding,
float scans whose blocks do not fit one, images of 2**31 pixels, and ``cells2d``: the order
statistics of a heatmap (median, quantile, first, last) run on the cpu backend.
``minmax`` and ``max_abs`` are NumPy reductions on the host (the data are there already), on
the device's copy threads when large.

Counts are exact and 64-bit: workgroups count in u32 and add their totals into 64-bit
global counters through the adapter's 64-bit atomics where it has them
(``shader-int64-atomic-all-ops``: Vulkan on NVIDIA, AMD, lavapipe), otherwise into split
counters, two u32 words whose high word takes the carry of whichever atomic add wrapped
the low word. Both leave the same little-endian u64 per counter
(``kernels/out_atomic64.wgsl``, ``out_split.wgsl``).
"""
from __future__ import annotations

import numpy as np

from ...core import reductions, scan_order
from ...core.binning import BinRule, index_rule
from . import counts, device, extreme, fixed, keys, scan
from .device import ENV_ADAPTER, INSTALL
from .luma import luma_histogram
from .memory import extremes

__all__ = ["NAME", "INSTALL", "ENV_ADAPTER", "DEVICE", "CAPABILITIES", "claims", "available",
           "require", "devices", "minmax", "max_abs", "histogram", "histogram2d", "cells2d", "bincount",
           "cumsum", "luma_histogram"]

NAME = "wgpu"
DEVICE = "host"
CAPABILITIES = frozenset({"luma"})
#: the accumulators histogram2d runs on the device
_DEVICE_2D = ("count", "min", "max") + fixed.ACCS


def claims(a) -> bool:
    return False  # chosen by name only: backend="wgpu" or $HOTBIN_BACKEND


def available() -> bool:
    try:
        device.gpu()
        return True
    except Exception:
        return False


def require() -> None:
    device.import_wgpu()
    device.gpu()


def devices() -> list[str]:
    return [device.gpu().name]


def minmax(a):
    """``(a.min(), a.max())`` by NumPy (NaN when ``a`` holds a NaN): vectorized host passes
    over data that is on the host anyway (split over the device's copy threads when large,
    :func:`.memory.extremes`), and no numba compilation."""
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    if a.size and a.flags.c_contiguous:
        lo, hi = extremes(a.reshape(-1), device.gpu().copy_threads)
        if lo != 0 and hi != 0:  # a zero's sign is whichever NumPy's one pass met first
            return lo, hi
    return a.dtype.type(a.min()), a.dtype.type(a.max())


def max_abs(w) -> float:
    return fixed.max_abs(w)


def histogram(a, rule: BinRule, weights=None, red=reductions.COUNT):
    """int64 counts, or fixed-point sums (:mod:`.fixed`), on the device; NotImplemented for
    other reductions, 64-bit data and rules the kernels cannot hold."""
    words = 1 if red.acc == "count" else 2  # 64-bit words a bin: a count; two sums
    if (red.acc not in ("count",) + fixed.ACCS or not keys.rule_ok(rule)
            or not device.gpu().fits(words * rule.nbins)):
        return NotImplemented
    a = device.native(a).reshape(-1)
    if red.acc != "count":
        return fixed.sums1d(a, rule, weights, red)
    return counts.counts(a, rule)


def histogram2d(x, y, rx: BinRule, ry: BinRule, weights=None, red=reductions.COUNT, by=None):
    """``(partial, kept)`` on the device: int64 counts (:mod:`.counts`), the ``[min, n]`` /
    ``[max, n]`` partials of float32-exact weights (:mod:`.extreme`), or their fixed-point
    sums (:mod:`.fixed`), with categories ``by=(codes, ncat)`` or without. NotImplemented
    for the other accumulators, centred ones, 64-bit coordinates and rules the kernels
    cannot hold."""
    g = device.gpu()
    ncell = rx.nbins * ry.nbins * (1 if by is None else int(by[1]) + 1)
    words = 2 if red.acc in fixed.ACCS else 1  # 64-bit words a cell: sums take two
    if (red.acc not in _DEVICE_2D or red.center is not None
            or not (keys.rule_ok(rx) and keys.rule_ok(ry))
            or not (g.fits(words * ncell + 1) and g.fits(rx.nbins + ry.nbins))):
        return NotImplemented
    x, y = device.native(x).reshape(-1), device.native(y).reshape(-1)
    if red.acc == "count":
        return counts.counts2d(x, y, rx, ry, by)
    if red.acc in fixed.ACCS:
        return fixed.sums2d(x, y, rx, ry, weights, red, by)
    return extreme.extremes2d(x, y, rx, ry, weights, red, by)


def cells2d(x, y, rx: BinRule, ry: BinRule):
    """NotImplemented: the order statistics (median, quantile, first, last) are handed to the
    cpu backend, which bins each point (:func:`hotbin.backend.call`); their sort and picks run
    on the host, where wgpu's inputs are. The kernels count cells, they do not list them."""
    return NotImplemented


def bincount(x, length, weights=None):
    """int64 counts of ``0 <= x < length`` on the device; NotImplemented with weights."""
    if weights is not None or length == 0 or not device.gpu().fits(length):
        return NotImplemented
    x = np.asarray(x)
    if x.dtype.itemsize == 8:
        x = x.astype(np.int32)  # the caller checked 0 <= x < length
    return histogram(x, index_rule(length))


def cumsum(a, axis, od, exclusive=False):
    """Prefix sums as :mod:`hotbin.core.scan_order` defines them, bit for bit (:mod:`.scan`):
    integers into integers, and float32. NotImplemented for the rest (float64, bool,
    float16, complex, integers from floats)."""
    a = np.asarray(a)
    od = np.dtype(od)
    if a.size and scan_order.scan_kind(od) == "int" and a.dtype.kind in "biu":
        return scan.int_cumsum(a, axis, od, exclusive)
    if a.size and od == np.float32 and a.dtype.kind in "biuf":
        return scan.float_cumsum(a, axis, exclusive)
    return NotImplemented
