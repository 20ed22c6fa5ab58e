"""Prefix sums on the cpu: numba lane kernels in the order of :mod:`hotbin.core.scan_order`.

A scan along an axis is a set of lanes ``[o, :, k]`` of an ``(outer, m, inner)``
view (:func:`hotbin.core.scan_order.scan_layout`); lanes are scanned block by block,
blocks in parallel, each from its offset. ``inner == 1`` lanes are rows; otherwise
all ``k`` of a lane are walked at once, in memory order.
"""
from __future__ import annotations

import numpy as np

from ...core import scan_order
from ...core._jit import njit
from ...core.scan_order import block_offsets, scan_kind, scan_layout, scan_numpy, scan_zero
from .chunks import readonly
from .parallel import Kernel, threads_for

__all__ = ["cumsum"]


@njit(nogil=True, cache=True)
def _sum(v, zero):
    """Sum of a slice in the output dtype: a function of its own, so integer sums vectorize
    (benchmarks/cpu_suite.py's cumsum rows)."""
    s = zero
    for j in range(v.size):
        s += v[j]
    return s


@Kernel
def _row_sums(a, zero, block, sums, t, nt):
    """``sums[o, b]``: block ``b`` of row ``a[o]`` added left to right from ``zero``; thread
    ``t`` takes the ``t``-th run of consecutive blocks (as :func:`_row_scan`)."""
    m = a.shape[1]
    nblk = sums.shape[1]
    per = -(-sums.size // nt)
    for u in range(t * per, min(sums.size, (t + 1) * per)):
        o, b = u // nblk, u % nblk
        sums[o, b] = _sum(a[o, b * block:min(m, (b + 1) * block)], zero)


@Kernel
def _row_scan(a, offsets, block, exclusive, out, t, nt):
    """Rows of ``a`` scanned block by block from ``offsets[o, b]`` (exclusive: shifted by one).
    Thread ``t`` takes the ``t``-th run of consecutive blocks: every other block to each of two
    threads read and wrote memory slower than one thread did (results/probes-cpu.md, scan.py),
    in the same order in each block, so the same bits.

    ``out`` may be ``a`` itself only when not ``exclusive`` (a block writes past its end)."""
    m = a.shape[1]
    nblk = offsets.shape[1]
    per = -(-offsets.size // nt)
    for u in range(t * per, min(offsets.size, (t + 1) * per)):
        o, b = u // nblk, u % nblk
        s = offsets[o, b]
        hi = min(m, (b + 1) * block)
        if exclusive:
            if b == 0:
                out[o, 0] = 0
            for i in range(b * block, hi):
                s += a[o, i]
                if i + 1 < m:
                    out[o, i + 1] = s
        else:
            for i in range(b * block, hi):
                s += a[o, i]
                out[o, i] = s


@njit(nogil=True, cache=True)
def _row_scan1(a, zero, block, exclusive, out):
    """:func:`_row_sums` then :func:`_row_scan` in one pass on one thread: each block scanned
    from its offset with its sum from ``zero`` added beside it, the next offset the two
    added (:func:`hotbin.core.scan_order.block_offsets`' order), so bit for bit the two passes'
    result. Two independent chains of adds, one read: faster than the two passes, on one
    thread or two (results/probes-cpu.md, scan.py)."""
    m = a.shape[1]
    for o in range(a.shape[0]):
        off = zero
        for lo in range(0, m, block):
            s, t = off, zero
            hi = min(m, lo + block)
            if exclusive:
                if lo == 0:
                    out[o, 0] = 0
                for i in range(lo, hi):
                    s += a[o, i]
                    t += a[o, i]
                    if i + 1 < m:
                        out[o, i + 1] = s
            else:
                for i in range(lo, hi):
                    s += a[o, i]
                    t += a[o, i]
                    out[o, i] = s
            off = off + t


@Kernel
def _column_sums(a, zero, block, sums, t, nt):
    """``sums[o, b, k]``: block ``b`` of lane ``a[o, :, k]`` added in order from ``zero``,
    all ``k`` at once (the inner loop walks memory in order)."""
    m, inner = a.shape[1], a.shape[2]
    nblk = sums.shape[1]
    for u in range(t, sums.shape[0] * nblk, nt):
        o, b = u // nblk, u % nblk
        for k in range(inner):
            sums[o, b, k] = zero
        for i in range(b * block, min(m, (b + 1) * block)):
            for k in range(inner):
                sums[o, b, k] += a[o, i, k]


@Kernel
def _column_scan(a, offsets, block, exclusive, out, t, nt):
    """Lanes ``a[o, :, k]`` scanned as :func:`_row_scan` scans rows, all ``k`` at once."""
    m, inner = a.shape[1], a.shape[2]
    nblk = offsets.shape[1]
    for u in range(t, offsets.shape[0] * nblk, nt):
        o, b = u // nblk, u % nblk
        s = offsets[o, b].copy()
        if exclusive and b == 0:
            out[o, 0] = 0
        for i in range(b * block, min(m, (b + 1) * block)):
            for k in range(inner):
                s[k] += a[o, i, k]
            if not exclusive:
                out[o, i, :] = s
            elif i + 1 < m:
                out[o, i + 1, :] = s


@Kernel
def _shift_lanes(out, t, nt):
    """The lanes ``out[o, :, k]`` shifted one place in place, 0 first (exclusive from inclusive)."""
    for o in range(t, out.shape[0], nt):
        for i in range(out.shape[1] - 1, 0, -1):
            out[o, i, :] = out[o, i - 1, :]
        out[o, 0, :] = 0


#: input dtypes the kernels widen exactly to the output dtype by their own arithmetic
_WIDEN = {(np.dtype(np.int32), np.dtype(np.int64)), (np.dtype(np.uint32), np.dtype(np.uint64)),
          (np.dtype(np.float32), np.dtype(np.float64))}


def _lanes_view(a, shape, od):
    """``a`` as the lanes ``shape`` without a copy, when the kernels read it directly (the
    same dtype as ``od`` or one in _WIDEN), else None."""
    if not a.dtype.isnative or not (a.dtype == od or (a.dtype, od) in _WIDEN):
        return None
    try:
        return np.reshape(a, shape, copy=False)
    except ValueError:
        return None


#: scans of fewer than two threads' worth of this many elements take one pass on the calling
#: thread (:func:`_row_scan1`): a scan's two threaded passes each read everything, and two
#: threads must halve the time of one pass to gain (one pass against two on two threads:
#: results/probes-cpu.md, scan.py)
SCAN_MIN_PER_THREAD = 1 << 21


def _scan_lanes(src, dst, exclusive):
    """Scan the lanes ``src[o, :, k]`` into ``dst`` (both ``(outer, m, inner)``) in block order."""
    block = scan_order.SCAN_BLOCK  # read at call time (tests change it)
    outer, m, inner = src.shape
    nblk = -(-m // block)
    zero = scan_zero(dst.dtype)
    if inner == 1:
        src, dst = src[:, :, 0], dst[:, :, 0]
    src = readonly(src)  # one kernel for writable and read-only inputs (.chunks)
    if inner == 1 and threads_for(src.size, per_thread=SCAN_MIN_PER_THREAD) == 1:
        return _row_scan1(src, zero, block, exclusive, dst)
    n = src.size if outer * nblk > 1 else 0  # one unit of work: the serial twin
    lanes = (outer, nblk) if inner == 1 else (outer, nblk, inner)
    sums = np.zeros(lanes, dst.dtype)
    if nblk > 1:
        (_row_sums if inner == 1 else _column_sums)(n, src, zero, block, sums)
    offsets = np.ascontiguousarray(block_offsets(sums)[0])
    (_row_scan if inner == 1 else _column_scan)(n, src, offsets, block, exclusive, dst)


def cumsum(a, axis, od, exclusive=False):
    """Prefix sums of ``a`` along ``axis`` (None: the flattened array) in dtype ``od``.

    In the association order of :mod:`hotbin.core.scan_order`: bitwise equal on every
    backend, NumPy's sequential scan for lanes up to ``SCAN_BLOCK`` long, independent
    of the thread count. Values are cast to ``od`` as :func:`numpy.cumsum` casts them;
    integer scans are exact (wrapping as NumPy's). ``exclusive``: the inclusive scan
    shifted one place along the axis, 0 first. Memory: the output, plus the input cast
    into it when the kernels cannot read the input in place.
    """
    a = np.asarray(a)
    od = np.dtype(od)
    shape = (a.size,) if axis is None else a.shape
    if a.size == 0:
        return np.empty(shape, od)
    if scan_kind(od) == "numpy":
        return scan_numpy(a.reshape(shape), 0 if axis is None else axis, od, exclusive)
    out = np.empty(shape, od)
    lanes = scan_layout(a.shape, axis)
    dst = out.reshape(lanes)
    src = _lanes_view(a, lanes, od)
    if src is None:  # cast into the output and scan it in place
        out.reshape(a.shape)[...] = a
        src = dst
    _scan_lanes(src, dst, exclusive and src is not dst)
    if exclusive and src is dst:
        _shift_lanes(dst.size if lanes[0] > 1 else 0, dst)
    return out
