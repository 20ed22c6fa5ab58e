"""Data files for the command line: which files INPUT names, and their columns in chunks.

CSV/TSV (optionally compressed, through pandas) and Parquet (through pyarrow) are
read a chunk of rows at a time as float64 columns; a reading library's error, a
missing column or a cell that is not a number becomes one :class:`UserError` line.
"""
from __future__ import annotations

import glob
import os

import numpy as np

from . import UserError

__all__ = ["data_files", "Files", "reader", "need", "PARQUET_EXT"]

PARQUET_EXT = (".parquet", ".pq", ".parq")
DATA_EXT = PARQUET_EXT + (".csv", ".tsv", ".tab", ".csv.gz", ".tsv.gz", ".csv.bz2", ".csv.zst", ".csv.xz")
COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".zip": "zip", ".xz": "xz", ".zst": "zstd"}


def data_files(spec):
    """The data files INPUT names: a file, a directory's data files, or a glob's matches (sorted)."""
    if os.path.isdir(spec):
        found = sorted(os.path.join(spec, f) for f in os.listdir(spec)
                       if f.lower().endswith(DATA_EXT) and os.path.isfile(os.path.join(spec, f)))
        if not found:
            raise UserError(f"{spec}: a directory without CSV or Parquet files")
        return found
    if glob.has_magic(spec):
        found = sorted(f for f in glob.glob(spec) if os.path.isfile(f))
        if not found:
            raise UserError(f"{spec}: no file matches")
        return found
    if not os.path.exists(spec):
        raise UserError(f"{spec}: no such file")
    return [spec]


class Files:
    """Chunks of several files in turn; progress counts whole files plus the current one's share."""

    def __init__(self, readers):
        self.readers = readers

    def __iter__(self):
        k = len(self.readers)
        for i, r in enumerate(self.readers):
            for cols, done in r:
                yield cols, (i + (done or 0.0)) / k


class _Reader:
    """Iterable over chunks of float64 columns; every iteration reads the file anew."""

    def __init__(self, path, columns, chunk_rows, kind):
        self.path, self.columns, self.chunk_rows, self.kind = path, columns, chunk_rows, kind
        self.size = os.path.getsize(path)

    def __iter__(self):
        try:
            yield from (self._parquet() if self.kind == "parquet" else self._csv())
        except UserError:
            raise
        except Exception as exc:  # the reading library's errors: unreadable or malformed file
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UserError(f"{self.path}: cannot read as {self.kind}: {first}") from None

    def _check(self, names):
        missing = [c for c in self.columns if c not in names]
        if missing:
            have = ", ".join(map(str, names[:20])) + (", ..." if len(names) > 20 else "")
            raise UserError(f"{self.path}: no column {missing[0]!r} (columns: {have})")

    def _csv(self):
        pd = need("pandas", "reading CSV files")
        lower = self.path.lower()
        sep = "\t" if lower.endswith((".tsv", ".tsv.gz", ".tab")) else ","
        compression = next((c for ext, c in COMPRESSION.items() if lower.endswith(ext)), None)
        header = pd.read_csv(self.path, sep=sep, nrows=0, compression=compression)
        self._check([str(c) for c in header.columns])
        with open(self.path, "rb") as f:  # f.tell(): bytes read so far, for the progress bar
            for df in pd.read_csv(f, sep=sep, usecols=list(dict.fromkeys(self.columns)),
                                  chunksize=self.chunk_rows, compression=compression):
                yield [_floats(df[c], c) for c in self.columns], f.tell() / max(self.size, 1)

    def _parquet(self):
        pq = need("pyarrow", "reading Parquet files", module="pyarrow.parquet")
        f = pq.ParquetFile(self.path)
        self._check(list(f.schema_arrow.names))
        rows = max(f.metadata.num_rows, 1)
        seen = 0
        for batch in f.iter_batches(batch_size=self.chunk_rows, columns=list(dict.fromkeys(self.columns))):
            seen += batch.num_rows
            yield [_floats(batch.column(c).to_numpy(zero_copy_only=False), c)
                   for c in self.columns], seen / rows


def _floats(col, name):
    try:
        a = np.asarray(col.to_numpy(dtype=np.float64, na_value=np.nan) if hasattr(col, "to_numpy")
                       else col, np.float64)
    except (TypeError, ValueError):
        raise UserError(f"column {name!r} holds values that are not numbers") from None
    return a


def reader(path, columns, chunk_rows):
    with open(path, "rb") as f:  # also raises for an unreadable file
        magic = f.read(4)
    kind = "parquet" if path.lower().endswith(PARQUET_EXT) or magic == b"PAR1" else "csv"
    return _Reader(path, columns, chunk_rows, kind)


def need(package, what, module=None):
    import importlib

    try:
        return importlib.import_module(module or package)
    except ModuleNotFoundError:
        raise UserError(f"{what} needs {package}: pip install {package}") from None
