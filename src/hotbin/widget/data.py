"""The columns of a held table, as the server's :class:`hotbin.serve.Dataset` takes them.

The coordinates, weights and histogram columns become numbers as ``hotbin.heatmap(data=...)``
reads them (:mod:`hotbin.io.frames`: nulls NaN, timestamps int64 nanoseconds, text an error
naming the column), the ``by`` column category codes and labels; the whole table goes along
for the drill-down rows (as Arrow, or pandas as it is).
"""
from __future__ import annotations

from ..io import frames
from ..io.tables import module_of, select

__all__ = ["dataset_of"]


def dataset_of(table, x, y, panels: dict, *, by=None, weights=None, agg="count", project=None,
               x_range=None, y_range=None, clip=None, backend=None):
    """A :class:`hotbin.serve.Dataset` of ``table`` (held by :func:`hotbin.widget.table.held`)."""
    from ..exec.local import executor
    from ..serve import Dataset

    for what, key in (("x", x), ("y", y), ("weights", weights), ("by", by)):
        if key is not None and not isinstance(key, str):
            raise TypeError(f"{what}: expected a column name of data, got {type(key).__name__}")
    xa, ya, w, cats = frames.columns(table, x=x, y=y, weights=weights, by=by)
    hist = {name: frames.numbers(select(table, {"hist": name})[name], "hist", name) for name in panels}
    codes = labels = None
    if cats is not None:
        codes, labels = frames.categories(executor(backend, xa), cats, len(xa))
    return Dataset(xa, ya, w, codes, labels=labels, agg=agg, project=project, backend=backend,
                   names=(x, y), x_range=x_range, y_range=y_range, clip=clip, hist=hist,
                   panels=panels, table=_drill_down(table), weight_name=weights or "weight",
                   by_name=by or "category")


def _drill_down(table):
    """The table the drill-down reads rows from: pandas as it is, the rest as Arrow."""
    mod = module_of(table)
    if mod in ("pandas", "pyarrow"):
        return table
    if mod == "polars":
        return table.to_arrow()
    try:
        import pyarrow as pa
    except ModuleNotFoundError:  # a dict of arrays: the drill-down shows the columns it holds
        return None
    return pa.table(table)
