"""Counting and sums on the cpu: one private histogram per thread, merged at the end.

A hot bin never serializes threads: each thread counts into its own row of
partials. Points are binned a BLOCK at a time (:func:`~.rule.codes`), then
scattered; 1-D counts are :mod:`.count1d`'s.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core import fixedpoint
from ...core.arrays import to_host
from ...core import reductions
from ...core.binning import BinRule
from .chunks import chunks, kernel_dtype, readonly
from .count1d import LUT_KINDS, counts_1d, lut_counts, sums_1d
from .parallel import Kernel, each, nparts, share, threads
from .rule import codes, rule_args
from .banded import BAND_BYTES, BAND_FROM, BAND_MIN_POINTS, BAND_POINTS, Aside, part_banded, sorted_slots
from .scatter import (BLOCK, COUNT, FIXED, MAX, MEAN, MIN, SUM, VALUES, Points, Scratch, merge_values,
                      part_count, part_count_by, part_fixed, part_sum, part_values)
from .wraps import COUNT_PARTIAL, FOLD_BLOCK, fold, unwrap, wrap_slots
from .kept import keep, partials, scratch, zero
from .values import read_only_twin

__all__ = ["histogram", "histogram2d", "histogram_rows", "bin_index", "BLOCK"]

class _Acc(NamedTuple):
    how: int  #: the scatter kernel (:mod:`.scatter`)
    partial: np.dtype  #: dtype of a thread's partial
    #: dtype the kernel reads the weights in ("own": float32 as they are, any other as float64)
    weights: np.dtype | str | None


#: the accumulator of each :attr:`hotbin.core.reductions.Reduction.acc`. Counts go into uint8
#: partials whose wraps are recorded (.wraps.COUNT_PARTIAL), then folded into int64;
#: fixed-point words are two int64 partials.
_HOW = {
    "count": _Acc(COUNT, COUNT_PARTIAL, None),
    "f64": _Acc(SUM, np.dtype(np.float64), np.dtype(np.float64)),
    "i64": _Acc(SUM, np.dtype(np.int64), np.dtype(np.int64)),
    "fixed": _Acc(FIXED, np.dtype(np.int64), np.dtype(np.float64)),
    "mean": _Acc(MEAN, np.dtype(np.float64), "own"),
    "min": _Acc(MIN, np.dtype(np.float64), "own"),
    "max": _Acc(MAX, np.dtype(np.float64), "own"),
}


def _accumulator(red, weights) -> _Acc:
    acc = _HOW.get(red.acc)
    if acc is None:
        raise ValueError(f"cpu backend: no accumulator {red.acc!r}")
    if (weights is None) != (acc.how == COUNT):
        raise ValueError(f"cpu backend: the reduction {red.name!r} does not match "
                         f"weights={'None' if weights is None else 'an array'}")
    return acc


class _Rows(NamedTuple):
    """One call's per-thread partials: ``out[p]`` (and ``out2[p]``, FIXED's low words),
    ``drops[p]`` points in no cell, ``spans[p]`` the cells of ``out[p]`` holding values,
    ``wraps[p]`` (counts) the partial's wrapped cells (:data:`.wraps.COUNT_PARTIAL`)."""

    out: np.ndarray
    out2: np.ndarray
    drops: np.ndarray
    spans: np.ndarray
    wraps: list | None


def _hist(pts, w, how, factor, center, rows, cdt, dirty=()):
    """The partials ``rows`` of ``pts`` (:class:`.scatter.Points`): a kernel call per partial,
    the kernel of the accumulator ``how`` only. Cells are computed into ``cdt``
    (:func:`_cell_dtype`); ``dirty``: slot ranges each row zeroes first (:func:`.kept.partials`)."""
    out, parts, n = rows.out, rows.out.shape[0], pts.x.size
    if rows.wraps is not None:
        rows.wraps[:] = [None] * parts
    if how == COUNT and parts > 1:
        return _count_shared(pts, w, rows, cdt, dirty)
    step = (n + parts - 1) // parts

    def piece(p):
        lo, hi = p * step, min(n, (p + 1) * step)
        zero(out[p], dirty)
        s = Scratch(np.empty(BLOCK, cdt), np.empty(BLOCK, cdt), *read_only_twin(BLOCK, w.dtype))
        if how == COUNT:
            wraps = rows.wraps[p] = np.empty(wrap_slots(hi - lo), np.int64)
            wraps[0] = 0
            d = (part_count_by if pts.ncat else part_count)(pts, lo, hi, out[p], rows.spans[p], s, wraps)
        elif how == SUM:
            d = part_sum(pts, w, lo, hi, out[p], s)
        elif how == FIXED:
            d = part_fixed(pts, w, factor, center, lo, hi, out[p], rows.out2[p], s)
        else:
            d = part_values(pts, w, how, center, lo, hi, out[p], rows.spans[p], s)
        rows.drops[p] += d

    each(n, parts, piece)


