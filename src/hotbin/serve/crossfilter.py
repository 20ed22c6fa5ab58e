"""Linked histograms: every panel of a view filtered by every brush but its own, in one pass.

A brush is a half-open range ``[lo, hi)`` on a column (or a set of categories of the ``--by``
column, or the map's box). Each row gets a small integer mask, bit ``b`` set when the row
fails brush ``b``; a row counts in panel ``p`` iff ``mask & ~own_p == 0``, so a histogram is
filtered by every other brush and a brush never empties its own panel. One numba loop
computes the masks and every histogram panel at once (:func:`_pass`), and marks the rows the
map shows (those failing no brush but the box) and the rows that pass them all. Bins are
``numpy.histogram``'s: each panel's rows are binned once by the cpu backend's exact rule
(:func:`hotbin.core.binning.histogram_rule`, ``bin_index``), the pass then reads two bytes a row.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from numba import prange, types
from numba.typed import List

from ..backend import load
from ..core._jit import njit
from ..core.arrays import xp
from ..core.binning import histogram_rule

__all__ = ["Crossfilter", "Filters", "Panel", "MAX_BINS", "panel_bins"]

#: the most bins a histogram panel may have
MAX_BINS = 10_000
#: results of passes kept (each holds a byte per row)
KEEP = 4
#: bit 0 of a row's state: it passes every brush but the box (the map shows it); bit 1: every one
MAP, ALL = np.uint8(1), np.uint8(2)  # uint8: a state masked by them stays a byte a row (CuPy too)
#: rows a chunk's loop handles at a time: their masks first, then each panel's bins
BLOCK = 2048
#: slots after a panel's bins where rows in none of them count, in turn (one slot would make
#: every such row wait for the previous one's increment)
TRASH = 8
#: rows a column's extent and a device panel's bins are found at a time (their float64 copies)
SLAB = 1 << 26
#: rows are split in this many chunks for the parallel loops
CHUNKS = 64
#: the numba type of a panel's binned rows (the pass takes a typed list of them)
_U16_ROW = types.Array(types.uint16, 1, "C")


@dataclass(frozen=True)
class Filters:
    """Brushes by column: ``ranges`` ``((name, lo, hi), ...)`` half-open, ``cats`` the category
    codes kept (``None``: no category brush), ``box`` ``(x0, x1, y0, y1)`` on the map's axes."""

    ranges: tuple = ()
    cats: tuple | None = None
    box: tuple | None = None

    @property
    def map_key(self) -> tuple:
        """What the map's rows depend on: every brush but the box."""
        return (self.ranges, self.cats)

    @property
    def key(self) -> tuple:
        return (self.ranges, self.cats, self.box)

    @property
    def empty(self) -> bool:
        return not self.ranges and self.cats is None and self.box is None


@dataclass(frozen=True)
class Panel:
    """A histogram of ``column`` over ``bins`` equal bins of ``[lo, hi]`` (numpy.histogram's)."""

    column: str
    bins: int
    lo: float
    hi: float

    @property
    def edges(self) -> np.ndarray:
        return np.histogram_bin_edges(np.empty(0), self.bins, (self.lo, self.hi))


