"""The cpu backend: numba kernels, one private histogram per thread, merged at the end.

Every kernel fuses the bin rule of :mod:`hotbin.binning` into its loop (no index
array), works on contiguous native-endian chunks (other layouts and dtypes are
converted a buffer at a time, so memory stays bounded). A hot bin never
serializes threads: each thread counts into its own row of partials.
"""
from __future__ import annotations

import os
import threading
import types

import numba
import numpy as np
from numba import prange

from .. import fixedpoint
from .._jit import njit
from ..binning import BinRule
from . import to_host

NAME = "cpu"

# --- tuning (benchmarks/cpu_suite.py justified each) -------------------------
#: elements per buffered chunk for inputs that need conversion (bounded memory)
BUFFER = 1 << 20
#: elements per kernel call on contiguous input (bounds the fixed-point low words)
CALL = 1 << 26
#: below this many elements per thread, fewer threads (launch cost dominates);
#: inputs under two threads' worth run the serial twin of a kernel (no thread
#: launch: on a loaded 2-core machine a parallel region took ~20 ms to start)
MIN_PER_THREAD = 1 << 15
#: a partial histogram this large or larger is not replicated per thread
MAX_PARTIAL_BYTES = 1 << 28
#: values of 8/16-bit integers are counted raw, then folded through a lookup table
LUT_KINDS = {np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16)}
#: fixed block of the parallel scan: results do not depend on the thread count
SCAN_BLOCK = 1 << 18

_KERNEL_DATA = {np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32,
                                      np.uint32, np.int64, np.uint64, np.float32, np.float64)}


def available() -> bool:
    return True


def require() -> None:
    return None


def devices() -> list[str]:
    return [f"{os.cpu_count()} CPU cores, {numba.get_num_threads()} numba threads"]


def asarray(a):
    return np.asarray(to_host(a))  # None becomes an object array: rejected by the caller's dtype check


def to_output(x, like=None):
    return x


# --- the bin rule, fused into every kernel ------------------------------------

@njit(inline="always")
def _find(v, e, e0, en, nb, lo, scale, slack, uniform):
    """Bin of ``v`` in ``[0, nb)``, or ``nb`` when it lands in none (binning.BinRule.index).

    ``e0``/``en`` are ``e[0]``/``e[nb]`` hoisted by the caller. A uniform rule
    guesses by multiplying and reads the edges only when the guess is within
    ``slack`` of an edge (BinRule.slack). Indices are cast to unsigned for
    indexing: numba then emits no negative-index wraparound code.
    """
    if not (v >= e0 and v <= en):
        return nb
    if uniform:
        t = (v - lo) * scale
        g = min(np.int64(t), nb - 1)
        f = t - np.float64(g)
        if f <= slack or f >= 1.0 - slack:
            while g > 0 and v < e[np.uint64(g)]:
                g -= 1
            while g < nb - 1 and v >= e[np.uint64(g + 1)]:
                g += 1
        return g
    a, b = 0, nb  # e[a] <= v; the answer is the largest such a below nb
    while b - a > 1:
        m = (a + b) >> 1
        if e[np.uint64(m)] <= v:
            a = m
        else:
            b = m
    return a


@njit(inline="always")
def _split(w, factor):
    """fixedpoint.split for one weight: (hi, lo) int64 words."""
    t = w * factor
    hi = np.floor(t)
    return np.int64(hi), np.int64(np.rint((t - hi) * 4294967296.0))


# --- kernels -------------------------------------------------------------------

