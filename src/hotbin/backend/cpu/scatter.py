"""The scatter of the cpu kernels: one thread's points binned a block at a time, then added.

:func:`part_count` (and ``part_count_by``, ``part_sum``, ``part_fixed``, ``part_values``: a
kernel per accumulator) bins BLOCK points (:func:`~.rule.codes` on each axis, categories),
finds a hot cell (kept in registers: a chain of adds through memory is slow) and scatters
with one tight loop; :mod:`.banded` sorts the points by band of cells first, for 2-D grids
larger than the caches. Counts and extremes are alike bit for bit; float sums to rounding
(a hot cell's points are summed reassociated, and the sort changes which block a point
lands in); ``deterministic=True`` sums in fixed point instead.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core._jit import njit
from .compact import others
from .prefetch import prefetch
from .rule import cells2, codes, in_bin
from .wraps import add_many as _add_many, add_one as _add_one
from .values import MAX, MEAN, MIN, VALUES, add_block, add_whole, merge_values

__all__ = ["BLOCK", "COUNT", "SUM", "FIXED", "MEAN", "MIN", "MAX", "VALUES", "Points", "Scratch",
           "part_count", "part_count_by", "part_sum", "part_fixed", "part_values",
           "merge_values"]

#: points whose bins are computed before they are scattered (codes stay in L1)
BLOCK = 2048
#: a block whose points repeat the previous point's cell at least 1/HOT_SHARE of the time keeps
#: that cell in registers (benchmarks/heatmap_cpu.py --case skew)
HOT_SHARE = 4
#: fewer repeats, from 1/FEW_REPEATS of the points on, are checked for one cell behind them: the
#: first repeated cell is kept in registers when it holds 1/HOT_PART of the block. A share s of
#: the points in one cell, in random order, repeats about s^2 of the time: HOT_SHARE alone missed
#: hot cells under ~50 %, whose adds then chained (benchmarks/heatmap_cpu.py --case skew)
FEW_REPEATS = 64
HOT_PART = 8
#: counts by category: the hot cell's categories go to HOT_COPIES interleaved local copies
#: (each counter is then added to a few times per BLOCK, not in a chain), for up to HOT_CATS
#: categories (the copies are summed after each block)
HOT_COPIES = 4
HOT_CATS = 64
#: a block all in the hot cell counts up to CMP_CATS categories by one pass over its codes each
#: (_count_codes: eight codes to a word beat the copies; results/probes-cpu.md, scatter.py)
CMP_CATS = 8
#: what a scatter does: add 1, the weight, fixed-point words (MEAN, MIN, MAX: .values)
COUNT, SUM, FIXED = 0, 1, 2


class Points(NamedTuple):
    """A call's points as every scatter kernel reads them (one argument, not seven)."""

    x: np.ndarray  #: first coordinate
    y: np.ndarray  #: second coordinate (``x`` again in 1-D)
    two_d: bool  #: whether ``y`` is binned
    cat: np.ndarray  #: category codes (read when ``ncat`` > 0)
    ncat: int  #: categories (0: none)
    rx: tuple  #: x's rule (:func:`~.rule.rule_args`)
    ry: tuple  #: y's rule


class Scratch(NamedTuple):
    """A thread's BLOCK-sized buffers: cells (``cx``, ``cy``: cells2's scratch, the hot cell's
    others) and values (``tv`` and its read-only view ``tv_read``, :func:`read_only_twin`)."""

    cx: np.ndarray
    cy: np.ndarray
    tv: np.ndarray
    tv_read: np.ndarray


@njit(inline="always")
def _split(w, factor):
    """fixedpoint.split for one weight: (hi, lo) int64 words; ``factor`` = fixedpoint.factors."""
    t = (w * factor[0]) * factor[1]
    hi = np.floor(t)
    return np.int64(hi), np.int64(np.rint((t - hi) * 4294967296.0))


@njit(inline="always")
def _count(cx, m, h, hot, same, tmp, wraps):
    """h[cx[k]] += 1. A chain of adds to one counter through memory is slow, and a branch on
    the hot cell ``hot`` (>= 0; ``same`` points repeat the previous one's cell) mispredicts
    when it holds some but not all of the points, so the other points' cells are first
    copied branch-free to ``tmp`` and counted there, and the hot cell gets the rest in one
    add (spare counters for the hot points alias stores; results/probes-cpu.md, scatter.py)."""
    if hot < 0:
        for k in range(m):
            _add_one(h, np.uint64(cx[k]), wraps)
        return
    j = 0
    if same < m - 1:  # else all in the hot cell
        j = others(cx, m, hot, tmp)
        for k in range(j):
            _add_one(h, np.uint64(tmp[k]), wraps)
    _add_many(h, np.uint64(hot), m - j, wraps)


