"""The arguments that name the data: INPUT, the coordinate columns and what a cell holds.

``hotbin heatmap`` and ``hotbin serve`` read the same data the same way; both take these
arguments from :func:`add` and check them with :func:`value_column`.
"""
from __future__ import annotations

import argparse

from . import UserError

__all__ = ["add", "value_column"]


def add(p: argparse.ArgumentParser) -> None:
    """INPUT, --x, --y, --weight, --agg AGG[:COL], --q and --by on the parser ``p``."""
    from ..aggregate import AGGS

    p.add_argument("input", nargs="?", metavar="INPUT",
                   help="a .csv (.tsv, .csv.gz, .csv.zst) or .parquet file, a directory of them (hive "
                        "partitions key=value become columns), a glob ('data/**/*.csv'), or - for CSV "
                        "on standard input")
    p.add_argument("--x", metavar="COL", help="column of the x coordinates (longitude with --project)")
    p.add_argument("--y", metavar="COL", help="column of the y coordinates (latitude with --project)")
    p.add_argument("--weight", metavar="COL", help="column of weights to sum per cell (default: count)")
    p.add_argument("--agg", metavar="AGG[:COL]", type=_agg, default=("count", None),
                   help=f"what a cell holds: {', '.join(AGGS)}, of the values in COL, e.g. mean:fare "
                        "(default count)")
    p.add_argument("--q", type=float, default=None, metavar="Q",
                   help="the quantile of --agg quantile:COL, in [0, 1] (e.g. 0.9); median:COL is q=0.5")
    p.add_argument("--by", metavar="COL", help="a category column (text or integers): one grid per category")


def _agg(text):
    """``--agg NAME[:COL]`` as ``(name, column or None)``."""
    from ..aggregate import AGGS

    name, _, col = text.partition(":")
    if name not in AGGS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(AGGS)}, optionally :COL, got {text!r}")
    return name, col or None


def value_column(agg, weight):
    """``(agg, value column)`` from ``--agg`` and ``--weight`` (the same column when both name one)."""
    name, col = agg
    if weight and col and weight != col:
        raise UserError(f"--weight {weight} and --agg {name}:{col} name different value columns")
    col = col or weight
    if name == "any" and col:
        raise UserError("--agg any counts points; it takes no value column")
    if name not in ("count", "any") and not col:
        raise UserError(f"--agg {name} needs a value column: --agg {name}:COL")
    return name, col


def check_q(agg, q):
    """--q with --agg quantile only (``agg`` its name), and needed there: a number in [0, 1]."""
    from ..order_stats import check_q as check

    if agg == "quantile" and q is None:
        raise UserError("--agg quantile needs --q, the quantile in [0, 1], e.g. --q 0.9")
    try:
        check(agg, q)
    except ValueError as exc:
        raise UserError(f"--q: {exc}".replace("q: ", "", 1)) from None
