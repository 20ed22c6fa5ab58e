"""INPUT as one DuckDB query: the needed columns of every file, filtered, junk rows rejected.

CSV/TSV (plain, gzip, zstd; bz2, xz and lz4 decompressed to a temporary file
first) is read by DuckDB's ``read_csv`` with the number columns typed ``DOUBLE``
(dates and timestamps as their epoch seconds), rows it cannot read going to its
rejects tables (:mod:`hotbin.io.rejects`); Parquet by ``read_parquet``. Hive
folders ``key=value`` become columns, but a file's own column of that name wins
(noted in :attr:`Source.notes`). ``--where`` is a SQL expression DuckDB parses and
binds over each file's columns. Every pass runs the same query, so every pass sees
the same rows.
"""
from __future__ import annotations

import os
import re

from .files import (STDIN, DataError, data_files, decompressed, hive_keys, key_type, kind,
                    stdin_file)
from .rejects import Junk
from .tables import need

__all__ = ["Source", "quote"]

_TEMPORAL = re.compile(r"^(DATE|TIMESTAMP.*|TIME.*)$")
_NUMERIC = re.compile(r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|"
                      r"UHUGEINT|FLOAT|DOUBLE|DECIMAL.*|BOOLEAN)$")
#: the value of hive key ``{}`` in a file's path
_KEY = r"[/\\]{}=([^/\\]*)"
#: rows of a CSV file looked at to tell a text column from a number column with junk cells
SAMPLE = 100_000


