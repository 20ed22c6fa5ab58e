"""The values accumulators of the cpu scatter: [value, n] per cell for MEAN, MIN and MAX.

:func:`add_block` adds one block of points whose cells are known (:mod:`.scatter` computes
them): the points of a hot cell apart, in registers, the others with the plain loop
(:func:`set_aside` does the first half alone, for a caller that sorts the others).
:func:`merge_values` merges the per-thread partials.
"""
from __future__ import annotations

import math

import numpy as np

from ...core._jit import njit
from .kept import scratch

__all__ = ["MEAN", "MIN", "MAX", "VALUES", "add_block", "add_whole", "set_aside", "merge_values"]

#: what a values scatter keeps per cell: [sum, n], [min, n], [max, n] (ids beside .scatter's)
MEAN, MIN, MAX = 3, 4, 5
#: the accumulators whose partial is [value, n] per cell (float64)
VALUES = (MEAN, MIN, MAX)


@njit(inline="always")
def _better(how, v, cur):
    """Whether ``v`` replaces ``cur`` under MIN / MAX (-0.0 below +0.0, as IEEE 754's minimum);
    branch-free."""
    zeros = (v == 0.0) & (cur == 0.0)
    if how == MIN:
        return (v < cur) | (zeros & (math.copysign(1.0, v) < math.copysign(1.0, cur)))
    return (v > cur) | (zeros & (math.copysign(1.0, v) > math.copysign(1.0, cur)))


@njit(inline="always")
def add_block(cx, m, w, how, center, h, hot, same, tc, tv, tv_read):
    """[value, n] of cell c at h[2c], h[2c + 1] (one cache line per point); NaN weights skipped.
    h starts at zeros: a cell's first value is taken as it is (no identity fills the
    partial), :func:`merge_values` merges the partials.

    With a hot cell (``hot`` >= 0; ``same`` points repeat the previous one's cell), the
    other points' cells and values are first copied aside branch-free (into ``tc``, ``tv``)
    and added with the plain loop, then the hot cell's values are folded in registers (a
    branch on the hot cell mispredicts when it holds most but not all points): sums on
    SIMD lanes (:func:`_hot_sum`; they may differ from the plain loop's point-order sum
    by rounding: ``deterministic=True`` sums in fixed point instead), extremes on SIMD
    lanes (:func:`_extreme`: min and max do not depend on the order).

    ``how`` stays a runtime value and MIN and MAX share their loops, so a values kernel
    compiles once, not once per accumulator (results/probes-cpu.md, values.py).
    ``w`` is read-only (:mod:`.chunks`), and ``tv_read`` is a read-only view of ``tv`` (of w's
    dtype): every loop here then compiles for one array type, not for a read-only and a
    writable one as well (see :func:`read_only_twin`)."""
    if hot < 0:
        _add_plain(cx, m, w, how, center, h)
        return
    j = set_aside(cx, m, w, how, center, h, hot, same, tc, tv)
    if j:
        _add_plain(tc, j, tv_read, how, center, h)


def read_only_twin(size, dtype, name=None):
    """``(buffer, a read-only view of it)``: kernels write the buffer and read the view, so that
    the loops that read values see the one array type of the read-only inputs (numba types
    writable and read-only arrays apart and compiles each loop for both: the first values
    heatmaps compiled longer; results/probes-cpu.md, values.py). ``name``: the thread's kept
    :func:`scratch` buffer of that name."""
    buf = np.empty(size, dtype) if name is None else scratch(name, size, dtype)
    view = buf.view()
    view.flags.writeable = False
    return buf, view


@njit(inline="always")
def set_aside(cx, m, w, how, center, h, hot, same, tc, tv):
    """The hot cell's part of :func:`add_block` (``hot`` >= 0): its values folded into h, the
    other points' cells and values copied to tc, tv (any float dtype); returns how many."""
    # np.int64(0), not 0: a literal 0 would type a call with it as one more _add_plain to compile
    j = np.int64(0) if same == m - 1 else _apart(cx, m, w, hot, tc, tv)  # every point in it
    _add_hot(cx, m, w, how, center, h, hot)
    return j


@njit(inline="always")
def _apart(cx, m, w, hot, tc, tv):
    """The cells and values of the points of cx[:m] not in cell ``hot`` copied to tc, tv
    branch-free; returns how many."""
    j = 0
    for k in range(m):
        c = cx[k]
        tc[j] = c
        tv[j] = w[k]
        j += c != hot
    return j


@njit
def _add_plain(cx, m, w, how, center, h):
    """The plain loop: each point's value into its cell's [value, n]."""
    if how == MEAN:
        _add_sums(cx, m, w, center, h)
    else:
        _add_extremes(cx, m, w, how, h)


@njit(inline="always")
def add_whole(m, w, how, center, h, one):
    """The m values of a block whose points all lie in cell ``one`` folded into its [value, n]
    (a block :func:`.scatter._in_cell` placed whole: no cells written, none compared;
    results/probes-cpu.md, values.py)."""
    _add_hot(None, m, w, how, center, h, one)


@njit
def _add_hot(cx, m, w, how, center, h, hot):
    """The values of the points of cx[:m] in cell ``hot`` folded into its [value, n] (cx None:
    all m points)."""
    i0 = np.uint64(hot * 2)
    if how != MEAN:
        best, cnt = _extreme(cx, m, w, how, hot)
        if cnt and ((h[i0 + 1] == 0.0) | _better(how, best, h[i0])):
            h[i0] = best
    elif center.size:
        sv, cnt = _hot_sum(cx, m, w, hot, True, center[np.uint64(hot)])
        h[i0] += sv
    else:
        sv, cnt = _hot_sum(cx, m, w, hot, False, 0.0)
        h[i0] += sv  # never -0.0: sums start at +0.0
    h[i0 + 1] += cnt


