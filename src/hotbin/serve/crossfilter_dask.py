"""Linked histograms over Dask columns: the :class:`~hotbin.serve.crossfilter.Crossfilter`
whose rows stay on the cluster, each brush state one Dask job over the partitions.

Nothing a row is kept: no float64 copies, no prebinned rows, no state bytes. A brush state is
one pass: each partition's task runs the host's own loop (:func:`hotbin.serve.crossfilter._pass`)
on its blocks, binned by the host's rule (:func:`hotbin.core.binning.histogram_rule` of the
panel's range, the cpu backend's ``bin_index``), and returns every panel's counts and how many
of its rows the map shows and how many pass everything; the counts are summed in a tree. The
map's rows are a lazy mask (the map is then :func:`hotbin.heatmap` of the cut dask arrays);
row numbers are found per partition, offset by the rows before it, and only in the partitions
a drill-down page reaches. Answers are the host's, count for count; each costs a read of the
columns it names.
"""
from __future__ import annotations

import threading

import numpy as np
from numba.typed import List

from ..backend import load
from ..core.arrays import align_dask, as_dask
from .crossfilter import _U16_ROW, ALL, MAP, TRASH, Crossfilter, Filters, _pass, panel_bins

__all__ = ["DaskCrossfilter"]

#: the cpu backend loaded by one task at a time (a first import from several threads races)
_LOAD = threading.Lock()


class DaskCrossfilter(Crossfilter):
    """A :class:`~hotbin.serve.crossfilter.Crossfilter` over dask arrays (any others are made
    dask arrays), chunked as the map's x: its partitions are the pass's.

    :meth:`histograms`, :meth:`map_count`, :meth:`data_range` and :meth:`passing` compute;
    :meth:`map_rows` and :meth:`subset` are lazy dask arrays.
    """

    def _hold(self, arrays):
        """The columns as dask arrays in their own dtype, chunked as the map's x."""
        ref = _known(as_dask(arrays[-2], "x"))
        out = []
        for name, a in zip([*self.names, "x", "y"], arrays):
            a = align_dask(ref, _known(as_dask(a, name)), name)
            if a.ndim != 1 or a.dtype.kind not in "biuf":
                raise TypeError(f"hist: column {name!r} has dtype {a.dtype} and {a.ndim} "
                                "dimension(s); expected 1-D real numbers")
            out.append(a)
        self.offsets = np.cumsum((0,) + ref.chunks[0])  # each partition's first row
        with _LOAD:
            load("cpu")
        return out

    def _hold_codes(self, codes):
        return align_dask(self.cols[-1], _known(as_dask(codes, "by")), "by")

    @property
    def n(self) -> int:
        return int(self.offsets[-1])

    def prebin(self, panels) -> None:
        """Name the panels every pass counts (the page asks for them next); rows are binned
        in each pass, partition by partition, not kept."""
        self._defaults = list(dict.fromkeys(panels))

    def data_range(self, column: str) -> tuple[float, float]:
        """The finite extent of ``column`` (``(0, 1)`` when it has no finite value); the first
        call finds every column's in one pass."""
        if column not in self._ranges:
            import dask

            ext = [_per_block(_finite_extent, [a], 2, np.float64) for a in self.cols[:len(self.names)]]
            got = dask.compute(*[(e[:, 0].min(), e[:, 1].max()) for e in ext])
            for name, (lo, hi) in zip(self.names, got):
                self._ranges[name] = (float(lo), float(hi)) if lo <= hi else (0.0, 1.0)
        return self._ranges[column]

    def _count(self, args, own: list, panels: list):
        """``(per-partition (map, all) counts, {panel: counts})`` of one Dask job."""
        import dask

        spec, blocks = self._spec(args, own, panels)
        bins = [p.bins for p in panels]
        parts = _per_block(_block_counts, blocks, sum(bins) + 2, np.int64, spec=spec)
        total, rows = dask.compute(parts.sum(axis=0), parts[:, -2:])
        start = np.cumsum([0] + bins)
        return rows, {p: total[start[k]:start[k + 1]] for k, p in enumerate(panels)}

    def _spec(self, args, own=(), panels=()):
        """A task's arguments and the dask arrays it reads: the columns the brushes and the
        panels name (renumbered in that order), the codes with a category brush."""
        bcol, blo, bhi, bbit, _, keep, cat_bit, box_bit = args
        pcol = [self.names.index(p.column) for p in panels]
        used = list(dict.fromkeys([*bcol.tolist(), *pcol]))
        at = {c: k for k, c in enumerate(used)}
        blocks = [self.cols[c] for c in used] + ([self.codes] if cat_bit else [])
        if not blocks:  # no brush, no panel: the rows' count is all a pass needs
            blocks, used = [self.cols[-1]], [len(self.cols) - 1]
        brushes = (np.array([at[c] for c in bcol.tolist()], np.int64), blo, bhi, bbit, keep,
                   int(cat_bit), int(box_bit))
        hists = [(at[c], p.bins, p.lo, p.hi, int(o)) for c, p, o in zip(pcol, panels, own)]
        return (len(used), brushes, hists), blocks

    def map_count(self, filters: Filters) -> int:
        """How many rows the map shows under ``filters``."""
        if not filters.map_key[0] and filters.map_key[1] is None:
            return self.n
        with self._lock:
            for key, (rows, _) in reversed(self._kept.items()):
                if key[:2] == filters.map_key:
                    return int(rows[:, 0].sum())
        return int(self._run(filters, [])[0][:, 0].sum())

    def _states(self, filters: Filters):
        """Each row's state byte (:data:`MAP`, :data:`ALL`) under ``filters``, lazily."""
        spec, blocks = self._spec(self._brushes(filters)[0])
        return _per_block(_block_state, blocks, None, np.uint8, spec=spec)

    def map_rows(self, filters: Filters, extra=()):
        """Per row (a lazy dask bool array), True when it passes every brush but the box; None
        when there is no such brush."""
        if not filters.map_key[0] and filters.map_key[1] is None:
            return None
        return (self._states(filters) & MAP) != 0

    def subset(self, filters: Filters, arrays):
        """``arrays`` (one value per row) cut to the rows the map shows, in order, as lazy dask
        arrays; None when every row is shown."""
        keep = self.map_rows(filters)
        if keep is None:
            return None
        return [None if a is None else align_dask(keep, as_dask(a, "arrays"), "arrays")[keep]
                for a in arrays]

    def passing(self, filters: Filters) -> np.ndarray:
        """Row numbers (int64, in order) passing every brush and the box."""
        return self.passing_slice(filters, 0, self.n)[1]

    def passing_slice(self, filters: Filters, offset: int, limit: int):
        """``(count, rows)``: how many rows pass every brush and the box, and the row numbers
        (int64, in order) of ``limit`` of them from the ``offset``-th, found only in the
        partitions that hold them."""
        if filters.empty:
            return self.n, np.arange(min(offset, self.n), min(offset + limit, self.n), dtype=np.int64)
        per = self._run(filters, [])[0][:, 1]  # each partition's passing rows: kept, or a pass
        ends = np.cumsum(per)
        first = int(np.searchsorted(ends, offset, side="right"))
        last = int(np.searchsorted(ends, offset + limit, side="left"))
        wanted = [k for k in range(first, min(last + 1, len(per))) if per[k]]
        if not wanted:
            return int(ends[-1]) if ends.size else 0, np.zeros(0, np.int64)
        import dask

        states = self._states(filters).to_delayed().ravel()
        found = dask.compute(*[dask.delayed(_passing_rows)(states[k], self.offsets[k])
                               for k in wanted])
        skip = offset - (int(ends[wanted[0] - 1]) if wanted[0] else 0)
        rows = np.concatenate(found)[skip:skip + limit]
        return int(ends[-1]), rows


