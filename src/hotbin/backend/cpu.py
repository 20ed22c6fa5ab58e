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
#: values per block of every scan's fixed association order (:func:`cumsum`), on every
#: backend: float results depend on neither the thread count nor the device; lanes up
#: to this long equal NumPy's sequential scan. A GPU adds each block in one thread:
#: benchmarks/scan_block_sweep.py, H200, 2^28 float32, hotbin.cumsum (2026-11-30, tiled
#: lane kernels): 512 / 1024 / 2048 / 4096 -> 4.09 / 3.40 / 2.81 / 4.12 ms (kernels
#: 1.62 / 2.01 / 2.04 / 3.68 ms; shorter blocks cost host chaining, longer ones threads)
SCAN_BLOCK = 1 << 11

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
    """fixedpoint.split for one weight: (hi, lo) int64 words; ``factor`` = fixedpoint.factors."""
    t = (w * factor[0]) * factor[1]
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
def _row_sums(a, zero, block, sums):
    """``sums[o, b]``: block ``b`` of row ``a[o]`` added left to right from ``zero``."""
    m = a.shape[1]
    nblk = sums.shape[1]
    for u in prange(sums.size):
        o, b = u // nblk, u % nblk
        sums[o, b] = _sum(a[o, b * block:min(m, (b + 1) * block)], zero)


@_Kernel
def _row_scan(a, offsets, block, exclusive, out):
    """Rows of ``a`` scanned block by block from ``offsets[o, b]`` (exclusive: shifted by one).

    ``out`` may be ``a`` itself only when not ``exclusive`` (a block writes past its end)."""
    m = a.shape[1]
    nblk = offsets.shape[1]
    for u in prange(offsets.size):
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


@_Kernel
def _column_sums(a, zero, block, sums):
    """``sums[o, b, k]``: block ``b`` of lane ``a[o, :, k]`` added in order from ``zero``,
    all ``k`` at once (the inner loop walks memory in order)."""
    m, inner = a.shape[1], a.shape[2]
    nblk = sums.shape[1]
    for u in prange(sums.shape[0] * nblk):
        o, b = u // nblk, u % nblk
        for k in range(inner):
            sums[o, b, k] = zero
        for i in range(b * block, min(m, (b + 1) * block)):
            for k in range(inner):
                sums[o, b, k] += a[o, i, k]


@_Kernel
def _column_scan(a, offsets, block, exclusive, out):
    """Lanes ``a[o, :, k]`` scanned as :func:`_row_scan` scans rows, all ``k`` at once."""
    m, inner = a.shape[1], a.shape[2]
    nblk = offsets.shape[1]
    for u in prange(offsets.shape[0] * nblk):
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
    factor = fixedpoint.factors(scale) if how == FIXED else (0.0, 0.0)
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


# --- scans: one association order for every backend -----------------------------

def scan_layout(shape, axis):
    """``(outer, m, inner)``: the scan along ``axis`` of a C-ordered array of ``shape`` as
    the lanes ``[o, :, k]`` of that 3-D shape (``axis=None``: one lane, the flattened array)."""
    if axis is None:
        return 1, int(np.prod(shape, dtype=np.int64)), 1
    return (int(np.prod(shape[:axis], dtype=np.int64)), int(shape[axis]),
            int(np.prod(shape[axis + 1:], dtype=np.int64)))


def scan_kind(od) -> str:
    """How every backend scans into ``od``.

    ``"int"``: exact two's-complement sums, wrapping as NumPy's (any order gives the same
    result, so device backends use their own). ``"float"`` (float32, float64): the block
    order of :func:`cumsum`, reproduced bit for bit by every backend. ``"numpy"`` (bool,
    float16, complex): the same block order through NumPy's ``add.accumulate`` on the
    host, which every backend delegates to.
    """
    od = np.dtype(od)
    if od.kind in "iu":
        return "int"
    return "float" if od in (np.dtype(np.float32), np.dtype(np.float64)) else "numpy"


def scan_zero(od):
    """What a block's sum starts from: 0, or -0.0 for floats (``-0.0 + x`` is ``x``, sign included)."""
    return od.type(0) if od.kind in "biu" else od.type(-0.0)


def block_offsets(sums, carry=None):
    """``(offsets, total)`` of blocks with sums ``(lanes..., nblk, inner...)`` on axis 1.

    ``O[:, 0] = carry`` (default :func:`scan_zero`) and ``O[:, b + 1] = O[:, b] + S[:, b]``,
    added in order on the host (NumPy's ``cumsum``): every backend's block offsets are
    these. ``total`` is ``O[:, nblk]``, the carry of a scan continued after these blocks.
    """
    zero = scan_zero(sums.dtype)
    run = np.empty((sums.shape[0], sums.shape[1] + 1) + sums.shape[2:], sums.dtype)
    run[:, 0] = zero if carry is None else carry
    run[:, 1:] = sums
    np.cumsum(run, axis=1, out=run)
    return run[:, :-1], run[:, -1]


def shift_exclusive(inc, axis, xp=np):
    """The exclusive scan from the inclusive ``inc``: shifted one place along ``axis``, 0 first."""
    out = xp.empty_like(inc)
    pre = (slice(None),) * axis
    out[pre + (slice(1, None),)] = inc[pre + (slice(None, -1),)]
    out[pre + (slice(0, 1),)] = 0
    return out


