"""hotbin's data layer: CSV, TSV and Parquet files read by DuckDB, as numeric Arrow batches.

:class:`Source` turns INPUT (a file, a folder with hive partitions, a glob, ``-``)
and ``--where`` into one DuckDB query whose unreadable rows are counted and named
by line (:class:`Junk`); :class:`Data` streams it in batches of a fixed number of
rows and answers extents with one aggregate query. Needs ``duckdb`` (the ``io``
extra).
"""
import importlib

#: each public name and its module, imported on first use: ``import hotbin`` loads
#: io.frames for the heatmap's tables and should not pay for the data layer too.
_HOME = {"Data": "batches", "STDIN": "files", "DataError": "files", "data_files": "files",
         "Source": "read", "need": "tables", "Junk": "rejects"}

__all__ = ["Source", "Data", "Junk", "DataError", "data_files", "need", "STDIN"]


def __getattr__(name):
    if name in _HOME:
        return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