class Crossfilter:
    """The columns a server can brush and histogram, on the host, and passes over them.

    Parameters
    ----------
    columns : dict of str to 1-D arrays
        Every column a brush or a panel may name (float64 copies are kept).
    box : (array, array)
        The map's coordinates (as the map bins them: projected when it is), for the box brush.
    codes, labels : optional
        The ``--by`` category codes and their names; ``by`` the column's name.
    """

    def __init__(self, columns: dict, box, codes=None, labels=None, by=None):
        self.names = list(columns)
        self.cols = self._hold([*columns.values(), *box])  # the columns, then the box axes
        self.codes = None if codes is None else self._hold_codes(codes)
        self.labels, self.by = labels, by
        self._ranges = {}  # column -> (lo, hi) of its finite values, computed once
        self._kept: OrderedDict = OrderedDict()  # Filters.key -> (state, {Panel: counts})
        self._lock = threading.Lock()
        self._pre = {}  # Panel -> its rows' bins (uint16; ``bins`` for none): the page's panels
        self._asked: OrderedDict = OrderedDict()  # the same for panels asked for besides (KEEP)
        self._defaults = []  # the panels every pass counts (the page asks for them next)
        self._subset = (None, None)  # (map key, compacted arrays): the map's rows, the latest

    def _hold(self, arrays):
        """The columns as the pass reads them: one float64 row each."""
        cols = np.empty((len(arrays), len(arrays[-1])), np.float64)
        for k, a in enumerate(arrays):
            cols[k] = np.asarray(a, np.float64)
        return cols

    def _hold_codes(self, codes):
        return np.asarray(codes, np.int32)

    def prebin(self, panels) -> None:
        """Bin every row of each panel once (a byte pair per row): a pass then reads that
        instead of the column's float64 and its arithmetic."""
        panels = list(dict.fromkeys(panels))
        self._pre = {p: self._binned(p) for p in panels}
        self._defaults = panels

    def _binned(self, p: Panel) -> np.ndarray:
        """Each row's bin in panel ``p`` (:func:`panel_bins`)."""
        return panel_bins(self.cols[self.names.index(p.column)], p.bins, p.lo, p.hi)

    def _bins_of(self, p: Panel) -> np.ndarray:
        """The rows' bins of panel ``p``: prebinned, or binned now and kept (the latest KEEP)."""
        got = self._pre.get(p)
        if got is None:
            with self._lock:
                got = self._asked.pop(p, None)
            if got is None:
                got = self._binned(p)
            with self._lock:
                self._asked[p] = got
                while len(self._asked) > KEEP:
                    self._asked.popitem(last=False)
        return got

    def map_count(self, filters: Filters) -> int:
        """How many rows the map shows under ``filters``."""
        key, cut = self._subset
        if key is not None and key[0] == filters.map_key:
            return len(cut[0])
        state = self._map_state(filters)
        return self.n if state is None else int(xp(state).count_nonzero(state & MAP))

    def subset(self, filters: Filters, arrays):
        """``arrays`` (NumPy, one per row) cut to the rows the map shows, in order (compacted
        on every core); None when every row is shown. The latest subset is kept."""
        if not filters.map_key[0] and filters.map_key[1] is None:
            return None
        key = (filters.map_key, tuple(id(a) for a in arrays))
        if self._subset[0] == key:
            return self._subset[1]
        state = self._map_state(filters)
        starts, ends = _chunk_starts(state, MAP)
        out = []
        for a in arrays:
            if a is None:
                out.append(None)
                continue
            dst = np.empty(starts[-1], a.dtype)
            _scatter(state, MAP, starts, ends, a, dst)
            out.append(dst)
        self._subset = (key, out)
        return out

    @property
    def n(self) -> int:
        return self.cols.shape[1]

    def data_range(self, column: str) -> tuple[float, float]:
        """The finite extent of ``column`` (``(0, 1)`` when it has no finite value), a slab at a
        time (a column on the device keeps its dtype; its float64 temporaries stay bounded)."""
        if column not in self._ranges:
            a = self.cols[self.names.index(column)]
            x, lo, hi = xp(a), np.inf, -np.inf
            for s in range(0, a.size, SLAB):
                v = a[s:s + SLAB]
                fin = x.isfinite(v)
                lo = min(lo, float(x.where(fin, v, np.inf).min()))
                hi = max(hi, float(x.where(fin, v, -np.inf).max()))
            self._ranges[column] = (lo, hi) if lo <= hi else (0.0, 1.0)
        return self._ranges[column]

    def histograms(self, filters: Filters, panels) -> list[np.ndarray]:
        """The counts of each panel over the rows passing every brush but the panel's own."""
        state, counts = self._run(filters, list(panels))
        return [counts[p] for p in panels]

    def map_rows(self, filters: Filters, extra=()) -> np.ndarray | None:
        """Per row, True when it passes every brush but the box (the rows the map shows); None
        when there is no such brush. ``extra``: panels to count in the same pass if one is run."""
        state = self._map_state(filters, extra)
        return None if state is None else (state & MAP).view(np.bool_)

    def _map_state(self, filters: Filters, extra=()):
        """A state of every row under ``filters``' brushes but the box (kept, or a new pass)."""
        if not filters.map_key[0] and filters.map_key[1] is None:
            return None
        with self._lock:
            for key, (state, _) in reversed(self._kept.items()):
                if key[:2] == filters.map_key:
                    return state
        return self._run(filters, list(extra))[0]

    def passing(self, filters: Filters) -> np.ndarray:
        """Row numbers (int64, in order) passing every brush and the box."""
        state = self._run(filters, [])[0] if not filters.empty else None
        x = xp(self.cols[-1])
        if state is None:
            return x.arange(self.n, dtype=np.int64)
        return x.flatnonzero(state & ALL).astype(np.int64, copy=False)

    def _run(self, filters: Filters, panels: list):
        with self._lock:
            hit = self._kept.get(filters.key)
            if hit is not None and all(p in hit[1] for p in panels):
                self._kept.move_to_end(filters.key)
                return hit
        panels = list(dict.fromkeys(panels + self._defaults + ([] if hit is None else list(hit[1]))))
        args, bits = self._brushes(filters)
        entry = self._count(args, [bits.get(p.column, 0) for p in panels], panels)
        with self._lock:
            self._kept[filters.key] = entry
            while len(self._kept) > KEEP:
                self._kept.popitem(last=False)
        return entry

    def _count(self, args, own: list, panels: list):
        """``(state, {panel: counts})`` of one pass: :meth:`_brushes`' arguments, each panel's
        own brush bits."""
        start = np.cumsum([0] + [p.bins + TRASH for p in panels])  # each panel's bins, then slots for none
        state = np.empty(self.n, np.uint8)
        binned = List.empty_list(_U16_ROW)
        for p in panels:
            binned.append(self._bins_of(p))
        flat = _pass(self.cols, *args, np.array(own, np.int64), start.astype(np.int64), binned, state)
        return state, {p: flat[start[k]:start[k] + p.bins] for k, p in enumerate(panels)}

    def _brushes(self, filters: Filters):
        """The kernel's brush arguments, and each brushed column's bit."""
        cols, lo, hi, bit, bits = [], [], [], [], {}
        for k, (name, a, b) in enumerate(filters.ranges):
            cols.append(self.names.index(name))
            lo.append(a)
            hi.append(b)
            bit.append(1 << k)
            bits[name] = 1 << k
        box_bit = 0
        if filters.box is not None:
            box_bit = 1 << len(filters.ranges)
            x0, x1, y0, y1 = filters.box
            m = len(self.names)
            cols += [m, m + 1]
            lo += [x0, y0]
            hi += [x1, y1]
            bit += [box_bit, box_bit]
        cat_bit, keep, codes = 0, np.zeros(0, np.uint8), np.zeros(0, np.int32)
        if filters.cats is not None and self.codes is not None:
            cat_bit = 1 << (len(filters.ranges) + 1)
            keep = np.zeros(len(self.labels), np.uint8)
            keep[list(filters.cats)] = 1
            codes = self.codes
            bits[self.by] = cat_bit
        args = (np.array(cols, np.int64), np.array(lo, np.float64), np.array(hi, np.float64),
                np.array(bit, np.int64), codes, keep, cat_bit, box_bit)
        return args, bits


