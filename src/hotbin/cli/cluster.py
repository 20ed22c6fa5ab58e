"""``hotbin heatmap --scheduler``: the same heatmap on a Dask cluster.

The files become a dask dataframe (``dd.read_csv`` / ``dd.read_parquet``; a
directory of Parquet keeps its hive partitions); the workers parse text columns
(junk cells become NaN and their rows are counted and skipped), filter by
``--where`` and code the ``--by`` categories, per partition; then
:func:`hotbin.heatmap` bins the lazy columns and tree-merges the partials.
Dask infers CSV column types from a sample of the first rows; when a later
partition holds a cell that is not a number the job is read again with those
columns as text (one line on stderr), never ending in a Dask traceback.
"""
from __future__ import annotations

import logging
import os
import sys

import numpy as np

from . import UserError
from .datafiles import PARQUET_EXT, need

__all__ = ["on_cluster", "lazy_columns"]


def on_cluster(args, spec, files, junk, where):
    """``(Heatmap, points)``: the heatmap of ``files`` computed on the cluster ``args.scheduler``."""
    dd = need("dask", "--scheduler", module="dask.dataframe", extra="dask")
    distributed = need("distributed", "--scheduler", extra="dask")
    numbers = [c for c in (args.x, args.y, args.agg[1]) if c]
    columns = list(dict.fromkeys(numbers + ([args.by] if args.by else []) + (where.columns if where else [])))
    numeric = list(dict.fromkeys(numbers + sorted(where.numeric if where else ())))
    parquet = [f.lower().endswith(PARQUET_EXT) for f in files]
    if any(parquet) and not all(parquet):
        raise UserError("--scheduler: give either CSV or Parquet files, not both")
    for name in ("distributed", "distributed.worker", "distributed.scheduler", "distributed.nanny"):
        logging.getLogger(name).setLevel(logging.CRITICAL)  # errors come back as one line

    def frame(text):
        try:
            if all(parquet):
                return dd.read_parquet(spec if os.path.isdir(spec) else files, columns=columns)
            sep = "\t" if files[0].lower().endswith((".tsv", ".tsv.gz", ".tab")) else ","
            return dd.read_csv(files, sep=sep, usecols=columns, blocksize=max(args.chunk_rows, 1) * 32,
                               dtype={c: "object" for c in columns if c in text or c not in numeric})
        except (ValueError, KeyError) as exc:  # a missing column, a malformed file
            raise UserError(f"{files[0]}: {str(exc).splitlines()[0]}") from None

    if args.scheduler == "local":
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                           silence_logs=logging.CRITICAL)
        client = distributed.Client(cluster)
    else:
        cluster, client = None, distributed.Client(args.scheduler, timeout="20s")
    try:
        try:
            return _job(args, dd, frame(()), numeric, junk, where)
        except ValueError as exc:
            if all(parquet) or "Mismatched dtypes" not in str(exc):
                raise
        print("hotbin heatmap: a cell that is not a number lies beyond the rows dask samples for the "
              "column types; reading the number columns as text", file=sys.stderr)
        return _job(args, dd, frame(set(numeric)), numeric, junk, where)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _job(args, dd, df, numeric, junk, where):
    from ..heatmap import heatmap

    df, bad = _numbers(dd, df, numeric)
    nbad = 0 if bad is None else int(bad.sum().compute())  # one more pass, only for text columns
    if nbad:
        junk.rows = nbad  # places unknown: partitions carry no line numbers
        if args.strict:
            raise UserError(f"{nbad:,} rows hold a cell that is not a number (without --strict "
                            "they are skipped and counted)")
        df = df[~bad]
    if where is not None:
        df = df[df.map_partitions(_where_mask, where.text, meta=(None, bool))]
    labels, by = None, None
    agg, value = args.agg
    cols = [df[args.x], df[args.y], df[value] if value else None]
    if args.by:
        by, labels = _codes(df[args.by])
        if nbad or where is not None:  # rows were filtered: categories need the partitions' lengths
            lengths = tuple(int(v) for v in df.map_partitions(len).compute())
            cols, by = ([None if c is None else c.to_dask_array(lengths=lengths) for c in cols],
                        by.to_dask_array(lengths=lengths))
    hm = heatmap(*cols, agg=agg, by=by,
                 width=args.width, height=args.height, x_range=args.x_range, y_range=args.y_range,
                 clip=args.clip, project=args.project, backend=args.backend)
    from dataclasses import replace

    hm = replace(hm, x_name=args.x, y_name=args.y,
                 categories=tuple(labels) if labels is not None else hm.categories)
    return hm, int(np.asarray(hm.points).sum()) + hm.dropped + hm.skipped


