"""Data files for the command line: which files INPUT names, and their columns in chunks.

CSV/TSV (optionally compressed, through pandas) and Parquet (through pyarrow) are
read a chunk of rows at a time as float64 columns; a reading library's error or a
missing column becomes one :class:`UserError` line. A row whose needed cell is not a
number (``#VALUE!``, a repeated header, ``"-73,98"``) is skipped and counted in a
:class:`Junk` (empty cells are NaN, as NumPy reads them: kept, and dropped by the
heatmap); with ``strict`` the first such row is an error naming its line.
"""
from __future__ import annotations

import glob
import os

import numpy as np

from . import UserError

__all__ = ["data_files", "Files", "Junk", "reader", "need", "PARQUET_EXT"]

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


class Junk:
    """Rows skipped because a needed cell is not a number: how many, and the first places.

    Files are read once per pass (extent, percentiles, counting); a chunk is counted the
    first time it is seen. ``strict``: the first such row raises a :class:`UserError`.
    """

    SHOW = 5  #: places named in the message

    def __init__(self, strict: bool = False):
        self.strict, self.rows, self.first, self._seen = strict, 0, [], set()

    def note(self, path, start: int, places, where: str, column: str, cell) -> None:
        """Rows ``places`` (line or row numbers) of the chunk at ``start`` of ``path`` are junk."""
        if self.strict:
            raise UserError(f"{path}: {where} {places[0]}: column {column!r} holds {str(cell)!r}, "
                            "not a number (without --strict such rows are skipped and counted)")
        if (path, start) in self._seen:
            return
        self._seen.add((path, start))
        self.rows += len(places)
        self.first += [(os.path.basename(path), where, p) for p in places[:self.SHOW - len(self.first)]]

    def message(self) -> str | None:
        if not self.rows:
            return None
        groups: dict = {}
        for name, where, p in self.first:
            groups.setdefault((name, where), []).append(str(p))
        places = "; ".join(f"{name} {where}{'s' * (len(ps) > 1)} {', '.join(ps)}"
                           for (name, where), ps in groups.items())
        more = ", ..." if self.rows > len(self.first) else ""
        where = f" ({places}{more})" if places else ""
        return (f"skipped {self.rows:,} row{'s' * (self.rows != 1)} with a cell that is not a number"
                f"{where}; --strict makes this an error")


class _Reader:
    """Iterable over chunks of float64 columns; every iteration reads the file anew."""

    def __init__(self, path, columns, chunk_rows, kind, junk=None):
        self.path, self.columns, self.chunk_rows, self.kind = path, columns, chunk_rows, kind
        self.junk = Junk() if junk is None else junk
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
        start = 0
        with open(self.path, "rb") as f:  # f.tell(): bytes read so far, for the progress bar
            for df in pd.read_csv(f, sep=sep, usecols=list(dict.fromkeys(self.columns)),
                                  chunksize=self.chunk_rows, compression=compression):
                # line numbers: the header is line 1 (blank lines and records that span lines
                # shift them)
                yield self._numbers([df[c] for c in self.columns], start, 2, "line"), f.tell() / max(self.size, 1)
                start += len(df)

    def _parquet(self):
        pq = need("pyarrow", "reading Parquet files", module="pyarrow.parquet")
        f = pq.ParquetFile(self.path)
        self._check(list(f.schema_arrow.names))
        rows = max(f.metadata.num_rows, 1)
        seen = 0
        for batch in f.iter_batches(batch_size=self.chunk_rows, columns=list(dict.fromkeys(self.columns))):
            cols = [batch.column(c).to_numpy(zero_copy_only=False) for c in self.columns]
            yield self._numbers(cols, seen, 0, "row"), (seen + batch.num_rows) / rows
            seen += batch.num_rows

    def _numbers(self, cols, start, first, where):
        """float64 columns of a chunk without its junk rows (noted in :attr:`junk`)."""
        out, bad, what = [], None, None
        for col, name in zip(cols, self.columns):
            a, junk = _floats(col)
            if junk is not None and junk.any():
                if bad is None:
                    bad, what = np.zeros(junk.size, bool), (name, np.asarray(col, object)[np.argmax(junk)])
                bad |= junk
            out.append(a)
        if bad is None:
            return out
        places = (start + first + np.flatnonzero(bad)).tolist()
        self.junk.note(self.path, start, places, where, *what)
        return [a[~bad] for a in out]


def _floats(col):
    """``(float64 values, junk)``: NaN for empty cells; ``junk`` marks cells that are not numbers
    (None when the column is numeric already)."""
    try:
        return np.asarray(col.to_numpy(dtype=np.float64, na_value=np.nan) if hasattr(col, "to_numpy")
                          else col, np.float64), None
    except (TypeError, ValueError):
        pass
    pd = need("pandas", "reading cells that are not numbers")
    s = pd.Series(np.asarray(col, object))
    a = pd.to_numeric(s, errors="coerce")
    return a.to_numpy(dtype=np.float64, na_value=np.nan), (a.isna() & s.notna()).to_numpy()


def reader(path, columns, chunk_rows, junk=None):
    """Chunks of ``columns`` of ``path`` as float64 (rows with junk cells noted in ``junk``)."""
    with open(path, "rb") as f:  # also raises for an unreadable file
        magic = f.read(4)
    kind = "parquet" if path.lower().endswith(PARQUET_EXT) or magic == b"PAR1" else "csv"
    return _Reader(path, columns, chunk_rows, kind, junk)


def need(package, what, module=None):
    import importlib

    try:
        return importlib.import_module(module or package)
    except ModuleNotFoundError:
        raise UserError(f"{what} needs {package}: pip install {package}") from None
