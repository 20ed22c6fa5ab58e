"""Tables in, arrays out: ``data=`` column names and ``by=`` categories.

``hotbin.heatmap("lon", "lat", weights="fare", data=df)`` takes its columns
from a pandas, polars or pyarrow table (or a dask dataframe) by name, the
convention of matplotlib and seaborn. Columns become arrays without a copy
where the library allows (a pyarrow column of one chunk without nulls, a
pandas or polars numeric column); nulls become NaN.

Categories (``by=``) are integer codes ``0 <= code < ncat`` with their labels:
a pandas ``Categorical`` (or ``category`` column), a polars ``Categorical`` /
``Enum``, a pyarrow dictionary column, strings (labels sorted, as
``numpy.unique``), or plain non-negative integers (labels ``0 .. max``).
Missing values get code -1: no category.
"""
from __future__ import annotations

import numpy as np

from .arrays import is_dask

__all__ = ["column", "name_of", "categories", "MAX_CATEGORIES"]

#: categories of by=: the cells of a heatmap are multiplied by their number
MAX_CATEGORIES = 1 << 12


def column(data, key, what):
    """``key`` itself, or the column ``key`` of ``data`` as an array when ``key`` is a name."""
    if not isinstance(key, str):
        return key
    if data is None:
        raise TypeError(f"{what}: got the column name {key!r} but no data= table")
    try:
        col = data[key]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ValueError(f"{what}: no column {key!r} in data ({_names(data)})") from exc
    return col if what == "by" else _array(col)  # categories are read by categories()


def name_of(key, default):
    """The dimension name for an input given as ``key``: the column name, else ``default``."""
    return key if isinstance(key, str) else default


def _names(data) -> str:
    cols = getattr(data, "columns", None)
    if cols is None and hasattr(data, "column_names"):
        cols = data.column_names
    return "columns: " + ", ".join(map(str, list(cols)[:20])) if cols is not None else type(data).__name__


def _array(col):
    """A column (pandas / polars Series, pyarrow (Chunked)Array, dask Series) as an array."""
    if is_dask(col) or _categorical_kind(col) is not None:
        return col  # dask series stay lazy; categories are coded by categories()
    mod = type(col).__module__.split(".")[0]
    if mod == "pyarrow":
        import pyarrow as pa

        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if col.null_count:
            col = col.cast(pa.float64()).fill_null(float("nan"))
        return col.to_numpy(zero_copy_only=False)
    if mod == "polars":
        if col.null_count():
            col = col.cast(float).fill_null(float("nan"))
        return col.to_numpy()
    if mod == "pandas":
        if col.dtype.kind in "biuf":
            return col.to_numpy()
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    return col


def _categorical_kind(col):
    mod = type(col).__module__.split(".")[0]
    dtype = getattr(col, "dtype", None)
    if mod == "pandas" and str(dtype) == "category":
        return "pandas"
    if mod == "polars" and dtype is not None and type(dtype).__name__ in ("Categorical", "Enum"):
        return "polars"
    if mod == "pyarrow":
        import pyarrow as pa

        if pa.types.is_dictionary(col.type):
            return "pyarrow"
    return None


def _integer(a) -> bool:
    try:
        return np.dtype(str(a.dtype)).kind in "biu"
    except (AttributeError, TypeError):
        return False


def categories(ex, by, n):
    """``(codes, labels)`` of ``by`` (one category per point; ``n`` points)."""
    kind = _categorical_kind(by)
    if kind == "pandas":
        cat = by.array if hasattr(by, "array") else by
        return np.asarray(cat.codes), tuple(cat.categories)
    if kind == "polars":  # as Arrow: a dictionary array
        by, kind = by.to_arrow(), "pyarrow"
    if kind == "pyarrow":
        import pyarrow as pa

        if isinstance(by, pa.ChunkedArray):
            by = by.combine_chunks() if by.num_chunks != 1 else by.chunk(0)
        codes = by.indices.cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False)
        return codes, tuple(by.dictionary.to_pylist())
    if is_dask(by) and str(getattr(by, "dtype", "")) == "category":  # a dask categorical column
        if not by.cat.known:
            by = by.cat.as_known()
        return by.cat.codes, tuple(by.cat.categories)
    if _integer(by):
        a = ex.array(by, "by")
        if not ex.lazy and tuple(a.shape) != (n,):  # (dask: ex.align pairs the chunks)
            raise ValueError(f"by: expected one category per point ({n}), got shape {tuple(a.shape)}")
        lo, hi = ex.extents([a])[0]
        hi = int(hi) if lo <= hi else -1
        if hi >= MAX_CATEGORIES:
            raise ValueError(f"by: integer codes up to {hi}; at most {MAX_CATEGORIES} categories")
        return a, tuple(range(max(hi + 1, 1)))
    if is_dask(by):
        raise TypeError("by: on Dask, pass integer codes (a dask array, or df[col].cat.codes of a "
                        "categorical column)")
    mod = type(by).__module__.split(".")[0]
    if mod == "pandas":
        import pandas as pd

        codes, labels = pd.factorize(by, sort=True)
        return codes, tuple(labels)
    if mod == "polars":
        by = by.to_arrow()
        mod = "pyarrow"
    if mod == "pyarrow":
        import pyarrow as pa

        if pa.types.is_integer(by.type):
            return categories(ex, by.to_numpy(zero_copy_only=False), n)
        codes, labels = categories(ex, by.dictionary_encode(), n)  # labels as they appear:
        order = np.argsort(np.array(labels, dtype=object), kind="stable")  # sorted, as numpy.unique
        rank = np.empty(len(order) + 1, np.int64)
        rank[order], rank[-1] = np.arange(len(order)), -1
        return rank[codes], tuple(labels[i] for i in order)
    a = np.asarray(by)
    if a.shape != (n,):
        raise ValueError(f"by: expected one category per point ({n}), got shape {a.shape}")
    if a.dtype.kind in "OUS":
        labels, codes = np.unique(a, return_inverse=True)
        return codes.reshape(-1), tuple(labels.tolist())
    raise TypeError(f"by: expected integer codes or categories, got dtype {a.dtype}")
