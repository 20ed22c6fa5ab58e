"""The heatmap of data files streamed in chunks: the columns of a stream of batches.

``hotbin heatmap`` hands :func:`hotbin.heatmap` the columns of its data
(:class:`hotbin.io.Data`, DuckDB queries) as a stream of record batches
(:class:`hotbin.exec.stream.Batches`): the heatmap builds the same operation as in
memory and the stream executor runs it, a chunk at a time so memory stays bounded.
Its passes over the data:

1. the ranges: given (in degrees with ``--project``), else the finite extent from one
   aggregate query, or two to four passes for the exact percentiles of ``--clip``;
2. the categories of ``--by``: one query for the column's distinct values;
3. the counting pass (two for var and std: the cell means, then the squares about them),
   every chunk's partials merged by the aggregation's reductions, finished once.

Categories are one mapping over all chunks: integers (every label one) as their
own codes ``0 .. max``, else text sorted, as :func:`hotbin.heatmap` codes them
in memory. With ``--project mercator`` each chunk's longitude and latitude become
Web Mercator metres (:func:`hotbin.render.project.mercator`) before anything else,
points off the map (``|lon| > 180``, ``|lat| > MAX_LAT``) becoming NaN, so every pass
sees the projected points and the extent only the map's.
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
    from ..exec.stream import Batches
    from ..render.project import CRS

    chunks = _Chunks(data, bool(args.project))
    ranges = [args.x_range, args.y_range]
    if args.project:  # the given ranges, in degrees, as the projected points: metres
        ranges = [None if r is None else _metres(k, r) for k, r in enumerate(ranges)]
    auto = [k for k, r in enumerate(ranges) if r is None]
    batches = Batches(chunks, progress.over)
    cols = [batches.column(k) for k in range(len(data.source.numbers))]
    by = None
    if args.by:
        labels = _categories(data.source)
        by = batches.column(len(cols), np.int64, labels.indices, labels.labels)
    agg, value = args.agg
    hm = heatmap(cols[0], cols[1], cols[2] if value is not None else None, agg=agg, by=by,
                 width=args.width, height=args.height, x_range=ranges[0], y_range=ranges[1],
                 clip=args.clip if auto else None, closed=tuple(r is None for r in ranges),
                 backend=args.backend, q=args.q)
    unit = " degrees (points on the Web Mercator map only)" if args.project else ""
    for k, e in chunks.found:
        said.append(f"{'xy'[k]} range from the data: {e[0]:.10g}, {e[1]:.10g}{unit}")
    source = "given" if not auto else "percentiles" if args.clip else "data"
    hm = replace(hm, x_name=args.x, y_name=args.y, crs=CRS if args.project else hm.crs)
    return hm, batches.rows, source


def _metres(k, r):
    """The range ``r`` of axis ``k`` (0: longitude, 1: latitude) in degrees as Web Mercator metres."""
    from ..render.project import mercator

    ends = mercator(*((np.asarray(r), 0.0) if k == 0 else (0.0, np.asarray(r))))[k]
    return tuple(float(v) for v in ends)


class _Chunks:
    """The chunks of ``data`` as the stream executor reads them: with ``project`` their first two
    columns (longitude, latitude) in Web Mercator metres; the extent from the data layer's query
    (the map's points only, in metres, with ``project``), each found range kept in ``found``."""

    def __init__(self, data, project):
        self.data, self.project, self.found = data, project, []

    def extent(self, axes):
        got = self.data.extent(axes, lonlat=self.project)
        self.found = [(k, e) for k, e in zip(axes, got) if e is not None]
        if not self.project:
            return got
        return [None if e is None else _metres(k, e) for k, e in zip(axes, got)]

    def __iter__(self):
        if not self.project:
            yield from self.data
            return
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

    def indices(self, col):
        """The chunk's category codes over all the labels (int64; no category: -1), as
        :func:`hotbin.heatmap` codes the whole column in memory."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if self.integer:
            v = pc.cast(col, pa.int64())
            idx = pc.if_else(pc.less(v, 0), pa.scalar(None, pa.int64()), v)
        else:
            idx = pc.index_in(pc.cast(col, pa.string()), value_set=self.dictionary)
        return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


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
