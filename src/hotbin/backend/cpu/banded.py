"""The banded scatter of 2-D values: grids larger than the caches, their points sorted by band.

:func:`part_banded` is :func:`.scatter.part_values` for a grid whose per-thread partial
does not fit the caches: the points outside each block's hot cell are set aside, sorted by
band of cells (a counting sort) and added band by band, so a band's cells stay in cache
while its points land.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core._jit import njit
from .scatter import BLOCK, _cells, _grid, _hot, _in_cell, _one_cell, _widen
from .values import add_block, add_whole, set_aside

__all__ = ["BAND_FROM", "BAND_BYTES", "BAND_POINTS", "BAND_MIN_POINTS", "BAND_PAD", "Aside", "sorted_slots",
           "part_banded"]

#: the banded scatter (part_banded): grids per thread from BAND_FROM bytes, bands of
#: BAND_BYTES, from BAND_MIN_POINTS points per thread; the points outside hot cells are set
#: aside and sorted BAND_POINTS at a time unless over 1/SPREAD of them crowd into one band
#: (sorting pays for scattered points, not for hot spots; results/probes-cpu.md, banded.py)
BAND_FROM = 8 << 20
BAND_BYTES = 256 << 10
BAND_POINTS = 1 << 21
BAND_MIN_POINTS = 1 << 20
SPREAD = 4
#: slots between bands in the sorted buffers: band starts a multiple of 4 KB apart share L1
#: cache sets (results/probes-cpu.md, banded.py)
BAND_PAD = 16


class Aside(NamedTuple):
    """A thread's buffers of points set aside (cells ``kc``, values ``kw``) and of the same
    points sorted by band (``sc``, ``sw``); ``*_read``: read-only views the adds read through."""

    kc: np.ndarray
    kw: np.ndarray
    kw_read: np.ndarray
    sc: np.ndarray
    sw: np.ndarray
    sw_read: np.ndarray


def sorted_slots(points, trash, shift):
    """Slots of part_banded's sorted buffers (``sc``, ``sw``) for rounds of ``points`` points
    over cells 0 .. ``trash``: the points and BAND_PAD after each band of ``2**shift`` cells."""
    return points + ((trash >> shift) + 2) * BAND_PAD


@njit
def _add_blocks(cs, ws, n, how, center, h, s):
    """The n points of cells cs, values ws added a block at a time (:func:`add_block`)."""
    for b in range(0, n, BLOCK):
        m = min(n, b + BLOCK) - b
        seg = cs[b:b + m]
        hot, same = _hot(seg, m)
        add_block(seg, m, ws[b:b + m], how, center, h, hot, same, s.cy, s.tv, s.tv_read)


@njit
def _sorted_add(a, n, starts, shift, how, center, h, s):
    """The n points set aside in ``a`` (:class:`Aside`) added band by band (:func:`part_banded`;
    the adds read the values through the read-only views)."""
    kc, kw, sc, sw = a.kc, a.kw, a.sc, a.sw
    starts[:] = 0
    for k in range(n):
        starts[(kc[k] >> shift) + 1] += 1
    most = 0  # loops, not starts.max() or slice copies: numba compiles those with their
    for i in range(starts.size):  # error messages (seconds of part_banded's first compile)
        most = max(most, starts[i])
    if most * SPREAD > n:  # crowded: added in their order
        _add_blocks(kc, a.kw_read, n, how, center, h, s)
        return
    for i in range(starts.size - 1):  # band i from starts[i], BAND_PAD slots after band i - 1
        starts[i + 1] += starts[i] + BAND_PAD
    for k in range(n):
        c = kc[k]
        band = c >> shift
        pos = starts[band]
        starts[band] = pos + 1
        sc[pos] = c
        sw[pos] = kw[k]
    lo = 0
    for band in range(starts.size - 1):  # starts[band]: where the band ends now
        e = starts[band]
        _add_blocks(sc[lo:e], a.sw_read[lo:e], e - lo, how, center, h, s)
        lo = e + BAND_PAD


@njit(nogil=True, cache=True)
def part_banded(p, w, how, center, start, stop, h, span, s, a, shift):
    """part_values for a 2-D grid of values too large for the caches (MEAN, MIN, MAX). The
    points are binned a block at a time as part_values does (a block's hot cell folded at
    once, :func:`set_aside`); the other points' cells and values are set aside in ``kc``,
    ``kw`` and, each time those fill, sorted by band of ``2**shift`` cells (a stable
    counting sort into ``sc``, ``sw``) and added band by band, so each band's cells stay in
    cache while its points land. A full buffer, not a fixed share of the input: with 90 %
    of the points in one cell the scattered 10 % fill the bands as densely as uniform
    points do (results/probes-cpu.md, banded.py). Points set aside
    that crowd into one band (a hot region, not one cell) are added unsorted: sorting
    would not pay. Stable: a cell sees its points in their order (sums equal
    :func:`part_values`' to rounding: see the module's note)."""
    nx, ny, ncell, trash = _grid(p, p.ncat)
    cx, kc, kw = s.cx, a.kc, a.kw
    starts = np.empty((trash >> shift) + 2, np.int64)
    dropped = 0
    one = np.int64(-1)  # cells with categories are not tested (ncat > 0)
    j = np.int64(0)  # points set aside
    for b in range(start, stop, BLOCK):
        m = min(stop, b + BLOCK) - b
        if j + m > kc.size:
            _sorted_add(a, j, starts, shift, how, center, h, s)
            j = np.int64(0)
        ws = w[b:b + m]
        if _in_cell(p, b, m, one, ny):
            add_whole(m, ws, how, center, h, one)
            continue
        dropped += _cells(p, p.ncat, b, m, cx, s.cy, ncell, trash)
        _widen(span, cx, m)
        hot, same = _hot(cx, m)
        one = _one_cell(hot, same, m, ncell if p.ncat == 0 else 0)
        if hot >= 0:
            j += set_aside(cx, m, ws, how, center, h, hot, same, kc[j:j + m], kw[j:j + m])
        else:
            for k in range(m):
                kc[j + k] = cx[k]
                kw[j + k] = ws[k]
            j += m
    _sorted_add(a, j, starts, shift, how, center, h, s)
    return dropped