@njit(inline="always")
def _cells(p, ncat, b, m, cx, cy, ncell, trash):
    """cx[:m] = the cells of points b .. b+m of ``p`` (``ncat`` categories; ``trash`` for none;
    2-D: :func:`~.rule.cells2`, ``cy`` its scratch); returns how many landed in none. The next
    block's coordinates are then fetched (:func:`_fetch_next`) while the caller adds these."""
    x, y, two_d = p.x, p.y, p.two_d
    none = cx.dtype.type(trash)
    d = 0
    if two_d:
        d = cells2(x[b:b + m], y[b:b + m], p.rx, p.ry, cx, cy, none)
    else:
        codes(x[b:b + m], p.rx, cx)
    _fetch_next(x, y, two_d, b + BLOCK, m)
    if ncat > 0:
        d = 0
        cs = p.cat[b:b + m]  # indices from 0: no negative-index checks
        for k in range(m):
            g = cs[k]
            g = g if (g >= 0) & (g < ncat) else ncat
            v = cx[k] + g * ncell if cx[k] < ncell else trash
            cx[k] = v
            d += v == trash
    elif not two_d:
        for k in range(m):
            d += cx[k] == none
    return d


@njit(inline="always")
def _fetch_next(x, y, two_d, at, m):
    """Prefetch (:func:`.prefetch.prefetch`) the cache lines of ``x[at:at + m]`` (and y's),
    the next block, before a block's adds: the reads of the cells stream, the adds read no
    coordinates, and the memory idled through them while the next block's first reads
    waited. Issued a line a step inside the adds instead, it slowed them
    (benchmarks/results/probes-cpu.md, scatter.py)."""
    step = max(1, 64 // x.itemsize)
    last = x.size - 1
    for k in range(0, m, step):
        i = min(at + k, last)
        prefetch(x, i)
        if two_d:
            prefetch(y, i)


#: byte-lane masks of _count_codes (eight int8 codes in one uint64 word)
_ONES = np.uint64(0x0101010101010101)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH = np.uint64(0x8080808080808080)
_PAIRS = np.uint64(0x00FF00FF00FF00FF)
_QUADS = np.uint64(0x0001000100010001)
#: words a byte lane of _count_codes counts before it could pass 255
_LANE_WORDS = 128


@njit(inline="always")
def _count_codes(cs, m, ncat, local):
    """local[g] += how many of cs[:m] are g, for each category g < ncat (local[ncat]: the
    codes outside [0, ncat)). int8 codes eight to a uint64 word, a pass a category: the
    bytes equal to g are the zero bytes of ``word ^ g * 0x0101..``, found exactly with
    carry-free masks and added up per byte lane (faster than comparing them one by one;
    benchmarks/results/probes-cpu.md, scatter.py)."""
    nw = m >> 3 if cs.itemsize == 1 else 0
    words = cs[:nw * 8].view(np.uint64)
    inside = 0
    for g in range(ncat):
        code = cs.dtype.type(g)
        pat = np.uint64(g) * _ONES
        n = 0
        for lo in range(0, nw, _LANE_WORDS):
            lanes = np.uint64(0)
            part = words[lo:lo + _LANE_WORDS]  # indices from 0: vectorized
            for k in range(part.size):
                z = part[k] ^ pat
                lanes += (~(((z & _LOW7) + _LOW7) | z) & _HIGH) >> np.uint64(7)
            lanes = (lanes & _PAIRS) + ((lanes >> np.uint64(8)) & _PAIRS)
            n += np.int64((lanes * _QUADS) >> np.uint64(48))
        for k in range(nw * 8, m):
            n += cs[k] == code
        local[g] += n
        inside += n
    local[ncat] += m - inside


@njit(inline="always")
def _hot(cx, m):
    """(a cell that the points of cx[:m] often repeat, or that holds 1/HOT_PART of them when
    they repeat a little, -1 for none; how many points repeat the previous point's cell).
    The hot cell's points go to registers, as a chain of adds through memory is slow."""
    same = 0
    for k in range(1, m):  # vectorized
        same += cx[k] == cx[k - 1]
    if same * FEW_REPEATS < m:
        return np.int64(-1), same
    cand = cx[0]
    for k in range(1, m):
        if cx[k] == cx[k - 1]:
            cand = cx[k]
            break
    if same * HOT_SHARE >= m:
        return np.int64(cand), same
    n = 0
    for k in range(m):  # vectorized
        n += cx[k] == cand
    return (np.int64(cand) if n * HOT_PART >= m else np.int64(-1)), same


@njit(inline="always")
def _in_cell(p, b, m, one, ny):
    """Whether the points b .. b+m all lie in cell ``one`` (-1: none tried). When one cell held
    a whole block, the next is first tested against that cell's edges (two compares a
    coordinate) instead of binned (:func:`_cells`): the edges are the rule itself, so the
    answer is exact (benchmarks/results/probes-cpu.md, scatter.py)."""
    if one < 0:
        return False
    g = one // ny if p.two_d else one
    return in_bin(p.x, b, m, p.rx, g) and (not p.two_d or in_bin(p.y, b, m, p.ry, one % ny))


@njit(inline="always")
def _one_cell(hot, same, m, ncell):
    """The cell of a block whose m points all lie in the one cell ``hot`` (:func:`_hot`), else -1."""
    return hot if (same == m - 1) & (hot >= 0) & (hot < ncell) else np.int64(-1)


@njit
def _widen(span, cx, m):
    """span = [lowest, highest] of its cells and those of cx[:m] (a partial's cells that hold
    values: :func:`~.values.merge_values` reads no others)."""
    lo = hi = cx[0]
    for k in range(1, m):  # vectorized
        lo = min(lo, cx[k])
        hi = max(hi, cx[k])
    span[0] = min(span[0], np.int64(lo))
    span[1] = max(span[1], np.int64(hi))


@njit(inline="always")
def _grid(p, ncat):
    """(nx, ny, cells of one category, the cell of points in none) of ``p`` by ``ncat`` categories."""
    nx = p.rx[0].size - 1
    ny = p.ry[0].size - 1
    ncell = nx * ny if p.two_d else nx
    return nx, ny, ncell, (ncell * (ncat + 1) if ncat > 0 else ncell)


@njit(inline="always")
def _block(p, b, stop, s, grid):
    """The cells of the block of points from b (``grid`` = :func:`_grid`) into s.cx: (its size,
    how many points landed in no cell)."""
    nx, ny, ncell, trash = grid
    m = min(stop, b + BLOCK) - b
    return m, _cells(p, p.ncat, b, m, s.cx, s.cy, ncell, trash)


# One kernel per accumulator: a first call compiles only the one it needs.
# Each takes one thread's share [start, stop) of the points, computes their cells a
# BLOCK at a time (``cat`` with ncat > 0: category codes, cells ``cat * nx * ny + cell``,
# codes outside [0, ncat) in category ncat), adds them into ``h`` (its last slot takes
# the points in no cell) and returns how many points landed in no cell.

@njit(nogil=True, cache=True)
def part_count(p, start, stop, h, span, s, wraps):
    """h[cell] += 1 (no categories: ``ncat`` is 0; :func:`part_count_by` counts by category)
    in COUNT_PARTIAL counters, their wraps in ``wraps`` (:func:`wrap_slots` of the points, its
    count wraps[0] zeroed); the points in no cell are counted in slot ``trash`` (h: trash + 1
    counters), so this returns 0. ``s.cy``: BLOCK cells, also in 1-D. ``span``: see :func:`_widen`."""
    nx, ny, ncell, trash = _grid(p, 0)
    cx, cy = s.cx, s.cy
    one = np.int64(-1)
    for b in range(start, stop, BLOCK):
        m = min(stop, b + BLOCK) - b
        if _in_cell(p, b, m, one, ny):
            _add_many(h, np.uint64(one), m, wraps)
            continue
        _cells(p, 0, b, m, cx, cy, ncell, trash)
        _widen(span, cx, m)
        hot, same = _hot(cx, m)
        _count(cx, m, h, hot, same, cy, wraps)
        one = _one_cell(hot, same, m, ncell)
    return 0


@njit(nogil=True, cache=True)
def part_count_by(p, start, stop, h, span, s, wraps):
    """part_count by category (a kernel of its own: a first plain count does not compile
    it), ``ncat`` > 0, into COUNT_PARTIAL counters with their ``wraps`` (a 1024^2 grid by 8
    categories: 9 MB a thread, not uint32's 37); ``span``: of the cells without their
    category, which every category's counts lie within. The hot cell is found among the
    cells (not cell and category, which spreads it over ncat counters in a random order:
    their loads alias stores unpredictably); its points' categories are copied aside
    branch-free and counted into HOT_COPIES interleaved local copies, the other points' cells
    (category included) into ``cy``, then added to h; a block all in the hot cell counts its
    categories directly (faster than ``cell + category * cells`` in one loop; probes-cpu.md)."""
    ncat, cat, cx, cy = p.ncat, p.cat, s.cx, s.cy
    nx, ny, ncell, trash = _grid(p, ncat)
    width = ncat + 1
    local = np.zeros(HOT_COPIES * width, np.int64) if ncat <= HOT_CATS else np.zeros(0, np.int64)
    gs = np.empty(BLOCK, np.int64)
    one = np.int64(-1)
    for b in range(start, stop, BLOCK):
        m = min(stop, b + BLOCK) - b
        if _in_cell(p, b, m, one, ny):
            hot, same = one, m - 1
        else:
            _cells(p, 0, b, m, cx, cy, ncell, ncell)
            _widen(span, cx, m)
            hot, same = _hot(cx, m) if local.size else (np.int64(-1), 0)
            one = _one_cell(hot, same, m, ncell)
        cs = cat[b:b + m]  # indices from 0: no negative-index checks
        if (hot >= 0) & (same == m - 1):  # all in the hot cell
            if ncat <= CMP_CATS:
                _count_codes(cs, m, ncat, local)
            else:
                for k in range(m):
                    g = np.int64(cs[k])
                    local[(k & (HOT_COPIES - 1)) * width + (g if (g >= 0) & (g < ncat) else ncat)] += 1
        else:
            j, i = 0, 0
            for k in range(m):
                c = np.int64(cx[k])
                g = np.int64(cs[k])
                g = g if (g >= 0) & (g < ncat) else ncat
                cy[j] = c + g * ncell if c < ncell else trash
                gs[i] = g
                is_hot = c == hot
                j += not is_hot
                i += is_hot
            for k in range(j):
                _add_one(h, np.uint64(cy[k]), wraps)
            for k in range(i):
                local[(k & (HOT_COPIES - 1)) * width + gs[k]] += 1
        if hot >= 0:
            for g in range(width):
                n = 0
                for u in range(HOT_COPIES):
                    n += local[u * width + g]
                    local[u * width + g] = 0
                _add_many(h, np.uint64(hot + g * ncell if hot < ncell else trash), n, wraps)
    return 0


@njit(nogil=True, cache=True)
def part_sum(p, w, start, stop, h, s):
    """h[cell] += w (float64 or int64 partials)."""
    grid = _grid(p, p.ncat)
    cx = s.cx
    dropped = 0
    for b in range(start, stop, BLOCK):
        m, d = _block(p, b, stop, s, grid)
        dropped += d
        ws = w[b:b + m]
        for k in range(m):
            h[np.uint64(cx[k])] += ws[k]
    return dropped


@njit(nogil=True, cache=True)
def part_fixed(p, w, factor, center, start, stop, h, h2, s):
    """Fixed-point words of w (``factor`` = fixedpoint.factors): h[cell] += hi, h2[cell] += lo;
    NaN weights skipped; ``center`` (non-empty): (w - center[cell])**2 instead of w."""
    grid = _grid(p, p.ncat)
    cx = s.cx
    dropped = 0
    for b in range(start, stop, BLOCK):
        m, d = _block(p, b, stop, s, grid)
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
def part_values(p, w, how, center, start, stop, h, span, s):
    """[value, n] per cell for MEAN, MIN, MAX (:func:`add_block`); ``span``: see :func:`_widen`;
    ``s.tv``, ``s.tv_read``: BLOCK values of w's dtype and a read-only view."""
    grid = _grid(p, p.ncat)
    cx = s.cx
    dropped = 0
    nx, ny, ncell, trash = grid
    one = np.int64(-1)  # cells with categories are not tested (ncat > 0)
    for b in range(start, stop, BLOCK):
        m = min(stop, b + BLOCK) - b
        if _in_cell(p, b, m, one, ny):
            add_whole(m, w[b:b + m], how, center, h, one)
            continue
        m, d = _block(p, b, stop, s, grid)
        dropped += d
        _widen(span, cx, m)
        hot, same = _hot(cx, m)
        one = _one_cell(hot, same, m, ncell if p.ncat == 0 else 0)
        add_block(cx, m, w[b:b + m], how, center, h, hot, same, s.cy, s.tv, s.tv_read)
    return dropped
