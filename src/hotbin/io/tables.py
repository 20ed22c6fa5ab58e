"""Tables in: the columns that ``data=`` names, from any kind of table, read once.

pandas and dask DataFrames give their columns as Series (:mod:`hotbin.io.frames` turns them
into arrays; dask's stay lazy). Everything else becomes Arrow, reading only the named
columns: a polars DataFrame or LazyFrame (the LazyFrame collects just those), a pyarrow
Table, RecordBatch or RecordBatchReader, a DuckDB relation (queried for just those) and any
object with ``__arrow_c_stream__`` (the Arrow PyCapsule interface: its stream is read once,
keeping the named columns of each batch). A mapping of names to arrays (a dict, a NumPy
record array) is indexed by name.

A name that is missing, or that more than one column carries (pandas and Arrow allow it),
is a ValueError naming the argument and listing the table's column names, never its data.
"""
from __future__ import annotations

from ..core.arrays import is_dask

__all__ = ["select", "module_of", "need", "pyarrow"]

#: column names listed in an error message, at most
LISTED = 30


def module_of(obj) -> str:
    """The top-level package that defines ``obj``'s type (``"pandas"``, ``"pyarrow"``...)."""
    return type(obj).__module__.split(".")[0]


def need(package, what, module=None, extra="io"):
    """The module, or ModuleNotFoundError naming ``what`` needs ``package`` and the extra."""
    import importlib

    try:
        return importlib.import_module(module or package)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f'{what} needs {package}: pip install "hotbin[{extra}]"') from None


def pyarrow(what="data"):
    """The pyarrow module, or ModuleNotFoundError naming ``what`` needs it and the extra."""
    return need("pyarrow", what)


def select(data, keys: dict) -> dict:
    """``{name: column}`` for the names among ``keys`` (``{argument: name or array}``).

    Columns are pandas / dask Series for pandas / dask frames, Arrow (Chunked)Arrays for the
    tables Arrow reads, and whatever a mapping holds otherwise.
    """
    wanted = list(dict.fromkeys(k for k in keys.values() if isinstance(k, str)))
    if not wanted:
        return {}
    mod = module_of(data)
    if (mod == "pandas" and hasattr(data, "columns")) or is_dask(data):
        _check(list(data.columns), keys)
        return {n: data[n] for n in wanted}
    if mod == "polars":
        _check(data.collect_schema().names(), keys)
        frame = data.select(wanted)
        frame = frame.collect() if hasattr(frame, "collect") else frame
        return _by_name(frame.to_arrow(), wanted)
    if mod == "duckdb" and hasattr(data, "select") and hasattr(data, "columns"):
        import duckdb

        _check(list(data.columns), keys)
        rel = data.select(*(duckdb.ColumnExpression(n) for n in wanted))
        return _by_name((getattr(rel, "to_arrow_table", None) or rel.arrow)(), wanted)
    if mod == "pyarrow" and hasattr(data, "column") and hasattr(data, "schema"):  # Table, RecordBatch
        _check(data.schema.names, keys)
        return _by_name(data, wanted)
    if hasattr(data, "__arrow_c_stream__"):  # a RecordBatchReader, or anything Arrow streams
        pa = pyarrow(f"data ({type(data).__name__})")
        reader = data if isinstance(data, pa.RecordBatchReader) else pa.RecordBatchReader.from_stream(data)
        _check(reader.schema.names, keys)
        index = [reader.schema.get_field_index(n) for n in wanted]
        schema = pa.schema([reader.schema.field(i) for i in index])
        return _by_name(pa.Table.from_batches([b.select(index) for b in reader], schema=schema), wanted)
    names = _names(data)
    if names is not None:
        _check(names, keys)
    try:
        return {n: data[n] for n in wanted}
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        what = next(w for w, k in keys.items() if isinstance(k, str))
        raise ValueError(f"{what}: cannot read the columns {wanted} of data ({type(data).__name__}): "
                         f"{exc}") from None


def _by_name(table, names):
    return {n: table.column(table.schema.get_field_index(n)) for n in names}


def _names(data):
    """The column names of a mapping or a record array, or None when it has none to list."""
    for get in (lambda: data.columns, lambda: data.column_names, lambda: data.dtype.names, lambda: data.keys()):
        try:
            names = get()
        except (AttributeError, TypeError):
            continue
        if names is not None:
            return list(names)
    return None


def _check(names, keys):
    """ValueError unless every name among ``keys`` is the name of exactly one column."""
    names = list(names)
    for what, key in keys.items():
        if not isinstance(key, str):
            continue
        count = names.count(key)
        if count != 1:
            listed = ", ".join(map(str, names[:LISTED]))
            if len(names) > LISTED:
                listed += f", ... ({len(names)} in all)"
            found = f"no column {key!r}" if count == 0 else f"{count} columns named {key!r}"
            raise ValueError(f"{what}: {found} in data (columns: {listed})")
