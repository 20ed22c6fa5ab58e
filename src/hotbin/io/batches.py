"""Passes over a :class:`hotbin.io.read.Source`: numeric Arrow batches of a fixed size, and extents.

Each pass is one DuckDB query streamed as Arrow record batches of ``chunk_rows``
rows, whatever the files' row groups or blocks, so a folder of many small Parquet
files costs what one file costs. The number columns reach the kernels as float64
NumPy arrays, SQL NULL (an empty cell) as NaN: a missing coordinate is a point in
no cell, a missing value is skipped. The extent of a column is one aggregate query
over the same rows (finite values only; with ``lonlat`` only the points a Web
Mercator map can show).
"""
from __future__ import annotations

import numpy as np

from .read import quote

__all__ = ["Data"]


class Data:
    """``for cols, done in data``: each chunk's number columns (float64) and the category column
    (a pyarrow array), ``done`` the share of the rows read so far (0 until one pass counted them)."""

    def __init__(self, source, chunk_rows):
        self.source, self.chunk_rows, self.total = source, int(chunk_rows), None

    @property
    def label(self) -> str:
        return self.source.label

    @property
    def junk(self):
        return self.source.junk

    def __iter__(self):
        src = self.source
        n = len(src.numbers)
        rows = 0
        try:
            reader = src.batches("SELECT * FROM src", self.chunk_rows)
            for batch in _rebatch(_closing(reader), self.chunk_rows):
                cols = [np.asarray(batch.column(i).to_numpy(zero_copy_only=False), np.float64)
                        for i in range(n)]
                if src.category:
                    cols.append(batch.column(n))
                rows += batch.num_rows
                yield cols, (rows / self.total if self.total else 0.0)
        except Exception as exc:  # noqa: BLE001 - DuckDB's errors mid-stream as one line
            raise src.error(exc) from None
        self.total = rows
        src.done(rows)

    def extent(self, axes, lonlat=False):
        """``[(lo, hi) or None]``: the finite extent of each number column ``axes[k]`` (indices),
        from one query; with ``lonlat`` (columns 0 and 1 longitude and latitude) only of the
        points with ``|lon| <= 180`` and ``|lat| < MAX_LAT`` (those :func:`mercator` keeps). Also counts the rows (every
        needed column is read, so the rows seen are the counting pass's)."""
        from ..render.project import MAX_LAT

        src = self.source
        names = [quote(c) for c in src.numbers]
        aggs = []
        for k in axes:
            c = names[k]
            ok = f"isfinite({c})"
            if lonlat:
                ok = f"abs({names[0]}) <= 180 AND abs({names[1]}) < {MAX_LAT!r}"  # mercator's map
            aggs += [f"min({c}) FILTER (WHERE {ok})", f"max({c}) FILTER (WHERE {ok})"]
        aggs += [f"count({quote(c)})" for c in src.columns] + ["count(*)"]
        row = src.one(f"SELECT {', '.join(aggs)} FROM src")
        self.total = row[-1]
        src.done(self.total)
        out = []
        for k in range(len(axes)):
            lo, hi = row[2 * k], row[2 * k + 1]
            out.append(None if lo is None else (float(lo), float(hi)))
        return out


def _closing(reader):
    """The batches of ``reader``, closed when the loop ends or is left (the connection is free)."""
    try:
        yield from reader
    finally:
        reader.close()


def _rebatch(batches, rows):
    """Record batches of exactly ``rows`` rows (the last one fewer) from batches of any size."""
    import pyarrow as pa

    buf, have = [], 0
    for batch in batches:
        while batch.num_rows:
            take = min(rows - have, batch.num_rows)
            buf.append(batch.slice(0, take))
            have, batch = have + take, batch.slice(take)
            if have == rows:
                yield buf[0] if len(buf) == 1 else pa.Table.from_batches(buf).combine_chunks().to_batches()[0]
                buf, have = [], 0
    if have:
        yield buf[0] if len(buf) == 1 else pa.Table.from_batches(buf).combine_chunks().to_batches()[0]
