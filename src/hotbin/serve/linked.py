"""A served data set's linked views: brushes, histogram panels and the rows behind a selection.

:class:`Linked` holds every column a brush or a histogram may name (the map's coordinates as
given, the weights, the ``--hist`` columns; the categories) in a
:class:`~hotbin.serve.crossfilter.Crossfilter` built on first use: on the host, or on the GPU
(:class:`~hotbin.serve.crossfilter_gpu.DeviceCrossfilter`) when the map's points are there,
or over the partitions of Dask data (:class:`~hotbin.serve.crossfilter_dask.DaskCrossfilter`);
and the input table for
the drill-down: every column of the input, row for row, kept in memory as a pyarrow table so
that the first rows of a selection are a ``take`` away (re-reading them from the file by
number would keep memory low but cost a scan of the file per request). Of Dask data without
a table, the drill-down reads its rows from the columns' partitions that hold them.
"""
from __future__ import annotations

import io
import math

import numpy as np

from ..core.arrays import on_gpu, to_host, xp
from .crossfilter import Crossfilter, Filters, Panel
from .params import BadRequest

__all__ = ["Linked", "DEFAULT_BINS", "CSV_ROWS"]

#: bins of a histogram panel whose bins were not given
DEFAULT_BINS = 40
#: rows per block of ``/rows.csv``
CSV_ROWS = 65_536


