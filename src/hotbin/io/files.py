"""What INPUT names: files (a file, a directory tree, a glob) or standard input, and their hive keys.

A directory is walked recursively for CSV/TSV and Parquet files (names starting
with ``.`` or ``_``, such as ``_SUCCESS``, are skipped); a glob is expanded with
``**`` matching any depth. Directories named ``key=value`` between the base
(the directory, or a glob's fixed prefix) and a file are hive partitions.
``-`` is CSV (or Parquet) on standard input, spooled to a temporary file so that it
can be read once per pass. Each file's kind (Parquet, or CSV and its compression)
comes from its first bytes, so a spooled or misnamed file reads the same.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import sys
import tempfile
from urllib.parse import unquote

__all__ = ["DataError", "data_files", "hive_keys", "stdin_file", "kind", "PARQUET_EXT", "STDIN"]

PARQUET_EXT = (".parquet", ".pq", ".parq")
CSV_EXT = (".csv", ".tsv", ".tab", ".txt")
COMPRESSED = (".gz", ".bz2", ".zst", ".zstd", ".xz", ".lz4")
DATA_EXT = PARQUET_EXT + tuple(c + z for c in CSV_EXT[:3] for z in ("",) + COMPRESSED)
STDIN = "-"
_INT = re.compile(r"^-?\d+$")
#: first bytes of compressed streams: DuckDB reads gzip and zstd itself, the others are
#: decompressed to a temporary file first
_MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"BZh": "bz2", b"\xfd7zXZ\x00": "xz",
          b"\x04\x22\x4d\x18": "lz4"}


class DataError(ValueError):
    """Data that cannot be read as asked: one line naming the file, line or column."""


def data_files(spec) -> tuple[list[str], str | None]:
    """``(files, base)``: the data files INPUT names (sorted) and the directory their hive
    partitions are relative to (None for one named file)."""
    if os.path.isdir(spec):
        found = []
        for root, dirs, files in os.walk(spec):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            found += [os.path.join(root, f) for f in files
                      if f.lower().endswith(DATA_EXT) and not f.startswith((".", "_"))]
        if not found:
            raise DataError(f"{spec}: a directory without CSV or Parquet files")
        return sorted(found), spec
    if glob.has_magic(spec):
        found = sorted(f for f in glob.glob(spec, recursive=True) if os.path.isfile(f))
        if not found:
            raise DataError(f"{spec}: no file matches")
        fixed = []
        for part in spec.replace(os.sep, "/").split("/")[:-1]:
            if glob.has_magic(part):
                break
            fixed.append(part)
        return found, "/".join(fixed) or "."
    if not os.path.exists(spec):
        raise DataError(f"{spec}: no such file")
    return [spec], None


def hive_keys(files, base) -> list[dict]:
    """Each file's ``{key: text value}`` from the ``key=value`` directories below ``base``."""
    keys = []
    for f in files:
        found = {}
        if base is not None:
            rel = os.path.relpath(os.path.dirname(f), base)
            for part in rel.replace(os.sep, "/").split("/"):
                k, eq, v = part.partition("=")
                if eq and k:
                    found[unquote(k)] = None if v == "__HIVE_DEFAULT_PARTITION__" else unquote(v)
        keys.append(found)
    return keys


def key_type(values) -> str:
    """The SQL type of a hive key: BIGINT when every value is an integer, else VARCHAR."""
    return "BIGINT" if all(v is None or _INT.match(v) for v in values) else "VARCHAR"


def kind(path) -> tuple[str, str | None]:
    """``("parquet" | "csv", compression or None)`` of a file, from its first bytes."""
    with open(path, "rb") as f:  # also raises for an unreadable file
        head = f.read(6)
    if head[:4] == b"PAR1" or (path.lower().endswith(PARQUET_EXT) and not head):
        return "parquet", None
    return "csv", next((c for magic, c in _MAGIC.items() if head.startswith(magic)), None)


def decompressed(path, codec) -> str:
    """A temporary file holding ``path`` decompressed (bz2, xz, lz4: codecs DuckDB does not read)."""
    fd, out = tempfile.mkstemp(prefix="hotbin-text-")
    with os.fdopen(fd, "wb") as dst:
        if codec == "lz4":
            import pyarrow as pa

            with pa.input_stream(path, compression="lz4") as src:
                while chunk := src.read(1 << 22):
                    dst.write(chunk)
        else:
            import bz2
            import lzma

            with (bz2.open if codec == "bz2" else lzma.open)(path, "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 22)
    return out


def stdin_file() -> str:
    """Standard input spooled to a temporary file (read once per pass, sniffed for Parquet and
    compression like a file); the caller removes it."""
    stream = sys.stdin.buffer
    if stream.isatty():
        raise DataError("INPUT '-' reads standard input, but it is a terminal: pipe CSV into it")
    fd, path = tempfile.mkstemp(prefix="hotbin-stdin-")
    with os.fdopen(fd, "wb") as f:
        shutil.copyfileobj(stream, f, 1 << 20)
    return path
