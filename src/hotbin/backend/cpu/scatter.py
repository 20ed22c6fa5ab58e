"""The scatter of the cpu kernels: one thread's points binned a block at a time, then added.

:func:`part_count` (and ``part_sum``, ``part_fixed``, ``part_values``: a kernel per
accumulator) bins BLOCK points (:func:`~.rule.codes` on each axis, categories), finds a
hot cell (kept in registers: a chain of adds through memory is slow) and scatters with
one tight loop. :func:`part_banded` first sorts a round of points by band of
cells, for 2-D grids larger than the caches. Both add a cell's points in their order, so
float sums are bitwise alike.
"""
from __future__ import annotations

import math

import numpy as np

from ..._jit import njit
from .rule import codes

__all__ = ["BLOCK", "SPARE", "SUBS", "SUB_BYTES", "COUNT", "SUM", "FIXED", "MEAN", "MIN", "MAX", "VALUES",
           "part_count", "part_count1", "part_sum", "part_fixed", "part_values", "part_banded"]

#: points whose bins are computed before they are scattered (codes stay in L1)
BLOCK = 2048
#: 1-D counts go to SUBS interleaved copies of the bins while they fit SUB_BYTES (L1): a
#: constant input then adds to SUBS counters in turn, not one chain (benchmarks/cpu_suite.py)
SUBS = 4
SUB_BYTES = 32 << 10
#: slots after a count partial's cells that take a hot cell's points in turn (_count), and the
#: share of repeats (1 - 1/DENSE_SHARE) from which a hot cell is counted in a register instead.
#: 20M points at 1024^2 on 2 cores, register only: 50 % hot 96 ms against 73 ms uniform (the
#: branch on the hot cell mispredicted half the time); spare slots only: 100 % hot 48 -> 73 ms.
#: Both: 50 % hot 55-88 ms, 100 % hot 45-51 ms (this VM varied 1.5x between runs)
SPARE = 4
DENSE_SHARE = 4
#: a block whose points repeat the previous point's cell at least 1/HOT_SHARE of the time keeps
#: that cell in registers (20M points at 1024^2 on 2 cores, 90 % in one cell: mean 197 -> 162 ms)
HOT_SHARE = 4
#: the banded scatter (part_banded): grids per thread from BAND_FROM bytes, bands of
#: BAND_BYTES, BAND_POINTS points sorted at a time, from BAND_MIN_POINTS points per thread,
#: for rounds whose first block has under 1/SPREAD of its points in one band (20M points on
#: 1024^2, 2 cores: uniform mean 385 -> 294 ms; hot spots sorted were up to 1.6x slower)
BAND_FROM = 8 << 20
BAND_BYTES = 256 << 10
BAND_POINTS = 1 << 21
BAND_MIN_POINTS = 1 << 20
SPREAD = 4
#: what a scatter does: add 1, the weight, fixed-point words; [sum, n], [min, n], [max, n]
COUNT, SUM, FIXED, MEAN, MIN, MAX = 0, 1, 2, 3, 4, 5


#: the accumulators whose partial is [value, n] per cell (float64)
VALUES = (MEAN, MIN, MAX)


@njit(inline="always")
def _split(w, factor):
    """fixedpoint.split for one weight: (hi, lo) int64 words; ``factor`` = fixedpoint.factors."""
    t = (w * factor[0]) * factor[1]
    hi = np.floor(t)
    return np.int64(hi), np.int64(np.rint((t - hi) * 4294967296.0))


@njit(inline="always")
def _count(cx, m, h, hot, same):
    """h[cx[k]] += 1. A chain of adds to one counter through memory is slow, so the points of
    cell ``hot`` (>= 0; ``same`` points repeat the previous one's cell) are counted apart: in
    a register when nearly every point is in it
    (the branch is then predictable), else (a mix: a branch would be mispredicted) added
    branch-free in turn to the SPARE slots at h's end, folded into h[hot] after the block."""
    if hot < 0:
        for k in range(m):
            h[np.uint64(cx[k])] += 1
        return
    if same * DENSE_SHARE >= m * (DENSE_SHARE - 1):
        run = 0
        for k in range(m):
            c = np.int64(cx[k])
            if c == hot:
                run += 1
            else:
                h[np.uint64(c)] += 1
        h[np.uint64(hot)] += run
        return
    spare = h.size - SPARE
    for k in range(m):
        c = np.int64(cx[k])
        h[np.uint64(c if c != hot else spare + (k & (SPARE - 1)))] += 1
    for j in range(spare, h.size):
        h[np.uint64(hot)] += h[j]
        h[j] = 0


@njit(inline="always")
def _better(how, v, cur):
    """Whether ``v`` replaces ``cur`` under MIN / MAX (-0.0 below +0.0, as IEEE 754's minimum)."""
    if how == MIN:
        return v < cur or (v == 0.0 and cur == 0.0 and math.copysign(1.0, v) < 0.0)
    return v > cur or (v == 0.0 and cur == 0.0 and math.copysign(1.0, v) > 0.0)


