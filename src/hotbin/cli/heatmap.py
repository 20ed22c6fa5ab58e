"""``hotbin heatmap``: a heatmap of two columns of CSV or Parquet data, as a picture or as data.

INPUT is a file, a directory (its CSV/TSV/Parquet files, hive partitions
``key=value`` becoming columns), a glob pattern (``**`` for any depth) or ``-``
(CSV on standard input). Files are read in chunks of ``--chunk-rows`` rows, so
memory stays bounded whatever the data's size (:mod:`hotbin.cli.stream`): the
ranges come from the arguments, Parquet statistics, one pass for the extent (two
to four for ``--clip``'s exact percentiles), then the counting pass (two for var
and std) runs the heatmap's operation on each chunk through the stream executor
(:mod:`hotbin.exec.stream`), merging the chunks' partials: the same cells as a
heatmap of all the data in memory, whose ranges from the data are closed
(``numpy.histogram2d``'s edges). ``--where`` filters rows, ``--agg`` and ``--by``
choose what a cell holds, ``--project mercator`` bins longitude/latitude in Web
Mercator. The ranges used and the number of points outside them go to stderr;
``--json`` prints a summary on stdout. ``--scheduler ADDRESS`` runs the same job on a Dask cluster
instead (``local`` starts one on this machine). ``--demo`` renders a generated
data set and needs only numpy and numba.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from ..backend import NAMES as BACKENDS
from . import UserError, columns
from .image_files import check_output

#: rows per chunk when streaming a file (two float64 columns: 16 MiB)
CHUNK_ROWS = 1 << 20
#: cells across and down when neither --width nor --height is given
SIDE = 1024
#: a range from the data is stretched when MOST of the points lie in under FEW of its columns (rows)
MOST, FEW = 0.99, 0.02


def register(sub):
    from ..render.project import PROJECTIONS
    from ..render.shade import CMAPS, HOWS

    p = sub.add_parser(
        "heatmap", help="a heatmap of two columns of CSV or Parquet data as a picture or as data",
        description="Aggregate the points (x, y) of CSV or Parquet data on a grid of cells, streamed "
                    "in chunks, and write the picture or the data. Try: hotbin heatmap --demo -o heatmap.png")
    columns.add(p)
    p.add_argument("--where", metavar="EXPR",
                   help="keep the rows where the SQL expression EXPR holds (DuckDB: comparisons, and/or/not, "
                        "IN, BETWEEN, LIKE, IS NULL, timestamps), e.g. \"fare > 0 and vendor <> 'CMT'\" or "
                        "\"pickup >= '2026-02-01'\"; rows where it is NULL are left out")
    p.add_argument("--project", choices=PROJECTIONS,
                   help="x, y are longitude and latitude in degrees, binned in Web Mercator metres "
                        "(EPSG:3857); --x-range/--y-range stay in degrees")
    p.add_argument("--width", type=int, default=None, help=f"cells across (default {SIDE})")
    p.add_argument("--height", type=int, default=None,
                   help=f"cells down (default: from the extent's aspect when --width, or both ranges, are "
                        f"given, else {SIDE})")
    p.add_argument("--x-range", metavar="LO,HI", type=_pair, help="half-open x extent (default: the data's)")
    p.add_argument("--y-range", metavar="LO,HI", type=_pair, help="half-open y extent (default: the data's)")
    p.add_argument("--clip", metavar="LO,HI", type=_pair,
                   help="percentiles that bound each axis without a range, e.g. 0.1,99.9 "
                        "(default: the minimum and maximum); points outside are dropped")
    p.add_argument("--how", choices=HOWS, default="eq_hist", help="normalization (default eq_hist)")
    p.add_argument("--cmap", default="inferno",
                   help=f"colormap: {', '.join(CMAPS)}, or a matplotlib/colorcet name when installed "
                        "(default inferno)")
    p.add_argument("--smooth", type=float, default=0.0, help="Gaussian blur, standard deviation in cells")
    p.add_argument("--background", default=None, help="colour of empty cells: black, white, #rrggbb or none "
                        "(default: transparent; black for --demo)")
    p.add_argument("--backend", choices=BACKENDS, default=None)
    p.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS, help=f"rows per chunk (default {CHUNK_ROWS})")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on the Dask cluster at ADDRESS (tcp://host:8786), or 'local' for a local one")
    p.add_argument("--strict", action="store_true",
                   help="a row that cannot be read (a cell that is not a number, too few or too many "
                        "columns) is an error naming its line (default: the row is skipped and counted)")
    p.add_argument("--json", action="store_true",
                   help="print a summary as JSON on stdout (n, dropped, ranges, max, output, ...)")
    p.add_argument("--progress", action="store_true", help="show progress even when stderr is not a terminal")
    p.add_argument("--demo", action="store_true", help="render a generated data set (no INPUT needed)")
    p.add_argument("--seed", type=int, default=2026, help="seed of the --demo data (default 2026)")
    p.add_argument("-o", "--output", default="heatmap.png", metavar="OUT",
                   help="by suffix: .png (default heatmap.png; the ranges in a text chunk), "
                        ".jpg/.webp (Pillow): the picture; .npy (the counts, or the values of --agg/--by), "
                        ".nc (xarray), .tif (GeoTIFF, with rasterio): the data; checked before any work")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.ranges import check_cells, check_clip
    from ..render.shade import blur, colormap
    from .summary import report, write_heatmap

    t0 = time.perf_counter()
    # reject bad arguments before reading anything
    fmt = check_output(args.output, raw=True)
    colormap(args.cmap)
    args.agg = columns.value_column(args.agg, args.weight)
    columns.check_q(args.agg[0], args.q)
    if args.width is None and args.height is None:
        args.width, args.height = _grid(args)
    args.width = SIDE if args.width is None else args.width  # --height alone: 1024 across
    check_cells(args.width, args.height or 1, weighted=args.agg[1] is not None)
    check_clip(args.clip)
    blur(np.zeros((1, 1)), args.smooth)  # checks --smooth
    if args.chunk_rows < 1:
        raise UserError(f"--chunk-rows must be positive, got {args.chunk_rows}")
    where = args.where.strip() if args.where else None
    if args.where is not None and not where:
        raise UserError("--where: give a SQL expression, e.g. \"fare > 0\"")
    junk = None
    if args.demo:
        if args.input:
            raise UserError("give either INPUT or --demo, not both")
        if args.by or where or args.agg != ("count", None):
            raise UserError("--demo has no columns for --agg, --by or --where")
        from .demo import demo

        (hm, n), what, source = demo(args), "demo data", "given"
        if args.background is None:
            args.background = "black"  # the demo is a night map
    else:
        hm, n, what, source, junk = _from_input(args, where)
    write_heatmap(args, hm, fmt)
    report(args, hm, n, what, source, junk, fmt, time.perf_counter() - t0)
    return 0


def _from_input(args, where):
    """``(Heatmap, points, what, where the ranges came from, Junk)`` of INPUT."""
    from ..io import STDIN, Data, Source, data_files
    from .stream import Progress, from_data

    if not args.input:
        raise UserError("give an INPUT file (CSV or Parquet), or --demo")
    if not (args.x and args.y):
        raise UserError("name the coordinate columns with --x COL --y COL")
    numbers = [c for c in (args.x, args.y, args.agg[1]) if c]
    if args.scheduler:
        from .cluster import on_cluster

        if args.input == STDIN:
            raise UserError("--scheduler: the workers read files; standard input is not one")
        files, base = data_files(args.input)
        hm, n, junk, notes = on_cluster(args, files, base, numbers, where)
        what, source = (os.path.basename(files[0]) if len(files) == 1 else f"{len(files)} files"), "dask"
    else:
        with Source(args.input, numbers, args.by, where, args.strict) as src:
            notes = src.notes
            for note in notes:
                print(f"hotbin heatmap: {note}", file=sys.stderr)
            data, said = Data(src, args.chunk_rows), []
            hm, n, source = from_data(args, data, Progress(args.progress or sys.stderr.isatty()), said)
            what, junk = data.label, src.junk
            for line in said:
                print(f"hotbin heatmap: {line}", file=sys.stderr)
    if args.scheduler:
        for note in notes:
            print(f"hotbin heatmap: {note}", file=sys.stderr)
    if junk.message():
        print(f"hotbin heatmap: {junk.message()}", file=sys.stderr)
    if source in ("data", "dask"):
        _warn_concentrated(hm, [k for k, r in enumerate((args.x_range, args.y_range)) if r is None])
    return hm, n, what, source, junk


def _grid(args):
    """``(width, height)`` without --width/--height: the ranges' aspect when both are given (in Web
    Mercator metres with --project), the longer side :data:`SIDE`; else :data:`SIDE` square."""
    if args.x_range is None or args.y_range is None:
        return SIDE, SIDE
    (x0, x1), (y0, y1) = args.x_range, args.y_range
    if args.project:
        from ..render.project import mercator

        (x0, x1), (y0, y1) = mercator(np.array([x0, x1]), np.array([y0, y1]))
    w, h = abs(float(x1) - float(x0)), abs(float(y1) - float(y0))
    if not (np.isfinite(w) and np.isfinite(h)) or w <= 0 or h <= 0:
        return SIDE, SIDE  # check_cells and the ranges' own checks name the problem
    if w >= h:
        return SIDE, max(1, int(round(SIDE * h / w)))
    return max(1, int(round(SIDE * w / h))), SIDE


def _warn_concentrated(hm, axes):
    """A warning on stderr for each axis in ``axes`` (0: x, 1: y) whose range from the data an
    outlier stretched: the fewest adjacent columns (rows) that hold :data:`MOST` of the points
    span under :data:`FEW` of them, so the picture is a blank with the data in a sliver."""
    from ..core.arrays import to_host

    points = np.asarray(to_host(hm.points), np.int64)
    cells = points.reshape(-1, hm.height, hm.width).sum(axis=0)
    total = int(cells.sum())
    if total < 100:
        return
    for k in axes:
        line = cells.sum(axis=k)  # points per column (x) or row (y): cells are [row, column]
        if line.size < 20:
            continue
        cum = np.cumsum(line)
        starts = np.concatenate(([0], cum))  # points before each column (row)
        need = starts + MOST * total
        ok = need <= total  # starts from which a run can still hold MOST of the points
        span = int(np.min(np.searchsorted(cum, need[ok]) + 1 - np.flatnonzero(ok)))
        if span < FEW * line.size:
            name = (hm.x_name, hm.y_name)[k] or "xy"[k]
            flag = ("--x-range", "--y-range")[k]
            print(f"hotbin heatmap: warning: {MOST:.0%} of the points lie in {span:,} of the {line.size:,} "
                  f"{('columns', 'rows')[k]} ({name}'s range from the data is stretched by outliers); try "
                  f"--clip 0.1,99.9 or {flag}", file=sys.stderr)


def _pair(text):
    import argparse

    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO,HI (two numbers), got {text!r}") from None
    return lo, hi
