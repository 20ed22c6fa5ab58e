"""The input of ``hotbin.explore``, held once, and its rows taken by number in its own kind.

``selection()`` gives back a table of the kind that came in, so the widget keeps the input as
it is where row numbers can index it (pandas and polars DataFrames, pyarrow Tables, mappings of
arrays) and reads it once into a pyarrow Table where they cannot (a DuckDB relation, a polars
LazyFrame, a RecordBatchReader or any ``__arrow_c_stream__``): their order is the order that
read gave, which is then the order of the rows the server and ``selection()`` number.
"""
from __future__ import annotations

import numpy as np

from ..core.arrays import is_dask
from ..io.tables import module_of, pyarrow

__all__ = ["held", "take", "names"]


def held(data):
    """``data`` as the widget keeps it: a table its rows can be taken from by number."""
    if data is None:
        raise TypeError("data: expected a table (pandas, polars, pyarrow, a DuckDB relation, a dict "
                        "of arrays), got None")
    if is_dask(data):
        raise TypeError("data: a dask DataFrame is not supported by explore (its rows are not in "
                        "memory); pass data.compute(), or serve it with hotbin serve --scheduler")
    mod = module_of(data)
    if mod == "pandas" and hasattr(data, "iloc") and hasattr(data, "columns"):
        return data
    if mod == "polars":
        return data.collect() if hasattr(data, "collect") else data
    if mod == "duckdb" and hasattr(data, "columns"):
        return (getattr(data, "to_arrow_table", None) or data.arrow)()
    if mod == "pyarrow":
        pa = pyarrow()
        if isinstance(data, pa.Table):
            return data
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
    if hasattr(data, "__arrow_c_stream__"):
        pa = pyarrow(f"data ({type(data).__name__})")
        reader = data if isinstance(data, pa.RecordBatchReader) else pa.RecordBatchReader.from_stream(data)
        return reader.read_all()
    if hasattr(data, "keys") and hasattr(data, "__getitem__"):
        cols = {str(k): np.asarray(data[k]) for k in data.keys()}
        sizes = {k: a.shape[:1] for k, a in cols.items()}
        if len(set(sizes.values())) > 1 or any(a.ndim != 1 for a in cols.values()):
            shapes = ", ".join(f"{k}: {a.shape}" for k, a in cols.items())
            raise ValueError(f"data: expected 1-D arrays of one length, got {shapes}")
        return cols
    raise TypeError(f"data: expected a table (pandas, polars, pyarrow, a DuckDB relation, a dict of "
                    f"arrays), got {type(data).__name__}")


def names(table) -> list[str]:
    """The column names of a held table."""
    if isinstance(table, dict):
        return list(table)
    if module_of(table) == "pyarrow":
        return list(table.schema.names)
    return [str(c) for c in table.columns]


def take(table, rows: np.ndarray):
    """The rows numbered ``rows`` (int64, increasing) of a held table, as a table of its kind:
    pandas keeps its index (the rows' labels in the input)."""
    mod = module_of(table)
    if isinstance(table, dict):
        return {k: a[rows] for k, a in table.items()}
    if mod == "pandas":
        return table.iloc[rows]
    if mod == "polars":
        return table[rows]
    return table.take(rows)