class _Kernel:
    """A numba kernel compiled twice: threaded, and a serial twin for small inputs.

    Call as ``kernel(n, *args)`` with ``n`` the number of elements it will read.
    The twin is a copy of the function under another qualified name, so the two
    never share a cache entry.
    """

    def __init__(self, fn):
        self.threaded = njit(parallel=True, cache=True, nogil=True)(fn)
        twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial",
                                  fn.__defaults__, fn.__closure__)
        twin.__qualname__ = fn.__qualname__ + "_serial"
        self.serial = njit(cache=True, nogil=True)(twin)

    def __call__(self, n, *args):
        if n < 2 * MIN_PER_THREAD:
            return self.serial(*args)
        if _SERIALIZE is False:
            return self.threaded(*args)
        with _PARALLEL_LOCK:  # workqueue (or not known yet): one parallel region at a time
            return _mark_layer(self.threaded(*args))


#: numba's "workqueue" threading layer aborts the process when two Python threads
#: enter parallel regions at once (omp and tbb do not): serialize on that layer only.
_PARALLEL_LOCK = threading.Lock()
_SERIALIZE = None  # unknown until a parallel region has run


def _mark_layer(result):
    global _SERIALIZE
    if _SERIALIZE is None:
        _SERIALIZE = numba.threading_layer() == "workqueue"
    return result

# A rule travels into kernels as the tuple (e, e0, en, lo, scale, slack, step, mode):
# the kernel's edges, its ends, the guess parameters, and how bins are found.
LINEAR, GUESS, SEARCH = 0, 1, 2  # computed edges (BinRule.linear_step) / slack guess / binary search
COUNT, SUM, FIXED = 0, 1, 2  # what a scatter adds: 1, the weight, or fixed-point words
#: points whose bins are computed before they are scattered (codes stay in L1)
BLOCK = 2048


@njit(nogil=True, cache=True)
def _codes(v, r, codes):
    """codes[k] = bin of v[k] under rule r, nb when it lands in none.

    A function of its own on a block: in LINEAR mode the loop is branch-free and
    numba vectorizes it (4x faster than the same loop fused with the scatter,
    benchmarks/heatmap_cpu.py).
    """
    e, e0, en, lo, scale, slack, step, mode = r
    nb = e.size - 1
    if mode == LINEAR:
        for k in range(v.size):
            x = v[k]
            ok = (x >= e0) & (x <= en)
            t = (x - lo) * scale
            g = min(np.int32(t if ok else 0.0), np.int32(nb - 1))
            g -= np.int32(x < g * step + lo)
            g += np.int32((g < nb - 1) & (x >= (g + 1) * step + lo))
            codes[k] = g if ok else nb
    else:
        for k in range(v.size):
            codes[k] = _find(v[k], e, e0, en, nb, lo, scale, slack, mode == GUESS)


@njit(nogil=True, cache=True)
def _part(x, y, two_d, w, how, factor, rx, ry, start, stop, h, h2, cx, cy):
    """One thread's share [start, stop): codes block by block, then scatter into h (and h2).

    The last slot of h takes the points that land in no bin; returns their number.
    """
    nx = rx[0].size - 1
    ny = ry[0].size - 1
    trash = nx * ny if two_d else nx
    dropped = 0
    for b in range(start, stop, BLOCK):
        m = min(stop, b + BLOCK) - b
        _codes(x[b:b + m], rx, cx)
        if two_d:
            _codes(y[b:b + m], ry, cy)
            for k in range(m):
                cx[k] = cx[k] * ny + cy[k] if (cx[k] < nx) & (cy[k] < ny) else trash
        for k in range(m):
            c = np.uint64(cx[k])
            dropped += cx[k] == trash
            if how == COUNT:
                h[c] += 1
            elif how == SUM:
                h[c] += w[b + k]
            else:
                qh, ql = _split(w[b + k], factor)
                h[c] += qh
                h2[c] += ql
    return dropped


@_Kernel
def _hist(x, y, two_d, w, how, factor, rx, ry, out, out2, drops):
    """Per-thread partial histograms: out[p] (and out2[p] for FIXED), drops[p] dropped points."""
    nparts = out.shape[0]
    n = x.size
    step = (n + nparts - 1) // nparts
    for p in prange(nparts):
        cx = np.empty(BLOCK, np.int64)
        cy = np.empty(BLOCK if two_d else 0, np.int64)
        drops[p] += _part(x, y, two_d, w, how, factor, rx, ry, p * step, min(n, (p + 1) * step),
                          out[p], out2[p], cx, cy)