@njit(inline="always")
def _values(cx, m, w, how, center, h, hot):
    """[value, n] of cell c at h[2c], h[2c + 1] (one cache line per point); NaN weights skipped.
    The cell ``hot`` (>= 0) is folded in registers and stored once: in point order, so the
    sums are bitwise those of the plain loop. One loop per accumulator (``how`` and whether
    centered are constants in each, so its branches fold away)."""
    if how == MEAN:
        if center.size:
            _values_loop(cx, m, w, MEAN, True, center, h, hot)
        else:
            _values_loop(cx, m, w, MEAN, False, center, h, hot)
    elif how == MIN:
        _values_loop(cx, m, w, MIN, False, center, h, hot)
    else:
        _values_loop(cx, m, w, MAX, False, center, h, hot)


@njit(inline="always")
def _values_loop(cx, m, w, how, centered, center, h, hot):
    i0 = np.uint64(max(hot, 0) * 2)
    acc = h[i0]
    cnt = 0.0
    for k in range(m):
        c = np.int64(cx[k])
        v = np.float64(w[k])
        if v != v:  # NaN: no value
            continue
        if centered:
            v = (v - center[np.uint64(c)]) ** 2
        if c == hot:
            cnt += 1.0
            if how == MEAN:
                acc += v
            elif _better(how, v, acc):
                acc = v
            continue
        i = np.uint64(c + c)
        h[i + 1] += 1.0
        if how == MEAN:
            h[i] += v
        elif _better(how, v, h[i]):
            h[i] = v
    if hot >= 0:
        h[i0] = acc
        h[i0 + 1] += cnt


@njit(inline="always")
def _cells(x, y, two_d, cat, ncat, rx, ry, b, m, cx, cy, ny, nx, ncell, trash):
    """cx[:m] = the cells of points b .. b+m (``trash`` for none)."""
    codes(x[b:b + m], rx, cx)
    if two_d:
        codes(y[b:b + m], ry, cy)
        for k in range(m):
            cx[k] = cx[k] * ny + cy[k] if (cx[k] < nx) & (cy[k] < ny) else trash
    if ncat > 0:
        cs = cat[b:b + m]  # indices from 0: no negative-index checks
        for k in range(m):
            g = cs[k]
            g = g if (g >= 0) & (g < ncat) else ncat
            cx[k] = cx[k] + g * ncell if cx[k] < ncell else trash


@njit(inline="always")
def _hot(cx, m):
    """(a cell that the points of cx[:m] often repeat, -1 for none; how many points repeat
    the previous point's cell). The hot cell's points go to registers, as a chain of adds
    through memory is slow."""
    same = 0
    for k in range(1, m):  # vectorized
        same += cx[k] == cx[k - 1]
    if same * HOT_SHARE >= m:
        for k in range(1, m):
            if cx[k] == cx[k - 1]:
                return np.int64(cx[k]), same
    return np.int64(-1), same


@njit(inline="always")
def _grid(rx, ry, two_d, ncat):
    """(nx, ny, cells of one category, the cell of points in none)."""
    nx = rx[0].size - 1
    ny = ry[0].size - 1
    ncell = nx * ny if two_d else nx
    return nx, ny, ncell, (ncell * (ncat + 1) if ncat > 0 else ncell)


@njit(inline="always")
def _block(x, y, two_d, cat, ncat, rx, ry, b, stop, cx, cy, grid):
    """The cells of the block of points from b (``grid`` = :func:`_grid`) into cx: (its size,
    how many points landed in no cell)."""
    nx, ny, ncell, trash = grid
    m = min(stop, b + BLOCK) - b
    _cells(x, y, two_d, cat, ncat, rx, ry, b, m, cx, cy, ny, nx, ncell, trash)
    d = 0
    for k in range(m):
        d += cx[k] == trash
    return m, d


# One kernel per accumulator: a first call compiles only the one it needs (issue #18).
# Each takes one thread's share [start, stop) of the points, computes their cells a
# BLOCK at a time (``cat`` with ncat > 0: category codes, cells ``cat * nx * ny + cell``,
# codes outside [0, ncat) in category ncat), adds them into ``h`` (its last slot takes
# the points in no cell) and returns how many points landed in no cell.

@njit(nogil=True, cache=True)
def part_count(x, y, two_d, cat, ncat, rx, ry, start, stop, h, cx, cy):
    """h[cell] += 1; the points in no cell are counted in slot ``trash`` (h: trash + 1 + SPARE
    counters), so this returns 0."""
    nx, ny, ncell, trash = _grid(rx, ry, two_d, ncat)
    for b in range(start, stop, BLOCK):
        m = min(stop, b + BLOCK) - b
        _cells(x, y, two_d, cat, ncat, rx, ry, b, m, cx, cy, ny, nx, ncell, trash)
        hot, same = _hot(cx, m)
        _count(cx, m, h, hot, same)
    return 0


