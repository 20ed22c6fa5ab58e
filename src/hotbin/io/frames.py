"""Tables in, arrays out: ``data=`` column names and ``by=`` categories.

``hotbin.heatmap("lon", "lat", weights="fare", data=df)`` takes its columns
from a table by name, the convention of matplotlib and seaborn (the tables
:mod:`hotbin.io.tables` reads: pandas, polars, pyarrow, dask, DuckDB, anything with
``__arrow_c_stream__``). Columns become arrays without a copy where the library
allows (a NumPy-typed pandas column, an Arrow column of one chunk without nulls).

Nulls and NaT are missing values, never numbers: a column with nulls becomes
float64 with NaN there, so a missing coordinate drops its point and a missing
weight is no value, as NaN. Timestamps, dates and durations are int64
nanoseconds (since the epoch); with NaT, float64 nanoseconds, which bin exactly as
the int64 would, since cells compare coordinates in float64. Text is an error
naming the column. On dask, a nullable or temporal column is float64 in every
partition (whether a partition holds nulls is not known before it is read).

Categories (``by=``) are integer codes ``0 <= code < ncat`` with their labels:
a pandas ``Categorical`` (or ``category`` column; its categories' order), a polars
``Categorical`` / ``Enum`` or pyarrow dictionary (the dictionary's order), strings
(labels sorted, as ``numpy.unique``), or integers, nullable ones too (labels
``0 .. max``). A missing category (null, None, NaN, a null in a dictionary) is
code -1: the point is in no category, like any code outside ``[0, ncat)``.
"""
from __future__ import annotations

import numpy as np

from ..core.arrays import is_dask
from .tables import module_of, pyarrow, select

__all__ = ["columns", "numbers", "name_of", "categories", "MAX_CATEGORIES"]

#: categories of by=: the cells of a heatmap are multiplied by their number
MAX_CATEGORIES = 1 << 12


def columns(data, **keys):
    """The values of ``keys`` (``x=..., y=..., weights=..., by=...``) in order, each name replaced by
    that column of ``data``; every column and Series as numbers (:func:`numbers`) but ``by``'s,
    which :func:`categories` reads."""
    if data is None:
        for what, key in keys.items():
            if isinstance(key, str):
                raise TypeError(f"{what}: got the column name {key!r} but no data= table")
    found = {} if data is None else select(data, keys)
    out = []
    for what, key in keys.items():
        col, name = (found[key], key) if isinstance(key, str) else (key, None)
        out.append(col if what == "by" or col is None else numbers(col, what, name))
    return out


def name_of(key, default):
    """The dimension name for an input given as ``key``: the column name, else ``default``."""
    return key if isinstance(key, str) else default


def numbers(col, what, name=None):
    """A table's column (pandas / polars / dask Series, Arrow (Chunked)Array) as an array of
    numbers, nulls as NaN; any other array as it is."""
    label = what if name is None else f"{what}: column {name!r}"
    if is_dask(col):
        return _dask_numbers(col, label)
    mod = module_of(col)
    if mod == "pandas" and hasattr(col, "dtype"):
        return _pandas_numbers(col, label)
    if mod == "polars" and hasattr(col, "to_arrow"):
        col, mod = col.to_arrow(), "pyarrow"
    if mod == "pyarrow" and hasattr(col, "type"):
        return _arrow_numbers(col, label)
    return col


def _pandas_numbers(s, label):
    """A pandas Series as numbers: NumPy-typed numbers as they are, nullable ones (``Int64``,
    ``Float64``, ``double[pyarrow]``) as their NumPy type or, with nulls, float64; the rest
    through Arrow (datetime and object columns: their NaT, None and NA)."""
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "biufc":
        return s.to_numpy()
    if getattr(s.dtype, "kind", None) in ("b", "i", "u", "f"):
        return s.to_numpy(np.float64, na_value=np.nan) if s.hasnans else s.to_numpy(s.dtype.numpy_dtype)
    pa = pyarrow(f"{label} ({s.dtype})")
    try:
        arrow = pa.array(s, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"{label} holds {s.dtype} values that are not numbers: {exc}") from None
    return _arrow_numbers(arrow, label)