def _numbers(dd, df, names):
    """The dataframe with the columns ``names`` as float64 and the rows holding a cell that is not
    a number (parsed per partition on the workers; empty cells stay NaN), or None when every
    column is numeric."""
    bad = None
    for name in names:
        raw = df[name]
        if raw.dtype.kind in "biuf":
            df = df.assign(**{name: raw.astype("float64")})
            continue
        num = dd.to_numeric(raw, errors="coerce")
        junk = num.isna() & ~raw.isna()
        bad = junk if bad is None else bad | junk
        df = df.assign(**{name: num.astype("float64")})
    return df, bad  # bad None: every column numeric, no pass to count junk


def _where_mask(pdf, text):
    """The rows of a pandas partition that ``--where text`` keeps (evaluated by pyarrow)."""
    import pyarrow as pa

    from .where import parse

    w = parse(text)
    table = pa.table({c: pa.array(pdf[c].to_numpy(), from_pandas=True) for c in w.columns})
    table = table.append_column("__row__", pa.array(np.arange(len(pdf))))
    keep = np.zeros(len(pdf), bool)
    keep[table.filter(w.expression).column("__row__").to_numpy()] = True
    return pdf.assign(**{"__keep__": keep})["__keep__"]


def _codes(col):
    """``(integer codes, labels or None)`` of a category column: integers are their own codes;
    text is coded over its sorted labels (one pass finds them), as :func:`hotbin.heatmap` in memory."""
    if col.dtype.kind in "iub":
        return col.astype("int64"), None
    if col.dtype.kind == "f":
        raise UserError("--by: the column holds fractional numbers; categories are text or integers")
    labels = sorted(str(v) for v in col.dropna().unique().compute())
    codes = col.map_partitions(_code_partition, labels, meta=(col.name, "int64"))
    return codes, labels


def _code_partition(s, labels):
    """The codes of a pandas partition over ``labels`` (-1: none of them, or empty)."""
    import pandas as pd

    codes = pd.Categorical(s.astype(object).where(s.notna(), None), categories=labels).codes
    return pd.Series(codes.astype(np.int64), index=s.index, name=s.name)


def lazy_columns(args):
    """``(columns, labels, description)`` for ``hotbin serve --scheduler``: the needed columns
    of INPUT as dask arrays on the cluster (its client stays open while the server runs),
    the rows with a cell that is not a number dropped and counted, ``--by`` coded."""
    from .sources import data_files

    dd = need("dask", "--scheduler", module="dask.dataframe", extra="dask")
    distributed = need("distributed", "--scheduler", extra="dask")
    files, _ = data_files(args.input)
    numbers = [c for c in (args.x, args.y, args.value) if c]
    wanted = numbers + ([args.by] if args.by else [])
    if args.scheduler == "local":
        distributed.Client(distributed.LocalCluster(dashboard_address=None,
                                                    silence_logs=logging.CRITICAL))
    else:
        distributed.Client(args.scheduler, timeout="20s")
    try:
        df = (dd.read_parquet(files, columns=wanted) if files[0].lower().endswith(PARQUET_EXT)
              else dd.read_csv(files, usecols=wanted, dtype={c: "object" for c in wanted}))
    except (ValueError, KeyError) as exc:
        raise UserError(f"{files[0]}: {str(exc).splitlines()[0]}") from None
    df, bad = _numbers(dd, df, numbers)
    if bad is not None:
        nbad = int(bad.sum().compute())
        if nbad and args.strict:
            raise UserError(f"{nbad:,} rows hold a cell that is not a number (without --strict they "
                            "are skipped and counted)")
        if nbad:
            print(f"hotbin serve: skipped {nbad:,} row{'s' if nbad != 1 else ''} with a cell that is "
                  "not a number", file=sys.stderr)
            df = df[~bad]
    labels = None
    keys = ["x", "y", "weight"][:len(numbers)]
    cols = {k: df[c] for k, c in zip(keys, numbers)}
    if args.by:
        cols["by"], labels = _codes(df[args.by])
    cols = {k: v.to_dask_array(lengths=True) for k, v in cols.items()}
    return cols, labels, f"{len(files)} file(s) on the Dask cluster"