@_Kernel
def _hist_rows(a, r, out):
    """out[i] += the histogram of row i of the 2-D ``a`` (column nb: dropped); rows in parallel."""
    for i in prange(a.shape[0]):
        codes = np.empty(BLOCK, np.int64)
        row = a[i]
        h = out[i]
        for b in range(0, row.size, BLOCK):
            m = min(row.size, b + BLOCK) - b
            _codes(row[b:b + m], r, codes)
            for k in range(m):
                h[np.uint64(codes[k])] += 1


@_Kernel
def _count_values(a, w, weighted, out):
    """out[p, v] += 1 (or w) for each value v of a non-negative integer array."""
    nparts = out.shape[0]
    n = a.size
    step = (n + nparts - 1) // nparts
    for p in prange(nparts):
        h = out[p]
        for j in range(p * step, min(n, (p + 1) * step)):
            if weighted:
                h[np.uint64(a[j])] += w[j]
            else:
                h[np.uint64(a[j])] += 1


@_Kernel
def _minmax(a, nparts):
    """Per-part (min, max, any-NaN) of a contiguous array."""
    n = a.size
    step = (n + nparts - 1) // nparts
    los = np.empty(nparts, a.dtype)
    his = np.empty(nparts, a.dtype)
    nan = np.zeros(nparts, np.bool_)
    for p in prange(nparts):
        start = p * step
        stop = min(n, start + step)
        lo = a[start]
        hi = a[start]
        for j in range(start, stop):
            v = a[j]
            if v != v:
                nan[p] = True
            if v < lo:
                lo = v
            if v > hi:
                hi = v
        los[p] = lo
        his[p] = hi
    return los, his, nan


@njit(nogil=True, cache=True)
def _sum(v, zero):
    """Sum of a slice in the output dtype: a function of its own, so integer sums vectorize
    (cumsum of 50M int32: 27.6 -> 4.1 ms for this pass, benchmarks/cpu_suite.py)."""
    s = zero
    for j in range(v.size):
        s += v[j]
    return s


@_Kernel
def _block_sums(a, zero, block):
    nblk = (a.size + block - 1) // block
    sums = np.full(nblk, zero)
    for b in prange(nblk):
        sums[b] = _sum(a[b * block:min(a.size, (b + 1) * block)], zero)
    return sums


@_Kernel
def _scan_blocks(a, offsets, exclusive, block, out):
    nblk = offsets.size
    for b in prange(nblk):
        s = offsets[b]
        for j in range(b * block, min(a.size, (b + 1) * block)):
            if exclusive:
                out[j] = s
                s += a[j]
            else:
                s += a[j]
                out[j] = s


# --- chunking: contiguous native-endian pieces, bounded memory -------------------

def _kernel_dtype(dt: np.dtype) -> np.dtype:
    dt = dt.newbyteorder("=")
    if dt in _KERNEL_DATA:
        return dt
    if dt == np.bool_:
        return np.dtype(np.uint8)
    if dt == np.float16:
        return np.dtype(np.float32)
    raise TypeError(f"cpu backend: no kernel for dtype {dt}")


def _weight_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dt.kind == "f" else np.dtype(np.int64)


def _chunks(arrays, dtypes):
    """Yield tuples of 1-D contiguous arrays of ``dtypes`` walking ``arrays`` in C order."""
    n = arrays[0].size
    if all(a.flags.c_contiguous and a.dtype == d for a, d in zip(arrays, dtypes)):
        flat = [a.reshape(-1) for a in arrays]
        for s in range(0, max(n, 1), CALL):
            yield tuple(f[s:s + CALL] for f in flat)
        return
    if n == 0:
        yield tuple(np.empty(0, d) for d in dtypes)
        return
    it = np.nditer(list(arrays), flags=["external_loop", "buffered", "zerosize_ok"],
                   op_flags=[["readonly"]] * len(arrays), op_dtypes=list(dtypes),
                   casting="unsafe", buffersize=BUFFER, order="C")
    for chunk in it:
        yield tuple(np.ascontiguousarray(c) for c in (chunk if len(arrays) > 1 else (chunk,)))