def quote(name) -> str:
    """``name`` as a SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def _text(value) -> str:
    return "'" + str(value).replace("'", "''") + "'"


class Source:
    """The rows of INPUT ``spec`` (or of ``files`` below ``base``): the ``numbers`` columns as
    DOUBLE, then the ``category`` column, where ``where`` (SQL) holds.

    ``sql`` is the query; :meth:`query` runs it on this source's DuckDB connection, after
    which :meth:`done` takes the junk rows. ``close`` removes temporary files.
    """

    def __init__(self, spec, numbers, category=None, where=None, strict=False, files=None, base=None):
        duckdb = need("duckdb", "reading data files")
        need("pyarrow", "reading data files")  # the batches are Arrow record batches
        self.numbers, self.category, self.where = list(numbers), category, where
        self.junk, self.notes, self._temp = Junk(strict), [], []
        self.con = duckdb.connect(config={"preserve_insertion_order": True})
        self.stdin = spec == STDIN
        if where is not None and hasattr(duckdb, "SQLExpression"):
            try:  # one expression, nothing around it (no closing parenthesis, no second statement)
                duckdb.SQLExpression(where)
            except Exception as exc:  # noqa: BLE001
                self.con.close()
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise DataError(f"--where {where!r}: {first}") from None
        try:
            if self.stdin:
                path = stdin_file()
                self._temp.append(path)
                files, base = [path], None
                self.junk.names[path] = "<stdin>"
            elif files is None:
                files, base = data_files(spec)
            self.files, self.base = list(files), base
            self.sql = " UNION ALL ".join(self._group(g, c) for g, c in self._groups())
        except Exception as exc:  # noqa: BLE001 - a truncated stream, an unreadable file: one line
            self.close()
            raise self.error(exc) from None
        except BaseException:
            self.close()
            raise

    @property
    def label(self) -> str:
        if not getattr(self, "files", None):
            return "INPUT"
        if self.stdin:
            return "standard input"
        return os.path.basename(self.files[0]) if len(self.files) == 1 else f"{len(self.files)} files"

    @property
    def columns(self) -> list:
        return self.numbers + ([self.category] if self.category else [])

    def query(self, sql):
        """A DuckDB relation of ``sql`` (over this source as ``src``); errors become one line."""
        try:
            return self.con.sql(f"WITH src AS ({self.sql}) {sql}")
        except Exception as exc:  # noqa: BLE001 - DuckDB's errors as one line
            raise self.error(exc) from None

    def table(self, sql):
        """The result of ``sql`` (over this source as ``src``) as a pyarrow table."""
        rel = self.query(sql)
        try:  # to_arrow_table in newer DuckDB, arrow() in older
            return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
        except Exception as exc:  # noqa: BLE001
            raise self.error(exc) from None

    def batches(self, sql, rows):
        """The result of ``sql`` as a pyarrow RecordBatchReader of batches of at most ``rows`` rows."""
        rel = self.query(sql)
        try:  # to_arrow_reader in newer DuckDB, fetch_record_batch in older
            return rel.to_arrow_reader(rows) if hasattr(rel, "to_arrow_reader") else rel.fetch_record_batch(rows)
        except Exception as exc:  # noqa: BLE001
            raise self.error(exc) from None

    def one(self, sql) -> tuple:
        """The one row of ``sql`` (over this source as ``src``)."""
        try:
            return self.con.execute(f"WITH src AS ({self.sql}) {sql}").fetchall()[0]
        except Exception as exc:  # noqa: BLE001 - DuckDB's errors as one line
            raise self.error(exc) from None

    def error(self, exc) -> Exception:
        """A DuckDB error as a one-line :class:`DataError` naming ``--where`` when it is the cause."""
        if isinstance(exc, (DataError, MemoryError, ModuleNotFoundError, OSError)):
            return exc
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if self.where and type(exc).__name__ in ("ParserException", "BinderException"):
            return DataError(f"--where {self.where!r}: {first}")
        if self.where and "Conversion Error" in first:
            return DataError(f"--where {self.where!r}: {first}")
        return DataError(f"{self.label}: cannot read: {first}")

    def done(self, rows) -> None:
        """After a complete pass of ``rows`` rows: the junk rows, and a column that held no number."""
        self.junk.collect(self.con)
        if rows == 0 and self.junk.rows and not self.where:  # (--where may have kept no row)
            for name, line, kind, column, message in self.junk.first:
                if kind == "CAST" and column in self.numbers:
                    raise DataError(f"column {column!r} holds no number (e.g. line {line} of {name}): "
                                    "coordinates and values must be numbers")

    def close(self) -> None:
        for path in self._temp:
            if os.path.exists(path):
                os.remove(path)
        self._temp = []
        if getattr(self, "con", None) is not None:
            self.con.close()
            self.con = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- building the query ---------------------------------------------------------------

    def _groups(self):
        """``(files, (kind, codec, delimiter))``: the files one DuckDB reader reads at once."""
        groups: dict = {}
        for f in self.files:
            k, codec = kind(f)
            path = f
            if codec in ("bz2", "xz", "lz4"):
                path = decompressed(f, codec)
                self._temp.append(path)
                self.junk.names[path] = os.path.basename(f)
                codec = None
            name = f.lower().removesuffix("." + f.lower().split(".")[-1]) if codec else f.lower()
            sep = "\t" if name.endswith((".tsv", ".tab")) else None
            if codec:
                self.junk.codecs[path] = codec
            groups.setdefault((k, codec, sep), []).append(path)
        return [(files, key) for key, files in groups.items()]

    def _group(self, files, key) -> str:
        """The SELECT of the needed columns of one group of files."""
        k, codec, sep = key
        keys = hive_keys(files, self.base) if self.base is not None else [{} for _ in files]
        names = list(dict.fromkeys(n for found in keys for n in found))
        listed = "[" + ", ".join(_text(f) for f in files) + "]"
        if k == "parquet":
            options = ["union_by_name=true"]
        else:
            # RFC 4180 quoting, not sniffed: a sniffer that meets no quote in its sample reads a
            # quoted field with a newline far into the file as two broken rows
            options = ["header=true", "store_rejects=true", "quote='\"'", "escape='\"'"]
            options += [f"compression={_text(codec)}"] if codec else []
            options += [f"delim={_text(sep)}"] if sep else []
        own = self._describe(f"read_{k}({listed}, {', '.join(options + ['hive_partitioning=false'])})")
        clash = [n for n in names if n in own]
        for n in clash:
            self.notes.append(f"the hive key {n!r} (folder {n}=...) is also a column of the files; "
                              f"the files' column {n!r} is used")
        extra = {n: key_type([found.get(n) for found in keys]) for n in names if n not in own}
        if k == "csv":
            self._check_csv_numbers(listed, options, own)
            types = {c: "DOUBLE" for c in self.numbers if c in own and not _TEMPORAL.match(own[c])}
            if self.category in own and self.category not in types:
                types[self.category] = "VARCHAR"  # a label is never junk, whatever the sniffer saw
            if types:
                options.append("types={" + ", ".join(f"{_text(c)}: {_text(t)}" for c, t in types.items()) + "}")
        if names and not clash:
            source = f"read_{k}({listed}, {', '.join(options + ['hive_partitioning=true'])})"
        elif extra:  # the other keys from the path, as DuckDB's hive partitioning would give them
            cols = ", ".join(f"CAST(regexp_extract(filename, {_text(_KEY.format(re.escape(n)))}, 1) AS {t})"
                             f" AS {quote(n)}" for n, t in extra.items())
            source = (f"(SELECT * EXCLUDE (filename), {cols} FROM "
                      f"read_{k}({listed}, {', '.join(options + ['hive_partitioning=false', 'filename=true'])}))")
        else:
            source = f"read_{k}({listed}, {', '.join(options + ['hive_partitioning=false'])})"
        have = {**own, **extra}
        missing = [c for c in self.columns if c not in have]
        if missing:
            cols = list(have)
            shown = ", ".join(map(str, cols[:20])) + (", ..." if len(cols) > 20 else "")
            raise DataError(f"{self._name(files[0])}: no column {missing[0]!r} (columns: {shown})")
        select = [self._number(c, have[c], files[0]) for c in self.numbers]
        if self.category:
            select.append(quote(self.category))
        sql = f"SELECT {', '.join(select)} FROM {source}"
        if self.where:
            self._check_where(source)
            sql += f" WHERE (\n{self.where}\n)"
        return sql

    def _describe(self, source) -> dict:
        try:
            return {name: typ for name, typ, *_ in self.con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
        except Exception as exc:  # noqa: BLE001
            raise self.error(exc) from None

    def _check_where(self, source) -> None:
        """``--where`` parsed and bound over the files' columns before any row is read."""
        try:
            self.con.execute(f"DESCRIBE SELECT 1 FROM {source} WHERE (\n{self.where}\n)").fetchall()
        except Exception as exc:  # noqa: BLE001
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise DataError(f"--where {self.where!r}: {first}") from None

    def _number(self, column, typ, path) -> str:
        """The SQL giving ``column`` (of SQL type ``typ``) as DOUBLE, or an error naming it."""
        q = quote(column)
        if _TEMPORAL.match(typ):
            return f"CAST(epoch({q}) AS DOUBLE) AS {q}"
        if _NUMERIC.match(typ) or typ == "VARCHAR" and kind(path)[0] == "csv":
            return f"CAST({q} AS DOUBLE) AS {q}"
        raise DataError(f"column {column!r} of {self._name(path)} holds {typ.lower()}, not numbers: "
                        "coordinates and values must be numbers")

    def _check_csv_numbers(self, listed, options, own) -> None:
        """A number column whose first cells are all text is an error naming it (not every row junk)."""
        cols = [c for c in self.numbers if own.get(c) == "VARCHAR"]
        if not cols:
            return
        probe = ", ".join(f"count(TRY_CAST({quote(c)} AS DOUBLE)), count({quote(c)}), any_value({quote(c)})"
                          for c in cols)
        options = [o for o in options if o != "store_rejects=true"] + ["all_varchar=true", "ignore_errors=true"]
        row = self.con.execute(f"SELECT {probe} FROM (SELECT * FROM read_csv({listed}, "
                               f"{', '.join(options)}) LIMIT {SAMPLE})").fetchall()[0]
        for k, c in enumerate(cols):
            good, cells, cell = row[3 * k:3 * k + 3]
            if cells and not good:
                raise DataError(f"column {c!r} holds text (e.g. {cell!r}), not numbers: "
                                "coordinates and values must be numbers")

    def _name(self, path) -> str:
        return self.junk.names.get(path, path)
