"""The heatmap of data files streamed in chunks: ranges, categories, then one counting pass.

Passes over the data (:class:`hotbin.io.Data`, DuckDB queries), the counting one a
chunk at a time so memory stays bounded:

1. the ranges: given (in degrees with ``--project``), else the finite extent from one
   aggregate query, or two to four passes for the exact percentiles of ``--clip``;
2. the categories of ``--by``: one query for the column's distinct values;
3. the counting pass: a partial :class:`hotbin.Heatmap` per chunk by
   :func:`hotbin.heatmap`, merged with ``+`` (the partials' merge rule).

Categories are one mapping over all chunks: integers (every label one) as their
own codes ``0 .. max``, else text sorted, as :func:`hotbin.heatmap` codes them
in memory; each chunk is passed as a dictionary array over all the labels, so
every partial has the same categories. With ``--project mercator`` each chunk's
longitude and latitude become Web Mercator metres (:func:`hotbin.render.project.mercator`)
before anything else, points off the map (``|lon| > 180``, ``|lat| > MAX_LAT``)
becoming NaN, so every pass sees the projected points and the extent only the map's.
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import replace

import numpy as np

from ..io.read import quote as _quote
from . import UserError

__all__ = ["from_data", "Progress"]

_INT = re.compile(r"^-?\d+$")


def from_data(args, data, progress, said=None):
    """``(Heatmap, points read, where the ranges came from)`` of the streamed ``data``; the lines
    to say on stderr once it succeeded (the ranges from the data) are appended to ``said``."""
    said = [] if said is None else said
    from ..heatmap import heatmap
    from ..render.project import CRS, mercator
    from ..core.ranges import data_range, percentile_ranges

    chunks = _Projected(data) if args.project else data
    ranges = [args.x_range, args.y_range]
    if args.project:  # the given ranges in degrees, as hotbin.heatmap(project=) takes them
        ranges = [None if r is None else tuple(float(v) for v in mercator(*((np.asarray(r), 0.0) if k == 0
                  else (0.0, np.asarray(r))))[k]) for k, r in enumerate(ranges)]
    closed = tuple(r is None for r in ranges)  # ranges from the data are closed, as in memory
    auto = [k for k, r in enumerate(ranges) if r is None]
    labels = None
    source = "given"
    found = []
    if auto and args.clip:
        passes = [0]

        def run_pass(fn, merge):  # merged chunk by chunk: memory stays bounded
            passes[0] += 1
            acc = merge([])
            for cols, done in progress.over(chunks, f"finding the percentiles (pass {passes[0]})"):
                acc = merge([acc, fn(*(cols[k] for k in auto))])
            return acc

        found, source = percentile_ranges(run_pass, len(auto), args.clip), "percentiles"
    elif auto:
        found, source = data.extent(auto, lonlat=bool(args.project)), "data"
        unit = " degrees (points on the Web Mercator map only)" if args.project else ""
        for k, e in zip(auto, found):
            if e is not None:
                said.append(f"{'xy'[k]} range from the data: {e[0]:.10g}, {e[1]:.10g}{unit}")
        if args.project:  # the extent of the points the map can show, in metres
            found = [None if e is None else tuple(float(v) for v in mercator(*((np.asarray(e), 0.0) if k == 0
                     else (0.0, np.asarray(e))))[k]) for k, e in zip(auto, found)]
    for k, ext in zip(auto, found if auto else []):
        ranges[k] = (0.0, 1.0) if ext is None else data_range(*ext, "xy"[k])
    if args.by:
        labels = _categories(data.source)
    x_range, y_range = ranges
    agg, value = args.agg
    weighted = value is not None
    total, n = None, 0
    for cols, done in progress.over(chunks, "counting"):
        part = heatmap(cols[0], cols[1], cols[2] if weighted else None, agg=agg,
                       by=None if labels is None else labels.codes(cols[-1]),
                       width=args.width, height=args.height, x_range=x_range, y_range=y_range,
                       closed=closed, backend=args.backend, q=args.q)
        total = part if total is None else total + part
        n += cols[0].size
    if total is None:  # no rows: the empty heatmap of these cells
        empty = np.empty(0)
        total = heatmap(empty, empty, empty if weighted else None, agg=agg,
                        by=None if labels is None else labels.codes(None), width=args.width,
                        height=args.height, x_range=x_range, y_range=y_range, closed=closed,
                        backend=args.backend, q=args.q)
    total = replace(total, x_name=args.x, y_name=args.y, crs=CRS if args.project else total.crs)
    return total, n, source


class _Projected:
    """Chunks with their first two columns (longitude, latitude) in Web Mercator metres."""

    def __init__(self, data):
        self.data = data

    def __iter__(self):
        from ..render.project import MAX_LAT, mercator

        for cols, done in self.data:
            lon, lat = cols[0], cols[1]
            off = ~((np.abs(lon) <= 180) & (np.abs(lat) <= MAX_LAT))
            if off.any():  # beyond the map: a point in no cell, dropped and counted
                lon, lat = np.where(off, np.nan, lon), np.where(off, np.nan, lat)
            yield [*mercator(lon, lat), *cols[2:]], done


def _categories(source):
    """The :class:`_Labels` of the category column: one DuckDB query for its distinct values."""
    table = source.table(f"SELECT DISTINCT {_quote(source.category)} FROM src")
    col = table.column(0)
    return _Labels({v for v in col.to_pylist() if v is not None}, col.type)


class _Labels:
    """The categories of ``--by`` over all chunks, and each chunk's codes over all of them."""

    def __init__(self, seen, kind):
        import pyarrow as pa

        if kind is not None and pa.types.is_floating(kind):
            raise UserError("--by: the column holds fractional numbers; categories are text or integers")
        self.integer = kind is None or pa.types.is_integer(kind) or pa.types.is_boolean(kind) \
            or all(_INT.match(str(v)) for v in seen)
        if self.integer:
            top = max((int(v) for v in seen), default=-1)
            self.labels = list(range(max(top + 1, 1)))
        else:
            self.labels = sorted(str(v) for v in seen)
        from ..io.frames import MAX_CATEGORIES

        if len(self.labels) > MAX_CATEGORIES:
            raise UserError(f"--by: {len(self.labels):,} categories; at most {MAX_CATEGORIES}")
        self.dictionary = pa.array(self.labels)

    def codes(self, col):
        """A dictionary array of the chunk's categories over all the labels (no category: null)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if col is None:
            idx = pa.array([], pa.int32())
        elif self.integer:
            v = pc.cast(col, pa.int64())
            idx = pc.if_else(pc.less(v, 0), pa.scalar(None, pa.int64()), v).cast(pa.int32())
        else:
            idx = pc.index_in(pc.cast(col, pa.string()), value_set=self.dictionary)
        return pa.DictionaryArray.from_arrays(idx, self.dictionary)


class Progress:
    """A one-line progress bar on stderr (only when shown)."""

    def __init__(self, show):
        self.show = show

    def over(self, chunks, label):
        t0 = time.perf_counter()
        rows = 0
        for cols, done in chunks:
            rows += cols[0].size
            if self.show:
                frac = min(max(done or 0.0, 0.0), 1.0)
                bar = "#" * int(30 * frac)
                sys.stderr.write(f"\r{label} [{bar:<30s}] {frac:4.0%} {rows:,} rows "
                                 f"{time.perf_counter() - t0:.1f} s")
                sys.stderr.flush()
            yield cols, done
        if self.show:
            sys.stderr.write("\n")
