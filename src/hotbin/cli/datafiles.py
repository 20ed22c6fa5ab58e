"""Data files for the command line: their columns in chunks, filtered, without junk rows.

CSV/TSV (plain or compressed: gzip, bzip2, zstd, xz, lz4, found by their first
bytes) is read by pyarrow's streaming CSV reader, Parquet through
``pyarrow.dataset`` (hive partitions, ``--where`` pushed down so row groups whose
statistics exclude every row are never read). Each chunk holds the ``numbers``
columns as float64 (empty cells NaN) and the ``category`` column as a pyarrow
array. A row whose needed cell is not a number (``#VALUE!``, a repeated header,
``"-73,98"``) is skipped and counted in a :class:`Junk`; with ``strict`` the
first is an error naming its line (row, for Parquet). The needed columns of CSV
are read as numbers first; the first cell that is not one reopens the file with
those columns as text from the rows not yet given out. :meth:`Data.extents`
answers from Parquet row-group statistics without reading any data page.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import numpy as np

from . import UserError
from .sources import COMPRESSED as _COMPRESSED
from .sources import PARQUET_EXT, STDIN, data_files, hive_keys, stdin_file

__all__ = ["Request", "Data", "Junk", "open_data", "need", "PARQUET_EXT"]

#: first bytes of the compressed streams pyarrow decompresses
_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\x28\xb5\x2f\xfd": "zstd", b"\x04\x22\x4d\x18": "lz4"}
_XZ = b"\xfd7zXZ\x00"
#: bytes of CSV parsed at once
BLOCK = 1 << 22
#: the row numbers of a chunk, beside its columns while --where filters them
_ROW = "__hotbin_row__"


@dataclass
class Request:
    """The columns a job reads: ``numbers`` as float64 (x, y, values), an optional
    ``category`` column, and the ``where`` filter (:mod:`hotbin.cli.where`)."""

    numbers: list
    category: str | None = None
    where: object = None

    @property
    def numeric(self) -> set:
        """Columns whose cells must be numbers (else their row is junk)."""
        return set(self.numbers) | (self.where.numeric if self.where else set())

    @property
    def columns(self) -> list:
        extra = ([self.category] if self.category else []) + (self.where.columns if self.where else [])
        return list(dict.fromkeys(list(self.numbers) + extra))


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


def open_data(spec, request, chunk_rows, junk=None) -> Data:
    """The :class:`Data` INPUT ``spec`` names (``-``: standard input, spooled to a temporary file)."""
    need("pyarrow", "reading data files", module="pyarrow.dataset")
    junk = Junk() if junk is None else junk
    cleanup = lambda: None  # noqa: E731
    if spec == STDIN:
        path, cleanup = stdin_file()
        files, base = [path], None
    else:
        files, base = data_files(spec)
    keys, types = hive_keys(files, base)
    parquet = [_is_parquet(f) for f in files]
    readers = [_Csv(f, k, request, chunk_rows, junk) for f, k, p in zip(files, keys, parquet) if not p]
    pq_files = [f for f, p in zip(files, parquet) if p]
    if pq_files:
        readers += _parquet_readers(pq_files, base, types, request, chunk_rows, junk)
    for r in readers:
        r.stdin = spec == STDIN
    return Data(readers, spec, cleanup)


class Data:
    """Chunks ``(columns, done)`` of every file in turn (``done``: the share read so far);
    every iteration reads the files anew."""

    def __init__(self, readers, spec, cleanup):
        self.readers, self.spec, self.cleanup = readers, spec, cleanup
        self.parquet = bool(readers) and all(isinstance(r, _Parquet) for r in readers)

    @property
    def label(self) -> str:
        if self.spec == STDIN:
            return "standard input"
        return os.path.basename(self.readers[0].path) if len(self.readers) == 1 else f"{len(self.readers)} files"

    def __iter__(self):
        k = len(self.readers)
        for i, r in enumerate(self.readers):
            for cols, done in r:
                yield cols, (i + min(done, 1.0)) / k

    def extents(self, names):
        """``[(lo, hi) or None per name]`` from Parquet row-group statistics, or None when they
        cannot answer (not all Parquet, a filter, a text column, a row group without statistics)."""
        if not self.parquet:
            return None
        lo, hi = np.full(len(names), np.inf), np.full(len(names), -np.inf)
        for r in self.readers:
            ext = r.extents(names)
            if ext is None:
                return None
            lo, hi = np.minimum(lo, ext[0]), np.maximum(hi, ext[1])
        return [(a, b) if a <= b else None for a, b in zip(lo, hi)]


def _is_parquet(path) -> bool:
    with open(path, "rb") as f:  # also raises for an unreadable file
        magic = f.read(4)
    return path.lower().endswith(PARQUET_EXT) or magic == b"PAR1"


class _Reader:
    """One file's chunks; the reading library's errors become one :class:`UserError` line."""

    kind = ""

    def __init__(self, path, keys, request, chunk_rows, junk):
        self.path, self.keys, self.request, self.chunk_rows, self.junk = path, keys, request, chunk_rows, junk
        self.stdin = False

    @property
    def name(self):
        return "<stdin>" if self.stdin else self.path

    def __iter__(self):
        try:
            yield from self._chunks()
        except UserError:
            raise
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UserError(f"{self.name}: cannot read as {self.kind}: {first}") from None

    def _check(self, names):
        missing = [c for c in self.request.columns if c not in names and c not in self.keys]
        if missing:
            have = ", ".join(map(str, names[:20])) + (", ..." if len(names) > 20 else "")
            raise UserError(f"{self.name}: no column {missing[0]!r} (columns: {have})")

    def _finish(self, table, start, first, where, filtered=False):
        """The output columns of a chunk (a pyarrow table of the request's columns): numbers as
        float64 with the junk rows noted and removed, then the ``--where`` filter applied."""
        import pyarrow as pa

        for k, v in self.keys.items():
            if k in self.request.columns and k not in table.column_names:
                table = table.append_column(k, pa.array([v] * table.num_rows))
        req, bad, what, floats = self.request, None, None, {}
        for name in sorted(req.numeric, key=req.columns.index):
            floats[name], junk = _floats(table.column(name))
            if junk is not None and junk.any():
                if bad is None:
                    bad, what = np.zeros(junk.size, bool), (name, _cell(table.column(name), np.argmax(junk)))
                bad |= junk
        keep = None
        if bad is not None:
            self.junk.note(self.name, start, (start + first + np.flatnonzero(bad)).tolist(), where, *what)
            keep = ~bad
        if req.where is not None and not filtered:
            cols = {c: pa.array(floats[c], from_pandas=True) if c in floats else table.column(c)
                    for c in req.where.columns}
            cols[_ROW] = pa.array(np.arange(table.num_rows))
            rows = pa.table(cols).filter(req.where.expression).column(_ROW).to_numpy()
            sel = np.zeros(table.num_rows, bool)
            sel[rows] = True
            keep = sel if keep is None else keep & sel
        out = [floats[c] if keep is None else floats[c][keep] for c in req.numbers]
        if req.category:
            cat = table.column(req.category).combine_chunks()
            out.append(cat if keep is None else cat.filter(pa.array(keep)))
        return out


class _Csv(_Reader):
    kind = "csv"

    def _chunks(self):
        import pyarrow as pa
        import pyarrow.csv as pcsv

        req = self.request
        name = os.path.basename(self.path).lower()
        sep = "\t" if name.split(".")[-1 - name.endswith(_COMPRESSED)] in ("tsv", "tab") else ","
        text = set(req.columns) - req.numeric
        seen, numbers_as_text = 0, False
        while True:  # at most twice: the needed columns as numbers, then as text
            types = {c: pa.string() if c in text or numbers_as_text else pa.float64()
                     for c in req.columns if c not in self.keys}
            with open_text(self.path) as (stream, tell):
                try:  # readers closed before their file: a read-ahead thread left running
                    # when the interpreter exits aborts it ("terminate called without an
                    # active exception")
                    with contextlib.closing(pcsv.open_csv(
                            stream, pcsv.ReadOptions(block_size=BLOCK, skip_rows_after_names=seen),
                            pcsv.ParseOptions(delimiter=sep),
                            pcsv.ConvertOptions(column_types=types, include_columns=list(types),
                                                strings_can_be_null=True))) as reader:
                        for batch in reader:
                            for lo in range(0, batch.num_rows, self.chunk_rows):
                                part = pa.Table.from_batches([batch.slice(lo, self.chunk_rows)])
                                yield self._finish(part, seen, 2, "line"), tell()
                                seen += part.num_rows
                    return
                except pa.ArrowKeyError:  # a named column is not in the header
                    self._check(self._header(sep))
                    raise
                except pa.ArrowInvalid as exc:
                    if numbers_as_text or "conversion error" not in str(exc):
                        raise
                    numbers_as_text = True  # a cell that is not a number: read on as text

    def _header(self, sep):
        import pyarrow.csv as pcsv

        with open_text(self.path) as (stream, _), \
                contextlib.closing(pcsv.open_csv(stream, pcsv.ReadOptions(block_size=BLOCK),
                                                 pcsv.ParseOptions(delimiter=sep))) as reader:
            return reader.schema.names


@contextlib.contextmanager
def open_text(path):
    """``with open_text(path) as (stream, done)``: a pyarrow input stream of the file's text,
    decompressed by its first bytes, and a function giving the share of the file read so far;
    the file is closed on leaving, whatever happened. Reads are native (``pa.OSFile``) except
    for xz, which only Python's ``lzma`` decompresses."""
    import pyarrow as pa

    size = max(os.path.getsize(path), 1)
    with open(path, "rb") as head_file:
        head = head_file.read(6)
    if head.startswith(_XZ):
        import lzma

        with open(path, "rb") as raw, lzma.open(raw) as text:
            yield pa.PythonFile(text, mode="r"), lambda: raw.tell() / size
        return
    codec = next((c for magic, c in _MAGIC.items() if head.startswith(magic)), None)
    with pa.OSFile(path, "r") as raw, (pa.CompressedInputStream(raw, codec) if codec else raw) as out:
        yield out, lambda: raw.tell() / size


def _parquet_readers(files, base, types, request, chunk_rows, junk):
    import pyarrow as pa
    import pyarrow.dataset as ds

    keys = [k for k in types if k in request.columns]
    part = None
    if keys and base is not None:
        part = ds.partitioning(pa.schema([(k, pa.int64() if types[k] is int else pa.string()) for k in types]),
                               flavor="hive")
    try:
        dataset = ds.dataset(files, format="parquet", partitioning=part,
                             partition_base_dir=base if part is not None else None)
    except (pa.ArrowInvalid, OSError) as exc:
        raise UserError(f"{files[0]}: cannot read as parquet: {str(exc).splitlines()[0]}") from None
    return [_Parquet(frag, dataset.schema, request, chunk_rows, junk) for frag in dataset.get_fragments()]


class _Parquet(_Reader):
    kind = "parquet"

    def __init__(self, fragment, schema, request, chunk_rows, junk):
        super().__init__(fragment.path, {}, request, chunk_rows, junk)
        self.fragment, self.schema = fragment, schema
        self._check(schema.names)

    def _numeric(self):
        """Whether every column that must be a number is one in the file (no junk possible)."""
        import pyarrow as pa

        return all(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                   for t in (self.schema.field(c).type for c in self.request.numeric))

    def _chunks(self):
        pushed = self._numeric()  # the filter goes to the reader: row groups are skipped by statistics
        req = self.request
        rows = max(self.fragment.metadata.num_rows, 1)
        seen = 0
        for batch in self.fragment.to_batches(
                schema=self.schema, columns=req.columns, batch_size=self.chunk_rows,
                filter=req.where.expression if pushed and req.where else None):
            import pyarrow as pa

            yield self._finish(pa.Table.from_batches([batch]), seen, 0, "row", filtered=pushed), seen / rows
            seen += batch.num_rows

    def extents(self, names):
        """``(lo, hi)`` arrays of the columns ``names`` from the row groups' statistics, or None."""
        if self.request.where is not None or not self._numeric() \
                or any(n not in self.fragment.physical_schema.names for n in names):
            return None
        md = self.fragment.metadata
        lo, hi = np.full(len(names), np.inf), np.full(len(names), -np.inf)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            paths = [rg.column(j).path_in_schema for j in range(rg.num_columns)]
            for k, name in enumerate(names):
                if name not in paths:
                    return None
                st = rg.column(paths.index(name)).statistics
                if st is None or not st.has_min_max:
                    if st is not None and st.null_count == rg.num_rows:
                        continue  # every value is empty
                    return None
                a, b = float(st.min), float(st.max)
                if not (np.isfinite(a) and np.isfinite(b)):
                    return None  # infinities are not in the extent: read the data
                lo[k], hi[k] = min(lo[k], a), max(hi[k], b)
        return lo, hi


def _cell(col, i):
    return col.slice(int(i), 1).to_pylist()[0]


def _floats(col):
    """``(float64 values, junk)`` of a pyarrow column: NaN for empty cells; ``junk`` marks cells
    that are not numbers (None when the column is numeric)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    pd = need("pandas", "reading cells that are not numbers")
    s = pd.Series(col.to_numpy(zero_copy_only=False) if hasattr(col, "to_numpy") else col, dtype=object)
    a = pd.to_numeric(s, errors="coerce")
    return a.to_numpy(dtype=np.float64, na_value=np.nan), (a.isna() & s.notna()).to_numpy()


def need(package, what, module=None, extra="io"):
    """The module, or a :class:`UserError` naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module or package)
    except ModuleNotFoundError:
        raise UserError(f'{what} needs {package}: pip install "hotbin[{extra}]"') from None