def _known(a):
    """``a`` with its partitions' lengths known (found in a pass when they are not): rows are
    then found by number, and columns chunked alike."""
    return a.compute_chunk_sizes() if any(np.isnan(c) for c in a.chunks[0]) else a


def _per_block(fn, blocks, width, dtype, **kwargs):
    """``fn(*block, **kwargs)`` per partition, lazily: a ``(partitions, width)`` array, or an
    array of a value per row when ``width`` is None."""
    from dask.array import map_blocks

    if width is None:
        return map_blocks(fn, *blocks, dtype=dtype, **kwargs)
    parts = ((1,) * blocks[0].numblocks[0], (width,))
    return map_blocks(fn, *blocks, dtype=dtype, new_axis=1, chunks=parts, **kwargs)


def _finite_extent(a):
    """``[[min, max]]`` of a block's finite values (``[[inf, -inf]]`` with none)."""
    a = np.asarray(a, np.float64)
    fin = a[np.isfinite(a)]
    return np.array([[fin.min(), fin.max()] if fin.size else [np.inf, -np.inf]])


def _run_block(spec, blocks, with_panels=True):
    """The host's pass over one partition: ``(state, flat counts)``."""
    ncols, (bcol, blo, bhi, bbit, keep, cat_bit, box_bit), hists = spec
    n = len(blocks[0])
    cols = np.empty((ncols, n), np.float64)
    for k in range(ncols):
        if len(blocks[k]) != n:
            raise ValueError(f"a partition's columns have {len(blocks[k])} and {n} rows")
        cols[k] = blocks[k]
    codes = np.asarray(blocks[ncols], np.int32) if cat_bit else np.zeros(0, np.int32)
    hists = hists if with_panels else []
    binned = List.empty_list(_U16_ROW)
    with _LOAD:
        load("cpu")
    for c, bins, lo, hi, _ in hists:
        binned.append(panel_bins(cols[c], bins, lo, hi))
    start = np.cumsum([0] + [h[1] + TRASH for h in hists]).astype(np.int64)
    own = np.array([h[4] for h in hists], np.int64)
    state = np.empty(n, np.uint8)
    flat = _pass(cols, bcol, blo, bhi, bbit, codes, keep, cat_bit, box_bit, own, start, binned, state)
    return state, [flat[s:s + h[1]] for s, h in zip(start, hists)]


def _block_counts(*blocks, spec):
    """A partition's every panel's counts, then its rows the map shows and those passing all."""
    state, counts = _run_block(spec, blocks)
    tail = [np.count_nonzero(state & MAP), np.count_nonzero(state & ALL)]
    return np.concatenate(counts + [np.array(tail, np.int64)])[None, :]


def _block_state(*blocks, spec):
    """A partition's state bytes (no panel counted)."""
    return _run_block(spec, blocks, with_panels=False)[0]


def _passing_rows(state, offset):
    """The global row numbers of a partition's rows passing everything."""
    return np.flatnonzero(state & ALL).astype(np.int64) + np.int64(offset)