def _nparts(n: int, row_bytes: int) -> int:
    t = numba.get_num_threads()
    t = min(t, max(1, n // MIN_PER_THREAD))
    return max(1, min(t, MAX_PARTIAL_BYTES // max(row_bytes, 1)))


def _rule_args(rule: BinRule):
    """The rule as the tuple kernels take (see LINEAR/GUESS/SEARCH)."""
    e = rule.kernel_cmp
    step = rule.linear_step
    mode = LINEAR if step is not None and rule.nbins < 2**31 - 1 else (GUESS if rule.uniform else SEARCH)
    return (e, e[0], e[-1], rule.lo, rule.scale, rule.slack, step or 0.0, mode)


def minmax(a):
    a = np.asarray(a)
    kd = _kernel_dtype(a.dtype)
    lo = hi = None
    nan = False
    for (c,) in _chunks([a], [kd]):
        if c.size == 0:
            continue
        los, his, nans = _minmax(c.size, c, _nparts(c.size, 1))
        nan |= bool(nans.any())
        clo, chi = los.min(), his.max()
        lo = clo if lo is None else min(lo, clo)
        hi = chi if hi is None else max(hi, chi)
    if nan:
        return a.dtype.type(np.nan), a.dtype.type(np.nan)
    return a.dtype.type(lo), a.dtype.type(hi)


def max_abs(w) -> float:
    if np.size(w) == 0:
        return 0.0
    lo, hi = minmax(w)
    return fixedpoint.max_abs(np.array([lo, hi]))


def histogram(a, rule: BinRule, weights=None, scale=None):
    a = np.asarray(a)
    kd = _kernel_dtype(a.dtype)
    if weights is None and kd in LUT_KINDS:
        return _histogram_lut(a, kd, rule)
    return _run([a], rule, None, weights, scale)[0]


def histogram_rows(a, rule: BinRule):
    """``(N, nbins)`` int64 counts, one histogram per row of the 2-D ``a``."""
    a = np.asarray(a)
    a = np.ascontiguousarray(a, _kernel_dtype(a.dtype))
    out = np.zeros((a.shape[0], rule.nbins + 1), np.int64)
    _hist_rows(a.size, a, _rule_args(rule), out)
    return out[:, :rule.nbins]


def _histogram_lut(a, kd, rule):
    """8/16-bit integers: count each raw value, then fold values into bins exactly."""
    u = np.dtype(f"u{kd.itemsize}")
    nvals = 1 << (8 * kd.itemsize)
    counts = np.zeros((_nparts(a.size, nvals * 8), nvals), np.int64)
    dummy = np.empty(0, np.int64)
    for (c,) in _chunks([a], [kd]):
        _count_values(c.size, c.view(u), dummy, False, counts)
    counts = counts.sum(axis=0)
    values = np.arange(nvals, dtype=u).view(kd)
    idx = rule.index(values)
    keep = idx >= 0
    out = np.zeros(rule.nbins, np.int64)
    np.add.at(out, idx[keep], counts[keep])
    return out


def _run(arrays, rx, ry, weights, scale):
    """Drive the _hist kernel over chunks: ``(result, dropped)``.

    Counts go into uint32 per-thread partials (half the cache footprint of int64;
    a call takes at most CALL < 2**32 points, then they are folded into int64).
    Weighted sums go into float64 (int64 for integer weights); with ``scale``, into
    fixed-point words, whose low-word carries are folded after each call.
    """
    two_d = ry is not None
    ncell = rx.nbins * (ry.nbins if two_d else 1)
    how = COUNT if weights is None else (FIXED if scale is not None else SUM)
    dt = {COUNT: np.dtype(np.uint32), FIXED: np.dtype(np.int64)}.get(how)
    if how == SUM:
        dt = _weight_dtype(weights.dtype)
    nparts = _nparts(arrays[0].size, (ncell + 1) * dt.itemsize * (2 if how == FIXED else 1))
    out = np.zeros((nparts, ncell + 1), dt)
    out2 = np.zeros((nparts, ncell + 1 if how == FIXED else 0), np.int64)
    drops = np.zeros(nparts, np.int64)
    total = None
    factor = np.ldexp(1.0, scale - fixedpoint.SPLIT) if how == FIXED else 0.0
    r1 = _rule_args(rx)
    r2 = _rule_args(ry) if two_d else r1
    ins = list(arrays) + ([] if weights is None else [weights])
    kds = [_kernel_dtype(v.dtype) for v in arrays]
    if weights is not None:
        kds.append(np.dtype(np.float64) if how == FIXED else dt)
    dummy = np.empty(0, np.int64)
    for c in _chunks(ins, kds):
        x, y = c[0], (c[1] if two_d else c[0])
        w = c[-1] if weights is not None else dummy
        if how == COUNT and total is not None:
            out[:] = 0
        _hist(x.size, x, y, two_d, w, how, factor, r1, r2, out, out2, drops)
        if how == COUNT:
            part = out.sum(axis=0, dtype=np.int64)
            total = part if total is None else np.add(total, part, out=total)
        elif how == FIXED:
            out += out2 >> fixedpoint.SPLIT
            out2 &= (1 << fixedpoint.SPLIT) - 1
    if how == COUNT:
        res = total[:ncell]
    elif how == SUM:
        res = out.sum(axis=0)[:ncell]
    else:
        res = fixedpoint.merge(np.stack([out[:, :ncell], out2[:, :ncell]], axis=1))
    return res, int(drops.sum())


def histogram2d(x, y, rx: BinRule, ry: BinRule, weights=None, scale=None):
    x = np.asarray(x)
    res, dropped = _run([x, np.asarray(y)], rx, ry, weights, scale)
    return res.reshape(res.shape[:-1] + (rx.nbins, ry.nbins)), x.size - dropped


def bincount(x, length, weights=None):
    x = np.asarray(x)
    wd = np.dtype(np.int64) if weights is None else np.dtype(np.float64)
    out = np.zeros((_nparts(x.size, length * 8), length), wd)
    kd = _kernel_dtype(x.dtype)
    arrays, dtypes = ([x], [kd]) if weights is None else ([x, weights], [kd, wd])
    dummy = np.empty(0, wd)
    for c in _chunks(arrays, dtypes):
        _count_values(c[0].size, c[0], dummy if weights is None else c[1], weights is not None, out)
    return out.sum(axis=0)


def cumsum(a, exclusive=False):
    a = np.asarray(a)
    od = np.cumsum(np.empty(0, a.dtype)).dtype  # NumPy's accumulator dtype
    if a.dtype == np.float16 or od.kind not in "iuf":
        res = np.cumsum(a)
        if exclusive:
            res = np.concatenate([np.zeros(1, od), res[:-1]])
        return res
    kd = _kernel_dtype(a.dtype)
    flat = a.reshape(-1) if a.flags.c_contiguous and a.dtype == kd else np.ascontiguousarray(a, kd).reshape(-1)
    out = np.empty(flat.size, od)
    if flat.size == 0:
        return out
    zero = od.type(0)
    sums = _block_sums(flat.size, flat, zero, SCAN_BLOCK)
    offsets = np.empty_like(sums)
    offsets[0] = 0
    np.cumsum(sums[:-1], out=offsets[1:])
    _scan_blocks(flat.size, flat, offsets, exclusive, SCAN_BLOCK, out)
    return out
from .cpu_luma import luma_histogram  # noqa: E402,F401
