"""hotbin's data layer: CSV, TSV and Parquet files read by DuckDB, as numeric Arrow batches.

:class:`Source` turns INPUT (a file, a folder with hive partitions, a glob, ``-``)
and ``--where`` into one DuckDB query whose unreadable rows are counted and named
by line (:class:`Junk`); :class:`Data` streams it in batches of a fixed number of
rows and answers extents with one aggregate query. Needs ``duckdb`` (the ``io``
extra).
"""
from .batches import Data
from .files import STDIN, DataError, data_files
from .read import Source, need
from .rejects import Junk

__all__ = ["Source", "Data", "Junk", "DataError", "data_files", "need", "STDIN"]
