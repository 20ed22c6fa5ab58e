"""Linked histograms with the data on the GPU: the :class:`~hotbin.serve.crossfilter.Crossfilter`
whose columns, binned rows, state bytes and compactions stay on the device.

The columns are held in their own dtype (no float64 copies: 10^9 rows of six float32 columns
are 24 GB, not 48); each panel's rows are binned on the device by the host's exact rule
(:func:`hotbin.core.binning.histogram_rule` of the float64 column, :meth:`BinRule.index` on
CuPy slabs); one kernel per brush state computes every row's mask and state byte and every
panel's counts (:func:`hotbin.backend.cuda.crossfilter.crossfilter_pass`). The answers are the
host crossfilter's, count for count: a value is widened to float64 to meet its brush's bounds
and its panel's edges, as the host's float64 copy of it is.
"""
from __future__ import annotations

import numpy as np

from .crossfilter import SLAB, Crossfilter, Filters, Panel, panel_bins

__all__ = ["DeviceCrossfilter"]


class DeviceCrossfilter(Crossfilter):
    """A :class:`~hotbin.serve.crossfilter.Crossfilter` over CuPy columns, on their device.

    Takes the same arguments (any arrays: host ones are copied to the device once, device
    ones are used as they are). :meth:`histograms` returns NumPy counts; :meth:`subset`,
    :meth:`map_rows` and :meth:`passing` return CuPy arrays (the host class's readers of the
    state bytes work on either library).
    """

    def _hold(self, arrays):
        """The columns on the device, each in its own dtype (bool read as uint8, float16
        widened to float32)."""
        from ..backend.cuda.crossfilter import DTYPE_CODES
        from ..backend.cuda.runtime import cupy, flat

        cp = cupy()
        cols = []
        for name, a in zip([*self.names, "x", "y"], arrays):
            a = flat(cp.asarray(a))
            if a.dtype not in DTYPE_CODES:
                raise TypeError(f"hist: column {name!r} has dtype {a.dtype}; expected real numbers")
            cols.append(a)
        return cols

    def _hold_codes(self, codes):
        from ..backend.cuda.runtime import cupy

        return cupy().asarray(codes).astype(np.int32, copy=False)  # the host's int32 codes

    @property
    def n(self) -> int:
        return int(self.cols[-1].size)

    def _binned(self, p: Panel):
        """Each row's bin in panel ``p`` (``p.bins`` for none), uint16 on the device: the rule
        of ``numpy.histogram`` of the float64 column, applied a slab at a time."""
        col = self.cols[self.names.index(p.column)]
        out = _cp().empty(col.size, np.uint16)
        for s in range(0, col.size, SLAB):
            out[s:s + SLAB] = panel_bins(col[s:s + SLAB], p.bins, p.lo, p.hi)
        return out

    def _count(self, args, own: list, panels: list):
        from ..backend.cuda.crossfilter import crossfilter_pass

        bcol, blo, bhi, bbit, codes, keep, cat_bit, box_bit = args
        brushes = [(self.cols[int(c)], float(lo), float(hi), int(bit))
                   for c, lo, hi, bit in zip(bcol, blo, bhi, bbit)]
        cats = (codes, keep, int(cat_bit)) if cat_bit else None
        state, flat = crossfilter_pass(self.n, brushes, cats, int(box_bit),
                                       [(self._bins_of(p), int(o), p.bins) for p, o in zip(panels, own)])
        flat = flat.get()  # every panel's counts at once (the pass has finished)
        start = np.cumsum([0] + [p.bins for p in panels])
        return state, {p: flat[start[k]:start[k + 1]] for k, p in enumerate(panels)}

    def subset(self, filters: Filters, arrays):
        """``arrays`` (one value per row; CuPy, or copied to the device) cut to the rows the
        map shows, in order, on the device; None when every row is shown. The latest subset
        is kept."""
        if not filters.map_key[0] and filters.map_key[1] is None:
            return None
        key = (filters.map_key, tuple(id(a) for a in arrays))
        if self._subset[0] == key:
            return self._subset[1]
        cp = _cp()
        rows = cp.flatnonzero(self.map_rows(filters))  # bools: no second mask made
        out = [None if a is None else cp.asarray(a)[rows] for a in arrays]
        self._subset = (key, out)
        return out


def _cp():
    from ..backend.cuda.runtime import cupy

    return cupy()