def _count_shared(pts, w, rows, cdt, dirty):
    """_hist's counts in :func:`.parallel.share`'s pieces: each thread takes the next piece
    when done with one, into its own row, so a core that another process keeps busy counts
    fewer points (a fixed half a row waits on it; integer counts add up alike whichever row
    a piece lands in). A row's wraps have room for every point."""
    out, parts, n = rows.out, rows.out.shape[0], pts.x.size
    kernel = part_count_by if pts.ncat else part_count
    scratches = [None] * parts

    def row(t):
        if scratches[t] is None:  # the thread's first piece
            zero(out[t], dirty)
            wraps = rows.wraps[t] = np.empty(wrap_slots(n), np.int64)
            wraps[0] = 0
            scratches[t] = Scratch(np.empty(BLOCK, cdt), np.empty(BLOCK, cdt), *read_only_twin(BLOCK, w.dtype))
        return scratches[t]

    def piece(lo, hi, t):
        rows.drops[t] += kernel(pts, lo, hi, out[t], rows.spans[t], row(t), rows.wraps[t])

    share(n, parts, piece)
    for t in range(parts):
        row(t)  # a row no thread took: zeroed, no wraps


def _hist_banded(pts, w, how, center, rows, shift, rounds, cdt, dirty=()):
    """_hist of 2-D values by :func:`.banded.part_banded` (``rounds`` points set aside and
    sorted at a time)."""
    out, parts, n = rows.out, rows.out.shape[0], pts.x.size
    step = (n + parts - 1) // parts

    def piece(p):
        lo, hi = p * step, min(n, (p + 1) * step)
        zero(out[p], dirty)
        size = min(rounds, max(hi - lo, 1))
        slots = sorted_slots(size, out.shape[1] // 2 - 1, shift)  # the trash cell: the last
        s = Scratch(np.empty(BLOCK, cdt), np.empty(BLOCK, cdt), *read_only_twin(BLOCK, w.dtype))
        a = Aside(scratch("kc", size, np.int32), *read_only_twin(size, w.dtype, "kw"),
                  scratch("sc", slots, np.int32), *read_only_twin(slots, w.dtype, "sw"))
        rows.drops[p] += part_banded(pts, w, how, center, lo, hi, out[p], rows.spans[p], s, a, shift)

    each(n, parts, piece)


@Kernel
def _hist_rows(a, r, out, t, nt):
    """out[i] += the histogram of row i of the 2-D ``a`` (column nb: dropped); rows in parallel."""
    for i in range(t, a.shape[0], nt):
        cx = np.empty(BLOCK, np.int64)
        row = a[i]
        h = out[i]
        for b in range(0, row.size, BLOCK):
            m = min(row.size, b + BLOCK) - b
            codes(row[b:b + m], r, cx)
            for k in range(m):
                h[np.uint64(cx[k])] += 1


def _cell_dtype(ncell: int) -> np.dtype:
    """int32 cell numbers when ``ncell`` cells (and the one for none) fit: twice the lanes of
    int64 (results/probes-cpu.md, partials.py)."""
    return np.dtype(np.int32 if ncell < 2**31 - 1 else np.int64)


def _run(arrays, rx, ry, weights, red, by=None):
    """Drive the _hist kernel over chunks: ``(partial of red, dropped)``.

    Fixed-point low words carry into the high words after each call, so they stay
    below 2**63 whatever the input size.
    """
    acc = _accumulator(red, weights)
    how, dt = acc.how, acc.partial
    two_d = ry is not None
    ncat = 0 if by is None else int(by[1])
    wraps = [] if how == COUNT else None
    ncell = rx.nbins * (ry.nbins if two_d else 1) * (ncat + 1 if ncat else 1)
    pair = 2 if how in VALUES else 1  # the values accumulators interleave [value, n] per cell
    parts = nparts(arrays[0].size, (ncell + 1) * dt.itemsize * (1 if how == COUNT else 2))
    kept = how == COUNT or how in VALUES  # spans say where their rows were written
    shape = (parts, (ncell + 1) * pair)
    out, dirty = partials(shape, dt) if kept else (np.zeros(shape, dt), [])
    out2 = np.zeros((parts, ncell + 1 if how == FIXED else 0), np.int64)
    drops = np.zeros(parts, np.int64)
    spans = np.empty((parts, 2), np.int64)  # [lowest, highest] cell holding values, per partial
    spans[:] = ncell + 1, -1
    total = None
    factor = fixedpoint.factors(red.scale) if how == FIXED else (0.0, 0.0)
    center = np.empty(0)
    if red.center is not None:
        center = np.append(np.asarray(to_host(red.center), np.float64).reshape(-1), 0.0)
    ins = list(arrays) + ([] if by is None else [by[0]]) + ([] if weights is None else [weights])
    kds = [kernel_dtype(v.dtype) for v in ins]
    r1 = rule_args(rx, kds[0])
    r2 = rule_args(ry, kds[1]) if two_d else r1
    cdt = _cell_dtype(ncell)
    if weights is not None and acc.weights != "own":
        kds[-1] = acc.weights
    elif weights is not None and kds[-1] != np.float32:  # values kernels read a value as float64
        kds[-1] = np.dtype(np.float64)  # anyway: one kernel for every other dtype
    dummy = readonly(np.empty(0, np.int8))  # the type of pandas' category codes: one kernel
    rows = _Rows(out, out2, drops, spans, wraps)
    for c in chunks(ins, kds):
        pts = Points(c[0], c[1] if two_d else c[0], two_d, c[len(arrays)] if by is not None else dummy, ncat,
                     r1, r2)
        w = c[-1] if weights is not None else dummy
        if how == COUNT and total is not None:
            out[:] = 0
        shift = _band_shift(how, two_d, ncell, dt.itemsize * pair, pts.x.size // parts)
        if shift >= 0:
            _hist_banded(pts, w, how, center, rows, shift, BAND_POINTS, cdt, dirty)
        else:
            _hist(pts, w, how, factor, center, rows, cdt, dirty)
        dirty = ()
        if how == COUNT:  # part_count counts the dropped points in the last slot
            part = _fold(out, _count_ranges(spans, ncell, ncat), wraps or ())
            drops[0] += part[ncell]
            total = part if total is None else np.add(total, part, out=total)
        elif how == FIXED:
            out += out2 >> fixedpoint.SPLIT
            out2 &= (1 << fixedpoint.SPLIT) - 1
    if how == COUNT:
        res = total[:ncell]
    elif how == FIXED:
        res = fixedpoint.merge(np.stack([out[:, :ncell], out2[:, :ncell]], axis=1))
    elif pair == 2:
        ident = red.identity[0] if red.identity else 0.0
        res = np.zeros((2, ncell))  # cells no partial spans stay [ident, 0]: for MEAN never written
        if ident:
            res[0] = ident
        lo, hi = max(0, int(spans[:, 0].min())), min(ncell, int(spans[:, 1].max()) + 1)
        each(max(hi - lo, 0), -(-max(hi - lo, 0) // FOLD_PIECE), lambda u: merge_values(
            out, spans, how, ident, res, lo + u * FOLD_PIECE, min(hi, lo + (u + 1) * FOLD_PIECE)))
    else:
        res = out.sum(axis=0)[:ncell]
    if kept:  # rows written where the spans say; once read (another thread's call may take them)
        keep(out, _count_ranges(spans, ncell, ncat) if how == COUNT else _value_ranges(spans, ncell, pair))
    return res, int(drops.sum())


#: the most counters (values: cells) per piece of the threaded fold of partials
FOLD_PIECE = 1 << 18


def _value_ranges(spans, ncell, pair):
    """The slot range of values partials (``pair`` slots a cell) that any row's span covers,
    the cell of points in none (the last) included."""
    lo, hi = max(0, int(spans[:, 0].min())), min(ncell, int(spans[:, 1].max()))
    return ([(lo * pair, (hi + 1) * pair)] if lo <= hi else []) + [(ncell * pair, (ncell + 1) * pair)]


def _count_ranges(spans, ncell, ncat):
    """The [start, stop) ranges of count partials of ``ncell`` slots (categories included) that
    hold counts: each category's share of the cells the kernels spanned, and the last slot
    (the points in none)."""
    cells = ncell // (ncat + 1) if ncat else ncell
    lo, hi = int(spans[:, 0].min()), min(int(spans[:, 1].max()), cells - 1)
    groups = range(ncat + 1 if ncat else 1) if lo <= hi else ()
    return [(g * cells + lo, g * cells + hi + 1) for g in groups] + [(ncell, ncell + 1)]


def _fold(out, ranges, wraps=()):
    """The int64 sum of the count partials ``out[p]`` over the slot ``ranges`` (the rest is 0)
    and of their ``wraps`` (:func:`.wraps.unwrap`): :func:`.wraps.fold` on pieces of the ranges,
    at least one a thread (not ``out.sum(axis=0, dtype=int64)``). All points in one cell by
    8 categories: 9 slots' pieces read, not 2 x 37 MB of partials (results/probes-cpu.md,
    partials.py)."""
    total = np.zeros(out.shape[1], np.int64)  # pieces no point reached stay the OS's zero pages
    span = sum(b - a for a, b in ranges)
    size = max(FOLD_BLOCK, min(FOLD_PIECE, -(-span // threads())))
    pieces = [(a, min(b, a + size)) for lo, b in ranges for a in range(lo, b, size)]
    each(span, len(pieces), lambda u: fold(out, *pieces[u], total))
    for w in wraps:
        unwrap(total, w)
    return total


def _band_shift(how, two_d, ncell, cell_bytes, share):
    """log2 of the cells per band of the banded scatter, or -1 for the plain one: banded for
    2-D values (counts by 8 categories measured no faster) whose per-thread grid is over
    BAND_FROM bytes, with enough points per thread to fill the bands, and cell numbers that
    fit int32."""
    if (not two_d or how not in VALUES or ncell * cell_bytes < BAND_FROM
            or share < BAND_MIN_POINTS or ncell >= 2**31 - 1):
        return -1
    return max(0, (BAND_BYTES // cell_bytes).bit_length() - 1)


def histogram(a, rule: BinRule, weights=None, red=reductions.COUNT):
    """The partial of ``red`` over the bins of ``rule``: ``red.lead + (nbins,)``."""
    a = np.asarray(a)
    kd = kernel_dtype(a.dtype)
    acc = _accumulator(red, weights)
    if acc.how == COUNT:
        return (lut_counts if kd in LUT_KINDS else counts_1d)(a, kd, rule)
    if acc.how == SUM:
        return sums_1d(a, kd, rule, weights, acc.partial, acc.weights)
    return _run([a], rule, None, weights, red)[0]


def histogram2d(x, y, rx: BinRule, ry: BinRule, weights=None, red=reductions.COUNT, by=None):
    """``(partial of red over red.lead + (nx, ny), points in a cell)``; with
    ``by=(codes, ncat)`` over ``red.lead + (ncat + 1, nx, ny)``."""
    x = np.asarray(x)
    if by is not None:
        by = (np.asarray(by[0]), int(by[1]))
    res, dropped = _run([x, np.asarray(y)], rx, ry, weights, red, by)
    cats = () if by is None else (by[1] + 1,)
    return res.reshape(res.shape[:-1] + cats + (rx.nbins, ry.nbins)), x.size - dropped


def bin_index(a, rule: BinRule) -> np.ndarray:
    """:meth:`BinRule.index` by the kernels' bin codes (:func:`.rule.codes`, a piece per thread):
    each value's bin as int64, -1 for none. histogramdd's D >= 3 cells (NumPy's searchsorted
    was slow there; results/probes-cpu.md, partials.py)."""
    a = np.asarray(a).reshape(-1)
    kd = kernel_dtype(a.dtype)
    r = rule_args(rule, kd)
    out = np.empty(a.size, np.int32)
    at = 0
    for (c,) in chunks([a], [kd]):
        n = c.size
        o = out[at:at + n]
        parts = nparts(n, 0)
        step = (n + parts - 1) // parts
        each(n, parts, lambda p: codes(c[p * step:(p + 1) * step], r, o[p * step:(p + 1) * step]))
        at += n
    i = out.astype(np.int64)
    i[out == rule.nbins] = -1
    return i


def histogram_rows(a, rule: BinRule):
    """``(N, nbins)`` int64 counts, one histogram per row of the 2-D ``a``."""
    a = np.asarray(a)
    a = readonly(np.ascontiguousarray(a, kernel_dtype(a.dtype)))
    out = np.zeros((a.shape[0], rule.nbins + 1), np.int64)
    _hist_rows(a.size, a, rule_args(rule, a.dtype), out)
    return out[:, :rule.nbins]