def _arrow_numbers(col, label):
    """An Arrow (Chunked)Array as NumPy numbers (temporal: int64 nanoseconds; nulls: NaN)."""
    pa = pyarrow()
    t = col.type
    if pa.types.is_dictionary(t):  # numbers stored as a dictionary: their values
        col, t = col.cast(t.value_type), t.value_type
    unit = _nanoseconds(pa, t)
    if unit is not None:
        try:
            col, t = col.cast(unit).cast(pa.int64()), pa.int64()
        except pa.ArrowInvalid as exc:  # beyond the years 1677-2262
            raise ValueError(f"{label}: as int64 nanoseconds: {exc}") from None
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_decimal(t) or pa.types.is_null(t)):
        raise ValueError(f"{label} holds {'text' if 'string' in str(t) else 'values'} ({t}), not numbers")
    if col.null_count or pa.types.is_decimal(t) or pa.types.is_null(t):
        col = col.cast(pa.float64(), safe=False).fill_null(float("nan"))  # int64: rounded, as cells compare
    if isinstance(col, pa.ChunkedArray):
        col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col.to_numpy(zero_copy_only=False)


def _nanoseconds(pa, t):
    """The nanosecond type a temporal Arrow type casts to on its way to int64, or None."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("ns", t.tz)
    if pa.types.is_date(t):
        return pa.timestamp("ns")
    if pa.types.is_duration(t):
        return pa.duration("ns")
    if pa.types.is_time(t):
        return pa.time64("ns")
    return None


def _dask_numbers(s, label):
    """A dask Series as numbers: NumPy-typed as it is, others float64 in every partition."""
    if not hasattr(s, "map_partitions") or (isinstance(s.dtype, np.dtype) and s.dtype.kind in "biufc"):
        return s  # dask arrays, and NumPy-typed columns
    _pandas_numbers(s._meta, label)  # text is an error now, not when computed
    return s.map_partitions(_float_partition, label, meta=(s.name, "f8"))


def _float_partition(part, label):
    import pandas as pd

    return pd.Series(np.asarray(_pandas_numbers(part, label), np.float64), index=part.index, name=part.name)


# --- categories ---------------------------------------------------------------------------

def _pandas_categorical(col) -> bool:
    return module_of(col) == "pandas" and str(getattr(col, "dtype", None)) == "category"


def _integer(a) -> bool:
    try:
        return np.dtype(str(a.dtype)).kind in "biu"
    except (AttributeError, TypeError):
        return False


def _nullable_integer(a) -> bool:
    """A pandas extension dtype of integers (``Int64``, ``int32[pyarrow]``): nulls beside them."""
    dtype = getattr(a, "dtype", None)
    return not isinstance(dtype, np.dtype) and getattr(dtype, "kind", None) in ("i", "u")


def _filled(s):
    """A pandas Series of nullable integers as int64 codes, -1 where null."""
    codes = s.fillna(0).to_numpy(dtype=np.int64)
    codes[s.isna().to_numpy(dtype=bool)] = -1
    return type(s)(codes, index=s.index, name=s.name)


def _is_missing(v) -> bool:
    try:
        return v is None or bool(v != v)  # NaN, NaT
    except TypeError:  # pandas.NA, whose truth is ambiguous
        return True
    except ValueError:  # an array: a value, if an odd one
        return False


def categories(ex, by, n):
    """``(codes, labels)`` of ``by`` (one category per point; ``n`` points); code -1: none."""
    if _pandas_categorical(by):
        cat = by.array if hasattr(by, "array") else by
        return np.asarray(cat.codes), tuple(cat.categories)
    if is_dask(by):
        return _dask_categories(ex, by, n)
    if _integer(by):
        return _codes(ex, by, n)
    mod = module_of(by)
    if mod == "pandas":
        if _nullable_integer(by):
            return _codes(ex, _filled(by), n)
        import pandas as pd

        codes, labels = pd.factorize(by, sort=True)
        return codes, tuple(labels)
    if mod == "polars":  # as Arrow: a dictionary array for Categorical / Enum
        by, mod = by.to_arrow(), "pyarrow"
    if mod == "pyarrow":
        return _arrow_categories(ex, by, n)
    a = np.asarray(by)
    if a.shape != (n,):
        raise ValueError(f"by: expected one category per point ({n}), got shape {a.shape}")
    if a.dtype.kind in "US":
        labels, codes = np.unique(a, return_inverse=True)
        return codes.reshape(-1), tuple(labels.tolist())
    if a.dtype.kind == "O":
        present = ~np.fromiter(map(_is_missing, a.tolist()), bool, a.size)
        try:
            labels, found = np.unique(a[present], return_inverse=True)
        except TypeError as exc:
            raise TypeError(f"by: labels of different kinds cannot be sorted ({exc})") from None
        codes = np.full(a.size, -1, np.int64)
        codes[present] = found.reshape(-1)
        return codes, tuple(labels.tolist())
    raise TypeError(f"by: expected integer codes or categories, got dtype {a.dtype}")


def _codes(ex, by, n):
    """Integer codes: labels ``0 .. max``; negative codes are in no category."""
    a = ex.array(by, "by")
    if not ex.lazy and tuple(a.shape) != (n,):  # (dask: ex.align pairs the chunks)
        raise ValueError(f"by: expected one category per point ({n}), got shape {tuple(a.shape)}")
    lo, hi = ex.extents([a])[0]
    hi = int(hi) if lo <= hi else -1
    if hi >= MAX_CATEGORIES:
        raise ValueError(f"by: integer codes up to {hi}; at most {MAX_CATEGORIES} categories")
    return a, tuple(range(max(hi + 1, 1)))


def _dask_categories(ex, by, n):
    if str(getattr(by, "dtype", "")) == "category":  # a dask categorical column
        if not by.cat.known:
            by = by.cat.as_known()
        return by.cat.codes, tuple(by.cat.categories)
    if _nullable_integer(by):
        by = by.map_partitions(_filled, meta=(by.name, "i8")) if hasattr(by, "map_partitions") else by
        return _codes(ex, by, n)
    if _integer(by):
        return _codes(ex, by, n)
    raise TypeError("by: on Dask, pass integer codes (a dask array, or df[col].cat.codes of a "
                    "categorical column)")


def _arrow_categories(ex, by, n):
    """Codes of an Arrow array: a dictionary's (its order), integers', or any other values'
    (sorted labels, as ``numpy.unique``); nulls, and null or NaN labels, are in none."""
    pa = pyarrow()
    if pa.types.is_dictionary(by.type):
        return _dictionary_codes(by.chunks if isinstance(by, pa.ChunkedArray) else [by])
    if isinstance(by, pa.ChunkedArray):
        by = by.combine_chunks()
    if pa.types.is_integer(by.type):
        return _codes(ex, by.cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False), n)
    codes, labels = _dictionary_codes([by.dictionary_encode()])
    order = np.argsort(np.array(labels, dtype=object), kind="stable")  # sorted, as numpy.unique
    rank = np.empty(len(order) + 1, np.int64)
    rank[order], rank[-1] = np.arange(len(order)), -1
    return rank[codes], tuple(labels[i] for i in order)


def _dictionary_codes(chunks):
    """Codes and labels of dictionary arrays (the chunks of one column, each with its own
    dictionary): labels in order of first appearance, missing ones (null, NaN) left out."""
    index: dict = {}
    parts = [np.zeros(0, np.int64)]
    for chunk in chunks:
        labels = chunk.dictionary.to_pylist()
        remap = np.array([-1 if _is_missing(v) else index.setdefault(v, len(index)) for v in labels]
                         + [-1], np.int64)  # a null index (-1) reads the last: -1
        parts.append(remap[chunk.indices.cast("int64").fill_null(-1).to_numpy(zero_copy_only=False)])
    return np.concatenate(parts), tuple(index)