def int_lanes(flat_scan, a, axis, od, exclusive, xp=np):
    """Integer scans of ``a`` along ``axis`` from one scan of its lanes laid end to end.

    ``flat_scan(x, wide)`` is the inclusive scan of the 1-D integers ``x`` in the 64-bit
    ``wide``. Each lane then loses the sum of the lanes before it (and, exclusive, its own
    values): exact, since two's-complement words are modular. For device backends with a
    fast flat scan (``xp``: NumPy or CuPy).
    """
    lanes = xp.ascontiguousarray(xp.moveaxis(a, axis, -1))
    wide = np.dtype(np.int64 if od.kind == "i" else np.uint64)
    res = flat_scan(lanes.reshape(-1), wide).reshape(-1, a.shape[axis])
    xs = lanes.reshape(res.shape).astype(wide)
    res -= res[:, :1] - xs[:, :1]
    if exclusive:
        res -= xs
    out = xp.empty(a.shape, od)
    xp.moveaxis(out, axis, -1)[...] = res.reshape(lanes.shape)
    return out


def _lanes_view(a, shape, od):
    """``a`` as the lanes ``shape`` without a copy, when the kernels read it directly (the
    same dtype as ``od`` or one widened exactly by the kernel's own arithmetic), else None."""
    widen = {(np.dtype(np.int32), np.dtype(np.int64)), (np.dtype(np.uint32), np.dtype(np.uint64)),
             (np.dtype(np.float32), np.dtype(np.float64))}
    if not a.dtype.isnative or not (a.dtype == od or (a.dtype, od) in widen):
        return None
    try:
        return np.reshape(a, shape, copy=False)
    except ValueError:
        return None


def _scan_lanes(src, dst, exclusive):
    """Scan the lanes ``src[o, :, k]`` into ``dst`` (both ``(outer, m, inner)``) in block order."""
    outer, m, inner = src.shape
    nblk = -(-m // SCAN_BLOCK)
    n = src.size if outer * nblk > 1 else 0  # one unit of work: the serial twin
    zero = scan_zero(dst.dtype)
    lanes = (outer, nblk) if inner == 1 else (outer, nblk, inner)
    sums = np.zeros(lanes, dst.dtype)
    if inner == 1:
        src, dst = src[:, :, 0], dst[:, :, 0]
    if nblk > 1:
        (_row_sums if inner == 1 else _column_sums)(n, src, zero, SCAN_BLOCK, sums)
    offsets = np.ascontiguousarray(block_offsets(sums)[0])
    (_row_scan if inner == 1 else _column_scan)(n, src, offsets, SCAN_BLOCK, exclusive, dst)


@_Kernel
def _shift_lanes(out):
    """The lanes ``out[o, :, k]`` shifted one place in place, 0 first (exclusive from inclusive)."""
    for o in prange(out.shape[0]):
        for i in range(out.shape[1] - 1, 0, -1):
            out[o, i, :] = out[o, i - 1, :]
        out[o, 0, :] = 0


def _scan_numpy(a, axis, od, exclusive):
    """:func:`cumsum`'s block order through NumPy's ``add.accumulate`` (bool, float16, complex)."""
    out = np.empty(a.shape, od)
    pre = (slice(None),) * axis
    offset = None
    for lo in range(0, a.shape[axis], SCAN_BLOCK):
        src, dst = a[pre + (slice(lo, lo + SCAN_BLOCK),)], out[pre + (slice(lo, lo + SCAN_BLOCK),)]
        np.add.accumulate(src, axis=axis, dtype=od, out=dst)  # the block's sums, in order
        total = dst[pre + (slice(-1, None),)].copy()
        if offset is not None:  # again from the offset: O_b + x[lo] + ...
            dst[...] = src
            head = dst[pre + (slice(0, 1),)]
            np.add(offset, head, out=head)
            np.add.accumulate(dst, axis=axis, out=dst)
            total = np.add(offset, total)
        offset = total
    return shift_exclusive(out, axis) if exclusive else out


def cumsum(a, axis, od, exclusive=False):
    """Prefix sums of ``a`` along ``axis`` (None: the flattened array) in dtype ``od``.

    The association order, the same bit for bit on every backend: values are cast to
    ``od`` (as :func:`numpy.cumsum` casts them), and each lane (a 1-D slice along the
    axis) is cut into blocks of :data:`SCAN_BLOCK` values. Block ``b``'s sum ``S_b`` adds
    its values left to right from -0.0 (an exact zero: ``-0.0 + x`` is ``x``); the block
    offsets are ``O_0 = -0.0`` and ``O_{b+1} = O_b + S_b``; a value ``i`` of block ``b``
    starting at ``lo`` gets ``(((O_b + x[lo]) + x[lo+1]) + ... ) + x[i]``. So lanes up to
    ``SCAN_BLOCK`` long are NumPy's sequential scan bit for bit, and the result depends on
    neither the thread count nor the device. Integer scans are exact (wrapping as
    NumPy's). ``exclusive``: the inclusive scan shifted one place along the axis, 0 first.
    Memory: the output, plus the input cast into it when the kernels cannot read the
    input in place.
    """
    a = np.asarray(a)
    od = np.dtype(od)
    shape = (a.size,) if axis is None else a.shape
    if a.size == 0:
        return np.empty(shape, od)
    if scan_kind(od) == "numpy":
        return _scan_numpy(a.reshape(shape), 0 if axis is None else axis, od, exclusive)
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


from .cpu_luma import luma_histogram  # noqa: E402,F401