@njit
def _add_sums(cx, m, w, center, h):
    """MEAN's plain loop: sums of w, or of (w - center[cell])**2 when ``center`` is not empty."""
    if center.size:
        for k in range(m):
            c = np.int64(cx[k])
            v = np.float64(w[k])
            if v == v:  # NaN: no value
                i = np.uint64(c + c)
                h[i] += (v - center[np.uint64(c)]) ** 2
                h[i + 1] += 1.0
    else:
        for k in range(m):
            c = np.int64(cx[k])
            v = np.float64(w[k])
            if v == v:
                i = np.uint64(c + c)
                h[i] += v
                h[i + 1] += 1.0


@njit
def _add_extremes(cx, m, w, how, h):
    """MIN's and MAX's plain loop. A cell's first value is taken as it is (no
    identity to fill). A select, not a branch (whether a value is a new extreme is a coin
    toss early on; results/probes-cpu.md, values.py)."""
    for k in range(m):
        c = np.int64(cx[k])
        v = np.float64(w[k])
        if v != v:  # NaN: no value
            continue
        i = np.uint64(c + c)
        n = h[i + 1]
        h[i + 1] = n + 1.0
        cur = h[i]
        h[i] = v if (n == 0.0) | _better(how, v, cur) else cur


@njit(fastmath={"reassoc"})
def _hot_sum(cx, m, w, hot, centered, mid):
    """(the sum of the non-NaN values w[k] of cell ``hot`` (cx None: of all), squared about
    ``mid`` when centered; how many there are). Reassociated, so it runs on SIMD lanes: one
    chain of float adds in point order waits on each add (results/probes-cpu.md, values.py)."""
    s = 0.0
    cnt = 0
    for k in range(m):
        v = np.float64(w[k])
        ok = (v == v) if cx is None else (cx[k] == hot) & (v == v)
        if centered:
            v = (v - mid) ** 2
        s += v if ok else 0.0
        cnt += ok
    return s, cnt


@njit(inline="always")
def _extreme(cx, m, w, how, hot):
    """(the MIN / MAX of the non-NaN values w[k] of cell ``hot`` (cx None: of all), how many
    there are); w is float32 or float64 (the kernels read other dtypes as float64). Floats
    are compared as integers ordered like them (-0.0 below +0.0): an integer min / max is
    exact in any order, so it runs on every SIMD lane (a float one would need the order kept
    or NaN and zeros assumed away)."""
    if isinstance(w[0], np.float32):
        return _extreme_bits(cx, m, w.view(np.int32), how, hot, np.int32(31), np.int32(0x7FFFFFFF),
                             np.int32(0x7F800000), np.int32, np.float32)
    return _extreme_bits(cx, m, w.view(np.int64), how, hot, np.int64(63), np.int64(0x7FFFFFFFFFFFFFFF),
                         np.int64(0x7FF0000000000000), np.int64, np.float64)


@njit(inline="always")
def _extreme_bits(cx, m, bits, how, hot, sign, low, inf, itype, ftype):
    """_extreme of float values given by their bits (int32 for float32, int64 for float64):
    ``key = b ^ ((b >> sign) & low)`` orders them as the floats, NaN (``b & low > inf``)
    left out. MIN takes the MAX of ``~key`` (``~`` reverses the order): one loop for both."""
    flip = bits.dtype.type(0) if how == MAX else bits.dtype.type(-1)
    small = np.iinfo(bits.dtype).min
    best = small
    cnt = 0
    for k in range(m):  # vectorized
        b = bits[k]
        ok = ((b & low) <= inf) if cx is None else (cx[k] == hot) & ((b & low) <= inf)
        key = (b ^ ((b >> sign) & low)) ^ flip
        best = max(best, key if ok else small)
        cnt += ok
    best ^= flip
    # the bits back to the float by a scalar view, not through a 1-element array: that was
    # an allocation a block (results/probes-cpu.md, values.py)
    return np.float64(itype(best ^ ((best >> sign) & low)).view(ftype)), cnt


@njit(nogil=True, cache=True)
def merge_values(out, spans, how, ident, res, lo, hi):
    """res[:, c] = [value, n] of cells lo .. hi merged over the [value, n] partials ``out[p]``
    of :func:`add_block` (cells with no value: ``ident``), in partial order: sums as NumPy's
    sum over the partials, extremes in any order. A partial is read only within its span
    ``spans[p]`` of cells with values: the rest of it was never written (all points in one
    cell: no pass over 2 x 16 MB of untouched memory). Branch-free within the spans:
    whether a partial has values in a cell is a coin toss where points are sparse
    (results/probes-cpu.md, values.py)."""
    parts = out.shape[0]
    for c in range(lo, hi):
        v = 0.0
        n = 0.0
        for p in range(parts):
            if (c < spans[p, 0]) | (c > spans[p, 1]):  # a branch taken in runs
                continue
            pv = out[p, 2 * c]
            pn = out[p, 2 * c + 1]
            if how == MEAN:
                v += pv  # 0.0 where the partial has no value: v unchanged (never -0.0)
            else:
                v = pv if (pn != 0.0) & ((n == 0.0) | _better(how, pv, v)) else v
            n += pn
        res[0, c] = v if n > 0.0 else ident
        res[1, c] = n