@njit(nogil=True, cache=True)
def part_count1(x, r, start, stop, h, nsub, cx):
    """1-D counts into ``nsub`` (a power of 2) interleaved copies of the bins: point k adds
    to copy ``k % nsub`` (h: nsub * (nb + 1) counters, bin nb of each for the points in
    none), so a run of one hot bin adds to nsub counters in turn instead of one chain.
    ``cx``: BLOCK int32 codes."""
    width = r[0].size
    mask = nsub - 1
    for b in range(start, stop, BLOCK):
        m = min(stop, b + BLOCK) - b
        codes(x[b:b + m], r, cx)
        for k in range(m):
            h[np.uint64((k & mask) * width + cx[k])] += 1


@njit(nogil=True, cache=True)
def part_sum(x, y, two_d, w, cat, ncat, rx, ry, start, stop, h, cx, cy):
    """h[cell] += w (float64 or int64 partials)."""
    grid = _grid(rx, ry, two_d, ncat)
    dropped = 0
    for b in range(start, stop, BLOCK):
        m, d = _block(x, y, two_d, cat, ncat, rx, ry, b, stop, cx, cy, grid)
        dropped += d
        ws = w[b:b + m]
        for k in range(m):
            h[np.uint64(cx[k])] += ws[k]
    return dropped


@njit(nogil=True, cache=True)
def part_fixed(x, y, two_d, w, factor, cat, ncat, center, rx, ry, start, stop, h, h2, cx, cy):
    """Fixed-point words of w (``factor`` = fixedpoint.factors): h[cell] += hi, h2[cell] += lo;
    NaN weights skipped; ``center`` (non-empty): (w - center[cell])**2 instead of w."""
    grid = _grid(rx, ry, two_d, ncat)
    dropped = 0
    for b in range(start, stop, BLOCK):
        m, d = _block(x, y, two_d, cat, ncat, rx, ry, b, stop, cx, cy, grid)
        dropped += d
        ws = w[b:b + m]
        for k in range(m):
            c = np.uint64(cx[k])
            v = np.float64(ws[k])
            if v != v:  # NaN: no value
                continue
            if center.size:
                v = (v - center[c]) ** 2
            qh, ql = _split(v, factor)
            h[c] += qh
            h2[c] += ql
    return dropped


@njit(nogil=True, cache=True)
def part_values(x, y, two_d, w, how, cat, ncat, center, rx, ry, start, stop, h, cx, cy):
    """[value, n] per cell for MEAN, MIN, MAX (:func:`_values`)."""
    grid = _grid(rx, ry, two_d, ncat)
    dropped = 0
    for b in range(start, stop, BLOCK):
        m, d = _block(x, y, two_d, cat, ncat, rx, ry, b, stop, cx, cy, grid)
        dropped += d
        _values(cx, m, w[b:b + m], how, center, h, _hot(cx, m)[0])
    return dropped


@njit(nogil=True, cache=True)
def part_banded(x, y, w, how, cat, ncat, center, rx, ry, start, stop, h, cx, cy, codes_all, sc, sw,
                 shift):
    """part_values for a 2-D grid of values too large for the caches (MEAN, MIN, MAX): the cells of
    up to ``codes_all.size`` points at a time, a stable counting sort of them by band of
    ``2**shift`` cells (with their weights), then the scatter band by band, so each band's
    cells stay in cache while its points land. Stable: a cell sees its points in their order,
    so the sums are bitwise those of :func:`part_values`."""
    nx, ny, ncell, trash = _grid(rx, ry, True, ncat)
    nbands = (trash >> shift) + 1
    starts = np.empty(nbands + 1, np.int64)
    dropped = 0
    for s0 in range(start, stop, codes_all.size):
        sm = min(stop, s0 + codes_all.size) - s0
        m = min(sm, BLOCK)  # a first block says whether the points spread over the bands
        _cells(x, y, True, cat, ncat, rx, ry, s0, m, cx, cy, ny, nx, ncell, trash)
        starts[:] = 0
        for k in range(m):
            starts[cx[k] >> shift] += 1
        if starts.max() * SPREAD > m:  # a hot spot: sorting would not pay for itself
            dropped += part_values(x, y, True, w, how, cat, ncat, center, rx, ry, s0, s0 + sm, h, cx, cy)
            continue
        starts[:] = 0
        for b in range(0, sm, BLOCK):
            m = min(sm, b + BLOCK) - b
            _cells(x, y, True, cat, ncat, rx, ry, s0 + b, m, cx, cy, ny, nx, ncell, trash)
            for k in range(m):
                c = cx[k]
                codes_all[b + k] = c
                dropped += c == trash
                starts[(c >> shift) + 1] += 1
        for i in range(nbands):
            starts[i + 1] += starts[i]
        for k in range(sm):
            c = codes_all[k]
            band = c >> shift
            pos = starts[band]
            starts[band] = pos + 1
            sc[pos] = c
            sw[pos] = w[s0 + k]
        for b in range(0, sm, BLOCK):
            m = min(sm, b + BLOCK) - b
            seg = sc[b:b + m]
            _values(seg, m, sw[b:b + m], how, center, h, _hot(seg, m)[0])
    return dropped
