"""The order statistics' inputs on the cpu: each point's cell, and the sorted (cell, value) pairs.

:func:`cells2d` is the backend primitive (the fused 2-D rule of :func:`.rule.cells2`, a
piece per thread). :func:`sorted_pairs` is the order statistics' accumulator
(:mod:`hotbin.core.order`): for float32 values one kernel pass per thread writes each
point's ``cell << 32 | key`` (no value -- a NaN weight, a point in no cell or without a
category -- all ones, sorted last), then one NumPy sort of the uint64 words; for float64
values (a key of 64 bits leaves no room for the cell) one pass writes cells and keys, a
counting sort groups the keys by cell, and each cell's run is sorted (short runs by the
kernel, a piece of the cells per thread; long ones by NumPy's vectorized sort). Neither
cares how many points share a cell. Other values take the portable path of
:mod:`hotbin.order_stats` over :func:`cells2d`.
"""
from __future__ import annotations

import numpy as np

from ...core import order
from ...core._jit import njit
from ...core.binning import BinRule
from .chunks import chunks, kernel_dtype, readonly
from .parallel import each, nparts
from .rule import cells2, rule_args
from .strategy import in_kernels

__all__ = ["cells2d", "sorted_pairs"]


def _pieces(arrays, kds, out, fn):
    """``fn(piece arrays, out piece)`` over ``arrays`` walked in chunks, a piece per thread
    (``out`` cut along its last axis); returns the list of ``fn``'s results."""
    res = []
    at = 0
    for c in chunks(arrays, kds):
        m = c[0].size
        o = out[..., at:at + m]
        parts = nparts(m, 0)
        step = -(-m // parts)
        got = [None] * parts

        def piece(p, c=c, o=o, got=got):
            s = slice(p * step, min(m, (p + 1) * step))
            got[p] = fn([a[s] for a in c], o[..., s])
        each(m, parts, piece)
        res += got
        at += m
    return res


def cells2d(x, y, rx: BinRule, ry: BinRule) -> np.ndarray:
    """The cell ``ix * ny + iy`` of each point (int64), -1 for none."""
    out = np.empty(x.size, np.int64)
    kds = [kernel_dtype(x.dtype), kernel_dtype(y.dtype)]
    r1, r2 = rule_args(rx, kds[0]), rule_args(ry, kds[1])

    def fn(c, o):
        cells2(c[0], c[1], r1, r2, o, np.empty(o.size, np.int64), np.int64(-1))
    _pieces([x, y], kds, out, fn)
    return out


@njit(inline="always")
def _valued(c, k, codes, ncat, ngrid, w):
    """The cell of point ``k`` in cell ``c`` (>= 0) with its category, or -1 when it has no value
    (a code outside ``[0, ncat)``, a NaN weight)."""
    if ncat > 0:
        code = np.int64(codes[k])
        if code < 0 or code >= ncat:
            return np.int64(-1)
        c += code * ngrid
    v = w[k]
    return np.int64(-1) if v != v else c


@njit(nogil=True, cache=True)
def _cells_keys(x, y, r1, r2, codes, ncat, ngrid, w, cells, keys):
    """cells[k], keys[k]: the cell (-1 for no value) and the key (:func:`hotbin.core.order.to_keys`)
    of each weight; returns (points in a cell, values)."""
    cells2(x, y, r1, r2, cells, np.empty(x.size, np.int64), np.int64(-1))
    wb = w.view(keys.dtype)
    top = keys.dtype.type(1) << keys.dtype.type(8 * keys.itemsize - 1)
    kept = 0
    m = 0
    for k in range(x.size):
        if cells[k] < 0:
            continue
        kept += 1
        c = _valued(cells[k], k, codes, ncat, ngrid, w)
        cells[k] = c
        if c >= 0:
            b = wb[k]
            keys[k] = ~b if (b & top) != 0 else b | top
            m += 1
    return kept, m


@njit(nogil=True, cache=True)
def _pack32(x, y, r1, r2, codes, ncat, ngrid, w, out, keys):
    """out[k] = ``cell << 32 | key(w[k])`` (int64 bits; -1 for no value) of float32 weights, the
    keys in ``keys`` first (:func:`_cells_keys`); returns (points in a cell, values)."""
    kept, m = _cells_keys(x, y, r1, r2, codes, ncat, ngrid, w, out, keys)
    for k in range(x.size):
        c = out[k]
        if c >= 0:
            out[k] = (c << np.int64(32)) | np.int64(keys[k])
    return kept, m


@njit(nogil=True, cache=True)
def _group(cells, keys, at, out):
    """Counting sort: the keys of each cell at ``at[cell]`` onwards in ``out[1]``, the cell in
    ``out[0]`` (``at`` advances)."""
    for k in range(cells.size):
        c = cells[k]
        if c >= 0:
            out[0, at[c]] = c
            out[1, at[c]] = keys[k]
            at[c] += 1


#: runs up to this many values are sorted by insertion
SHORT_RUN = 32


@njit(nogil=True, cache=True)
def _sort_runs(out, start, n, lo, hi, big):
    """Sort each cell's run of ``out`` for the cells ``[lo, hi)`` under ``big`` values."""
    for c in range(lo, hi):
        m = n[c]
        if m <= 1 or m >= big:
            continue
        s = start[c]
        if m > SHORT_RUN:
            out[s:s + m].sort()
            continue
        for i in range(s + 1, s + m):  # insertion sort: a call per short run costs more
            v = out[i]
            j = i - 1
            while j >= s and out[j] > v:
                out[j + 1] = out[j]
                j -= 1
            out[j + 1] = v


#: runs of at least this many values are sorted by NumPy (vectorized), the rest by the kernel
BIG_RUN = 1 << 12


def _pairs64(ins, kds, r1, r2, ncat, ngrid, ncell, by):
    """``((2, m) sorted partial, kept)`` of float64 weights: cells and keys in one pass, a
    counting sort by cell, then each cell's run sorted (large runs by NumPy's sort)."""
    n = ins[0].size
    dummy = readonly(np.empty(0, np.int8))
    both = np.empty((2, n), np.int64)

    def fn(c, o):
        return _cells_keys(c[0], c[1], r1, r2, c[3] if by is not None else dummy, ncat, ngrid, c[2],
                           o[0], o[1].view(np.uint64))
    got = _pieces(ins, kds, both, fn)
    cells, keys = both[0], both[1].view(np.uint64)
    counts = np.bincount(cells[cells >= 0], minlength=ncell) if n else np.zeros(ncell, np.int64)
    start = np.cumsum(counts) - counts
    m = int(counts.sum())
    out = np.empty((2, m), np.uint64)
    _group(cells, keys, start.copy(), out)
    parts = nparts(ncell, 0)
    step = -(-ncell // parts)
    each(m, parts, lambda p: _sort_runs(out[1], start, counts, p * step, min(ncell, (p + 1) * step), BIG_RUN))
    for c in np.flatnonzero(counts >= BIG_RUN):
        out[1, start[c]:start[c] + counts[c]].sort()
    return out, sum(k for k, _ in got)


def sorted_pairs(x, y, rx: BinRule, ry: BinRule, weights, by=None):
    """``(sorted partial, points in a cell)`` of float32 (packed words) or float64 ``weights``
    (:mod:`hotbin.core.order`), or NotImplemented for other weights, rules outside the kernels,
    and cells beyond 32 bits."""
    ngrid = rx.nbins * ry.nbins
    ncat = 0 if by is None else int(by[1])
    ncell = ngrid * max(ncat, 1)
    if (weights.dtype not in (np.float32, np.float64) or not (in_kernels(rx) and in_kernels(ry)) or x.size <= 1 << 14
            or not order.packed(order.cell_bits(ncell), np.float32)):
        return NotImplemented
    ins = [x, y, weights] + ([] if by is None else [by[0]])
    kds = [kernel_dtype(a.dtype) for a in ins]
    r1, r2 = rule_args(rx, kds[0]), rule_args(ry, kds[1])
    if weights.dtype == np.float64:
        return _pairs64(ins, kds, r1, r2, ncat, ngrid, ncell, by)
    dummy = readonly(np.empty(0, np.int8))
    out = np.empty(x.size, np.int64)

    def fn(c, o):
        return _pack32(c[0], c[1], r1, r2, c[3] if by is not None else dummy, ncat, ngrid, c[2], o,
                       np.empty(o.size, np.uint32))
    got = _pieces(ins, kds, out, fn)
    words = out.view(np.uint64)
    words.sort()  # no value: all ones, last
    return words[:sum(m for _, m in got)], sum(k for k, _ in got)