def panel_bins(col, bins: int, lo: float, hi: float):
    """Each value's bin (uint16; ``bins`` for none) by the exact rule of
    ``numpy.histogram(col, bins, (lo, hi))`` of float64 values: the cpu backend's ``bin_index``
    on the host, :meth:`BinRule.index` on a CuPy array's device (widened to float64 there)."""
    rule = histogram_rule(np.empty(0, np.float64), bins, (lo, hi))
    x = xp(col)
    i = load("cpu").bin_index(col, rule) if x is np else rule.index(col.astype(x.float64))
    return x.where(i < 0, bins, i).astype(np.uint16)


@njit(parallel=True, cache=True, nogil=True)
def _pass(cols, bcol, blo, bhi, bbit, codes, keep, cat_bit, box_bit, pown, pstart, bins, state):
    """Each row's brush mask, its state bits, and its count in every panel whose other brushes
    it passes (``bins[p]``: the rows' bins of panel ``p``, its bin count for none); per-chunk
    partial counts, summed. NaN fails every brush and lands in no bin.

    One pass over the rows: a chunk takes them a block at a time (the masks of the block, then
    each panel's bins of it), so the inner loops are simple enough to vectorize and the block's
    data is read once. A row in no bin of a panel counts in the panel's last slot (dropped)."""
    n = cols.shape[1]
    chunks = CHUNKS if n > 1 << 16 else 1
    size = (n + chunks - 1) // chunks
    total = pstart[pstart.size - 1]
    part = np.zeros((chunks, max(total, 1)), np.int64)
    for c in prange(chunks):
        h = part[c]
        m = np.empty(BLOCK, np.int64)
        stop = min(n, (c + 1) * size)
        for r0 in range(c * size, stop, BLOCK):
            w = min(BLOCK, stop - r0)
            m[:w] = 0
            for b in range(bcol.size):
                a, lo, hi, bit = cols[bcol[b], r0:r0 + w], blo[b], bhi[b], bbit[b]
                for t in range(w):
                    v = a[t]
                    m[t] |= bit * (1 - ((v >= lo) & (v < hi)))
            if cat_bit != 0:
                for t in range(w):
                    k = codes[r0 + t]
                    if k < 0 or k >= keep.size or keep[k] == 0:
                        m[t] |= cat_bit
            out = state[r0:r0 + w]
            for t in range(w):
                mt = m[t]
                out[t] = ((mt & ~box_bit) == 0) + 2 * (mt == 0)
            for p in range(pown.size):
                other, base, nb = ~pown[p], pstart[p], pstart[p + 1] - pstart[p] - TRASH
                bq = bins[p][r0:r0 + w]
                for t in range(w):  # without branches: a row failing another brush counts in no bin
                    i = np.int64(bq[t])
                    h[base + i + (nb + (t & 7) - i) * np.int64((m[t] & other) != 0)] += 1
    out = np.zeros(total, np.int64)
    for c in range(chunks):
        for t in range(total):
            out[t] += part[c, t]
    return out


@njit(parallel=True, cache=True, nogil=True)
def _chunk_starts(state, bit):
    """Where each chunk's rows with ``bit`` set start in the compacted arrays (the last entry:
    how many there are), and the row after each chunk's last such row."""
    n = state.size
    size = (n + CHUNKS - 1) // CHUNKS
    counts = np.zeros(CHUNKS + 1, np.int64)
    ends = np.zeros(CHUNKS, np.int64)
    for c in prange(CHUNKS):
        t, end = 0, c * size
        for r in range(c * size, min(n, (c + 1) * size)):
            f = (state[r] & bit) != 0
            t += f
            end = r + 1 if f else end
        counts[c + 1], ends[c] = t, end
    return np.cumsum(counts), ends


@njit(parallel=True, cache=True, nogil=True)
def _scatter(state, bit, starts, ends, src, dst):
    """Without branches: every row up to the chunk's last kept one is written where the next
    kept row goes (a row not kept is overwritten by it), so the writes stay in the chunk's
    own part of ``dst``."""
    n = state.size
    size = (n + CHUNKS - 1) // CHUNKS
    for c in prange(CHUNKS):
        k = starts[c]
        for r in range(c * size, ends[c]):
            dst[k] = src[r]
            k += (state[r] & bit) != 0