class Linked:
    """Brushes and panels over a :class:`~hotbin.serve.dataset.Dataset`'s rows.

    ``raw`` are its coordinates as given (not projected), ``hist`` the histogram columns,
    ``panels`` their ``(bins, lo, hi)``, ``table`` every column of the input (or None).
    """

    def __init__(self, data, raw, hist: dict, panels: dict, table=None, lazy=False):
        self.data, self.lazy = data, lazy
        names = list(data.names)
        cols = {names[0]: raw[0], names[1]: raw[1]}
        if data.weights is not None:
            cols.setdefault(data.weight_name, data.weights)
        for name, a in hist.items():
            if len(a) != data.n:
                raise ValueError(f"hist: column {name!r} has {len(a):,} rows for {data.n:,} points")
            cols.setdefault(str(name), a)
        self._source = cols
        self.hist_columns = [str(h) for h in hist]
        self._panels = dict(panels)
        unknown = [p for p in self._panels if p not in self.hist_columns]
        if unknown:
            raise ValueError(f"panels: {unknown[0]!r} is not a histogram column")
        self._table = _arrow(table) if table is not None else None
        if self._table is not None and self._table.num_rows != data.n:
            raise ValueError(f"table: {self._table.num_rows:,} rows for {data.n:,} points")
        self._cf = None

    @property
    def numeric(self) -> list:
        """The columns a range brush may name."""
        return list(self._source)

    @property
    def columns(self) -> list:
        if self._table is None and self.lazy:
            by = [self.data.by_name] if self.data.by is not None else []
            return list(dict.fromkeys([*self._source, *by]))
        return self.table.column_names

    @property
    def cf(self) -> Crossfilter:
        if self._cf is None:
            d = self.data
            if self.lazy:  # the rows stay on the cluster: a Dask job per brush state
                from .crossfilter_dask import DaskCrossfilter

                self._cf = DaskCrossfilter(self._source, (d.x, d.y), d.by, d.labels, d.by_name)
            elif on_gpu(d.x):  # the columns stay on the map's device, in their own dtype
                from .crossfilter_gpu import DeviceCrossfilter

                self._cf = DeviceCrossfilter(self._source, (d.x, d.y), d.by, d.labels, d.by_name)
            else:
                src = {k: to_host(v) for k, v in self._source.items()}
                self._cf = Crossfilter(src, (to_host(d.x), to_host(d.y)),
                                       None if d.by is None else to_host(d.by), d.labels, d.by_name)
            self._cf.prebin(self.panels())
        return self._cf

    @property
    def table(self):
        """Every column of the input (pyarrow); without one, the columns the server holds."""
        if self._table is None:
            self._table = self._held(self._source, self.data.by)
        return self._table

    def _held(self, source: dict, by):
        """A pyarrow table of ``source``'s columns and the categories of the codes ``by``."""
        import pyarrow as pa

        d = self.data
        cols = {k: to_host(v) for k, v in source.items()}
        if d.by is not None:
            labels = np.array([str(v) for v in d.labels] + [None], object)
            codes = np.asarray(to_host(by))
            bad = (codes < 0) | (codes >= len(d.labels))
            cols[d.by_name] = pa.array(labels[np.where(bad, len(d.labels), codes)], pa.string())
        return pa.table({k: pa.array(v) for k, v in cols.items()})

    def _take(self, idx):
        """Rows ``idx`` (NumPy, in order) of the table; of lazy columns without one, only
        the partitions that hold them are read."""
        if self._table is not None or not self.lazy:
            return self.table.take(idx)
        import dask

        cf = self.cf  # its dask arrays: the columns as given may be dask dataframe columns
        got = dask.compute(dict(zip(cf.names, (v[idx] for v in cf.cols))),
                           None if cf.codes is None else cf.codes[idx])
        return self._held(*got)

    # --- brushes and panels ---------------------------------------------------------------

    def panel(self, column: str, bins=None, lo=None, hi=None) -> Panel:
        """The panel of ``column``: the bins and range asked for, else the server's, else
        :data:`DEFAULT_BINS` over the column's finite extent."""
        if column not in self.numeric:
            raise BadRequest(f"column: no column {column!r} to histogram (columns: "
                             f"{', '.join(self.numeric)})")
        b, l, h = self._panels.get(column, (None, None, None))
        bins, lo, hi = bins or b or DEFAULT_BINS, _first(lo, l), _first(hi, h)
        if lo is None or hi is None:
            dlo, dhi = self.cf.data_range(column)
            lo, hi = _first(lo, dlo), _first(hi, dhi)
        if lo > hi:
            raise BadRequest(f"lo, hi: expected lo <= hi, got {lo!r} and {hi!r}")
        return Panel(column, int(bins), float(lo), float(hi))

    def warm(self) -> None:
        """With histogram panels: the columns copied, binned, and every kernel of a brushed
        view compiled (or loaded from numba's cache) now, not at the first brush; of lazy
        columns, only the panels' ranges are found."""
        if not self.hist_columns:
            return
        if self.lazy:  # the panels' extents (one pass); a brush is a Dask job anyway
            self.panels()
            return
        p = self.panels()[0]
        f = self.filters({p.column: (p.lo, p.hi if p.hi > p.lo else p.lo + 1)})
        self.hist(f, p)
        self.map_arrays(f, (self.data.x, self.data.y, None, None))

    def panels(self) -> list[Panel]:
        """The server's histogram panels, in order."""
        return [self.panel(c) for c in self.hist_columns]

    def filters(self, brushes: dict, view=None) -> Filters:
        """:class:`Filters` of Python values: ``{column: (lo, hi)}`` or ``{by: [category, ...]}``,
        and a box ``(x0, x1, y0, y1)`` (or a :class:`~hotbin.serve.params.View`)."""
        ranges, cats = [], None
        for name, value in dict(brushes or {}).items():
            if name == self.data.by_name and self.data.by is not None:
                cats = self.categories(list(value), name)
                continue
            if name not in self.numeric:
                raise BadRequest(f"f.{name}: no column {name!r} to brush (columns: "
                                 f"{', '.join(self.numeric)})")
            lo, hi = (float(v) for v in value)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise BadRequest(f"f.{name}: expected finite lo < hi, got {lo!r}, {hi!r}")
            ranges.append((name, lo, hi))
        box = None
        if view is not None:
            box = tuple(float(v) for v in (view.key[:4] if hasattr(view, "key") else view))
            if not (len(box) == 4 and all(map(math.isfinite, box)) and box[0] < box[1]
                    and box[2] < box[3]):
                raise BadRequest(f"view: expected finite x0 < x1, y0 < y1, got {box!r}")
        if len(ranges) > 56:
            raise BadRequest(f"{len(ranges)} brushes; at most 56")
        return Filters(tuple(sorted(ranges)), cats, box)

    def categories(self, names, column) -> tuple:
        """The codes of the category ``names`` of the ``--by`` column."""
        index = {str(lab): k for k, lab in enumerate(self.data.labels)}
        codes = []
        for v in names:
            if str(v) not in index:
                raise BadRequest(f"f.{column}: no category {str(v)!r} (categories: "
                                 f"{', '.join(index)[:200]})")
            codes.append(index[str(v)])
        return tuple(sorted(set(codes)))

    def map_rows(self, filters: Filters):
        """Per row, whether the map shows it (None: every row)."""
        if filters is None or not filters.ranges and filters.cats is None:
            return None
        return self.cf.map_rows(filters, self.panels())

    def map_count(self, filters: Filters) -> int:
        """How many rows the map shows (all of them without a brush)."""
        if filters is None or not filters.ranges and filters.cats is None:
            return self.data.n
        return self.cf.map_count(filters)

    def map_arrays(self, filters: Filters, arrays):
        """``arrays`` cut to the rows the map shows (None: all of them): compacted by the
        crossfilter where it holds them (host arrays on every core, device arrays on their
        device), else by a mask."""
        if filters is None or not filters.ranges and filters.cats is None:
            return None
        host = all(a is None or isinstance(a, np.ndarray) for a in arrays)
        if self.lazy or host != on_gpu(self.data.x):  # where the crossfilter's rows are
            return self.cf.subset(filters, arrays)
        keep = self.map_rows(filters)
        keep = to_host(keep) if host else xp(arrays[0]).asarray(keep)
        return [None if a is None else a[keep] for a in arrays]

    def hist(self, filters: Filters, panel: Panel) -> dict:
        """``{"column", "edges", "counts", "n"}`` of ``panel`` over the rows passing every
        brush but the column's own (and the box); its siblings counted in the same pass."""
        others = [p for p in self.panels() if p != panel]
        counts = self.cf.histograms(filters, [panel] + others)[0]
        return {"column": panel.column, "edges": panel.edges.tolist(), "counts": counts.tolist(),
                "n": int(counts.sum())}

    def passing(self, filters: Filters) -> np.ndarray:
        """Row numbers (int64, NumPy, in order) passing every brush and the box."""
        return to_host(self._passing(filters))

    def _passing(self, filters: Filters):
        """:meth:`passing` where the crossfilter holds it (on the device with the data there)."""
        if filters.empty:
            return np.arange(self.data.n, dtype=np.int64)
        return self.cf.passing(filters)

    # --- the rows behind a selection ------------------------------------------------------

    def rows(self, filters: Filters, limit: int, offset: int = 0) -> dict:
        """``{"count", "columns", "rows"}``: how many rows pass, and ``limit`` of them from
        ``offset`` in input order, every column, as JSON values (NaN as null, times as text)."""
        if self.lazy:  # the row numbers of the page only
            count, idx = self.cf.passing_slice(filters, offset, limit)
        else:
            idx = self._passing(filters)
            count, idx = int(idx.size), to_host(idx[offset:offset + limit])
        part = self._take(idx)
        cols = [[_json(v) for v in c.to_pylist()] for c in part.columns]
        return {"count": count, "offset": offset, "columns": part.column_names,
                "rows": [list(r) for r in zip(*cols)] if cols else []}

    def csv(self, filters: Filters):
        """The passing rows as CSV (RFC 4180 quoting, a header), in blocks of bytes."""
        return self.csv_of(self.passing(filters))

    def csv_of(self, idx):
        """Rows ``idx`` of the table as CSV blocks (the table's column order, a header first)."""
        import pyarrow.csv as pcsv

        sink, writer = io.BytesIO(), None
        for start in range(0, max(idx.size, 1), CSV_ROWS):
            part = self._take(idx[start:start + CSV_ROWS])
            writer = writer or pcsv.CSVWriter(sink, part.schema)
            writer.write_table(part)
            yield sink.getvalue()
            sink.seek(0)
            sink.truncate()
        writer.close()
        if sink.getvalue():
            yield sink.getvalue()


def _arrow(table):
    import pyarrow as pa

    if isinstance(table, pa.Table):
        return table
    if hasattr(table, "__arrow_c_stream__") and not hasattr(table, "iloc"):
        return pa.table(table)
    return pa.Table.from_pandas(table, preserve_index=False)


def _first(*values):
    return next((v for v in values if v is not None), None)


def _json(v):
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.hex()
    return str(v)
