"""Rows that cannot be read: counted, named by their line, or (``strict``) an error.

DuckDB's CSV reader stores every row it cannot read (a cell that is not a number
in a column read as one, too few or too many columns) in its ``reject_errors`` /
``reject_scans`` tables instead of stopping. DuckDB's own ``line`` counts records,
so a quoted field holding a newline shifts it; the line named here is the line in
the file, counted from the row's byte position (``line_byte_position``).
"""
from __future__ import annotations

import os
import re

from .files import DataError

__all__ = ["Junk"]

_CAST = re.compile(r'Could not convert string "(.*)" to', re.DOTALL)
_COUNT = re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)")
_FOUND = """
    SELECT DISTINCT ON (s.file_path, e.line_byte_position) s.file_path, e.line_byte_position, e.line,
           e.error_type, e.column_name, e.error_message
    FROM reject_errors e JOIN reject_scans s ON e.scan_id = s.scan_id AND e.file_id = s.file_id
    ORDER BY s.file_path, e.line_byte_position, e.error_type = 'CAST', e.column_idx
"""


class Junk:
    """Rows skipped because they cannot be read: how many, and the first few places.

    Every pass over a file rejects the same rows, so the rejects are taken from the first
    complete pass. ``names`` maps a path DuckDB read to the name to show (standard input's
    spool file is ``<stdin>``), ``codecs`` a path to its compression.
    """

    SHOW = 5  #: places named in the message

    def __init__(self, strict: bool = False):
        self.strict, self.rows, self.first, self.kinds = strict, 0, [], set()
        self.names, self.codecs, self.done = {}, {}, False

    def collect(self, con) -> None:
        """Take the rejects of the pass just made on ``con`` (once); ``strict``: raise for the first."""
        if self.done:
            return
        self.done = True
        try:
            con.execute("SELECT 1 FROM reject_errors LIMIT 0").fetchall()
        except Exception:  # noqa: BLE001 - no CSV was read: DuckDB made no reject tables
            return
        found = f"FROM ({_FOUND})"
        self.rows = con.execute(f"SELECT count(*) {found}").fetchall()[0][0]
        if not self.rows:
            return
        self.kinds = {k for (k,) in con.execute(f"SELECT DISTINCT error_type {found}").fetchall()}
        rows = con.execute(f"SELECT * {found} LIMIT {1 if self.strict else self.SHOW}").fetchall()
        for path, pos, line, kind, column, message in rows:
            self.first.append((self.names.get(path, os.path.basename(path)), self._line(path, pos, line),
                               kind, column, message))
        if self.strict:
            name, line, kind, column, message = self.first[0]
            raise DataError(f"{name}: line {line}: {_why(kind, column, message)} (without --strict "
                            "such rows are skipped and counted)")

    def _line(self, path, pos, line):
        """The line number in the file of the row starting at byte ``pos``."""
        try:
            import pyarrow as pa

            count, left = 1, int(pos)
            with pa.input_stream(path, compression=self.codecs.get(path)) as f:
                while left > 0:
                    block = f.read(min(left, 1 << 24))
                    if not block:
                        break
                    count += block.count(b"\n")
                    left -= len(block)
            return count
        except Exception:  # noqa: BLE001 - unreadable now: DuckDB's count of records
            return line

    def message(self) -> str | None:
        """One line saying how many rows were skipped and where the first were, or None."""
        if not self.rows:
            return None
        groups: dict = {}
        for name, line, *_ in self.first:
            groups.setdefault(name, []).append(str(line))
        places = "; ".join(f"{name} line{'s' * (len(ls) > 1)} {', '.join(ls)}" for name, ls in groups.items())
        more = ", ..." if self.rows > len(self.first) else ""
        if self.kinds == {"CAST"}:
            why = "with a cell that is not a number"
        elif "CAST" not in self.kinds:
            why = "with too few or too many columns"
        else:
            why = "that cannot be read (a cell that is not a number, or too few or too many columns)"
        return f"skipped {self.rows:,} row{'s' * (self.rows != 1)} {why} ({places}{more}); " \
               "--strict makes this an error"


def _why(kind, column, message):
    """What is wrong with a rejected row, in words."""
    if kind == "CAST":
        cell = _CAST.search(message or "")
        return f"column {column!r} holds {cell.group(1) if cell else '?'!r}, not a number"
    count = _COUNT.search(message or "")
    if count:
        return f"expected {count.group(1)} columns, found {count.group(2)}"
    return (message or kind).splitlines()[0]
