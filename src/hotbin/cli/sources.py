"""What INPUT names: files (a file, a directory tree, a glob) or standard input, and their hive keys.

A directory is walked recursively for CSV/TSV and Parquet files (names starting
with ``.`` or ``_``, such as ``_SUCCESS``, are skipped); a glob is expanded with
``**`` matching any depth. Directories named ``key=value`` between the base
(the directory, or a glob's fixed prefix) and a file are hive partitions: the
file's rows get a column ``key`` holding ``value`` (an integer when every file's
value of that key is one, else text), usable by ``--where`` and ``--by``.
``-`` is CSV (or Parquet) on standard input, spooled to a temporary file so that it
can be read once per pass.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import sys
import tempfile
from urllib.parse import unquote

from . import UserError

__all__ = ["data_files", "hive_keys", "stdin_file", "PARQUET_EXT", "STDIN"]

PARQUET_EXT = (".parquet", ".pq", ".parq")
CSV_EXT = (".csv", ".tsv", ".tab", ".txt")
#: compressed CSV: what the reader decompresses (:func:`hotbin.cli.datafiles.open_text`)
COMPRESSED = (".gz", ".bz2", ".zst", ".zstd", ".xz", ".lz4")
DATA_EXT = PARQUET_EXT + tuple(c + z for c in CSV_EXT[:3] for z in ("",) + COMPRESSED)
STDIN = "-"
_INT = re.compile(r"^-?\d+$")


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
            raise UserError(f"{spec}: a directory without CSV or Parquet files")
        return sorted(found), spec
    if glob.has_magic(spec):
        found = sorted(f for f in glob.glob(spec, recursive=True) if os.path.isfile(f))
        if not found:
            raise UserError(f"{spec}: no file matches")
        fixed = []
        for part in spec.replace(os.sep, "/").split("/")[:-1]:
            if glob.has_magic(part):
                break
            fixed.append(part)
        return found, "/".join(fixed) or "."
    if not os.path.exists(spec):
        raise UserError(f"{spec}: no such file")
    return [spec], None


def hive_keys(files, base) -> tuple[list[dict], dict]:
    """Each file's ``{key: value}`` from the ``key=value`` directories below ``base``, and the
    type of each key (``int`` when every value is an integer, else ``str``)."""
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
    names = list(dict.fromkeys(k for found in keys for k in found))
    types = {k: int if all(found.get(k) is None or _INT.match(found[k]) for found in keys) else str
             for k in names}
    typed = [{k: (None if v is None else types[k](v)) for k, v in found.items()} for found in keys]
    return typed, types


def stdin_file():
    """Standard input spooled to a temporary file (read once per pass, sniffed for Parquet and
    compression like a file) and the function that removes it."""
    stream = sys.stdin.buffer
    if stream.isatty():
        raise UserError("INPUT '-' reads standard input, but it is a terminal: pipe CSV into it")
    fd, path = tempfile.mkstemp(prefix="hotbin-stdin-")
    with os.fdopen(fd, "wb") as f:
        shutil.copyfileobj(stream, f, 1 << 20)
    return path, lambda: os.path.exists(path) and os.remove(path)
