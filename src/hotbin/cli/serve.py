"""``hotbin serve``: a live, zoomable heatmap of every point of a data file, in the browser.

The columns are read once into memory (CSV or Parquet, as ``hotbin heatmap`` reads them:
rows whose needed cell is not a number are skipped and counted), moved to the GPU when the
cuda backend is usable, and served by :mod:`hotbin.serve`: every view the page shows is
``hotbin.heatmap`` of all the points at that view's extent and size. The first view is the
data's extent, or ``--x-range``/``--y-range``/``--clip`` as ``hotbin heatmap`` takes them.
``--demo`` serves a generated data set and needs no file.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from ..backend import NAMES as BACKENDS
from . import UserError, columns
from .heatmap import _pair


def register(sub):
    from ..render.project import PROJECTIONS
    from ..render.shade import CMAPS, HOWS

    p = sub.add_parser(
        "serve", help="serve a live, zoomable heatmap of a CSV or Parquet file in the browser",
        description="Load the points once and serve a web page that pans and zooms over them; "
                    "every view re-aggregates all the points. Also answers /render.png, "
                    "/stats.json and, with --project mercator, /tiles/{z}/{x}/{y}.png. "
                    "Try: hotbin serve --demo")
    columns.add(p)
    p.add_argument("--project", choices=PROJECTIONS, default=None,
                   help="x, y are longitude, latitude: show them in Web Mercator and serve XYZ tiles")
    p.add_argument("--x-range", metavar="LO,HI", type=_pair,
                   help="half-open x extent of the first view (in degrees with --project; default: the data's)")
    p.add_argument("--y-range", metavar="LO,HI", type=_pair,
                   help="half-open y extent of the first view (in degrees with --project; default: the data's)")
    p.add_argument("--clip", metavar="LO,HI", type=_pair,
                   help="percentiles that bound the first view on each axis without a range, e.g. 0.1,99.9 "
                        "(default: the minimum and maximum, and a margin)")
    p.add_argument("--how", choices=HOWS, default="eq_hist", help="initial normalization (default eq_hist)")
    p.add_argument("--cmap", default="inferno", help=f"initial colormap: {', '.join(CMAPS)} (default inferno)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="default: cuda when usable (the data moves to the GPU once), else cpu")
    p.add_argument("--strict", action="store_true",
                   help="a cell that is not a number is an error naming its line (default: skipped)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="data larger than memory: keep the columns lazy on the Dask cluster at ADDRESS "
                        "(tcp://host:8786, or 'local'); every view is a Dask job")
    p.add_argument("--hist", metavar="COL[:BINS[:LO:HI]]", action="append", type=_hist, default=[],
                   help="a linked histogram of COL beside the map (repeatable): drag on it to brush a "
                        "range, and every other view shows the rows that pass (default 40 bins over the "
                        "column's extent)")
    p.add_argument("--demo", action="store_true", help="serve a generated data set (no INPUT needed)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.ranges import check_clip, given_range
    from ..serve import Dataset, Shading, create_app, require
    from ..serve import run as serve
    from ..serve.params import parse_shading

    require()  # before reading anything
    from ..serve.server import bind, is_loopback

    args.agg, args.value = columns.value_column(args.agg, args.weight)
    columns.check_q(args.agg, args.q)
    default = parse_shading({"how": args.how, "cmap": args.cmap}, Shading())
    if args.demo and (args.input or args.by or args.value or args.project or args.hist):
        raise UserError("--demo serves generated points: give no INPUT, values, --by, --project or "
                        "--hist")
    if not args.demo and not args.input:
        raise UserError("give an INPUT file (CSV or Parquet), or --demo")
    if not args.demo and not (args.x and args.y):
        raise UserError("name the coordinate columns with --x COL --y COL")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be 0 to 65535, got {args.port}")
    for name, r in (("--x-range", args.x_range), ("--y-range", args.y_range)):
        if r is not None:
            given_range(r, name)
    try:
        check_clip(args.clip)
    except ValueError as exc:
        raise UserError(f"--{exc}") from None
    try:  # the port first: a busy one fails before the data is read
        sock = bind(args.host, args.port)
    except OSError as exc:
        raise UserError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc} "
                        "(--port 0 picks a free port)") from None
    try:  # the socket is closed when the data cannot be read or served
        data, what, t0 = _dataset(args, Dataset)
        app = create_app(data, default)
    except BaseException:
        sock.close()
        raise
    loopback = is_loopback(args.host)  # then the server answers only this machine's names
    print(f"hotbin serve: {data.n:,} points of {what} ready in {time.perf_counter() - t0:.1f} s "
          f"(aggregated on {data.backend or 'cpu'})", file=sys.stderr)
    if not loopback:
        print(f"hotbin serve: warning: listening on {args.host}: anyone who can reach this machine "
              "can see the data", file=sys.stderr)
    try:
        serve(app, sock=sock, open_browser=not args.no_browser,
              on_ready=lambda url: print(f"hotbin serve: {url} (Ctrl-C stops)", file=sys.stderr))
    except KeyboardInterrupt:  # uvicorn stops gracefully, then re-raises the Ctrl-C
        pass
    return 0


def _dataset(args, Dataset):
    """``(Dataset, what it holds, when loading began)`` of the command line's data."""
    t0 = time.perf_counter()
    if args.demo:
        from .demo import demo_points

        x, y = demo_points()
        cols, labels, what = {"x": x, "y": y}, None, "demo data"
    elif args.scheduler:
        from .cluster import lazy_columns

        cols, labels, what = lazy_columns(args)
    else:
        cols, labels, what = load(args)
    data = Dataset(cols["x"], cols["y"], cols.get("weight"), cols.get("by"), labels=labels,
                   agg=args.agg, q=args.q, project=args.project, backend=args.backend,
                   names=(args.x or "x", args.y or "y"), x_range=args.x_range, y_range=args.y_range,
                   clip=args.clip, hist=cols.get("hist"), table=cols.get("table"),
                   panels={c: spec for c, *spec in args.hist}, weight_name=args.value or "weight",
                   by_name=args.by or "category")
    return data, what, t0

def load(args):
    """``(columns, category labels, description)``: the needed columns of INPUT, in memory.

    Read by :class:`hotbin.io.Source` in batches, as ``hotbin heatmap`` reads them (rows that
    cannot be read skipped and counted), then joined; the ``--by`` column becomes
    integer codes over its labels (integers as their own codes, else text sorted; -1: none).
    """
    from ..io import Data, Source
    from .heatmap import CHUNK_ROWS

    numbers = [c for c in (args.x, args.y, args.value) if c]
    hist = [c for c, *_ in args.hist]
    numbers += [c for c in dict.fromkeys(hist) if c not in numbers]
    with Source(args.input, numbers, args.by, None, args.strict) as src:
        for note in src.notes:
            print(f"hotbin serve: {note}", file=sys.stderr)
        data = Data(src, CHUNK_ROWS)
        parts = [cols for cols, _ in data]
        what, junk = data.label, src.junk
        rows = sum(len(p[0]) for p in parts)
        table = _table(src, rows) if hist else None
    if junk.message():
        print(f"hotbin serve: {junk.message()}", file=sys.stderr)
    arrays = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0)
              for i in range(len(numbers))]
    cols = dict(zip(["x", "y", "weight"][:3 if args.value else 2], arrays))
    if hist:
        cols["hist"] = {c: arrays[numbers.index(c)] for c in dict.fromkeys(hist)}
        cols["table"] = table
    labels = None
    if args.by:
        cols["by"], labels = _categories([p[-1] for p in parts])
    return cols, labels, what


def _categories(chunks):
    """``(codes int32, labels)`` of a category column given in pyarrow chunks."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..io.frames import MAX_CATEGORIES

    arrays = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in chunks]
    col = pa.chunked_array(arrays) if arrays else pa.chunked_array([], pa.string())
    if pa.types.is_floating(col.type):
        raise UserError("--by: the column holds fractional numbers; categories are text or integers")
    if pa.types.is_integer(col.type) or pa.types.is_boolean(col.type):
        codes = pc.cast(col, pa.int64()).to_numpy(zero_copy_only=False)
        codes = np.where(np.isnan(codes), -1, codes) if codes.dtype.kind == "f" else codes
        labels = list(range(max(int(codes.max(initial=-1)) + 1, 1)))
    else:
        text = pc.cast(col, pa.string())
        labels = sorted(v for v in pc.unique(text).to_pylist() if v is not None)
        idx = pc.index_in(text, value_set=pa.array(labels, pa.string()))
        codes = pc.fill_null(idx, -1).to_numpy(zero_copy_only=False)
    if len(labels) > MAX_CATEGORIES:
        raise UserError(f"--by: {len(labels):,} categories; at most {MAX_CATEGORIES}")
    return np.asarray(codes, np.int32), labels


def _hist(text):
    """``--hist COL[:BINS[:LO:HI]]`` as ``(column, bins or None, lo or None, hi or None)``."""
    import argparse

    col, *rest = text.split(":")
    if len(rest) not in (0, 1, 3):
        raise argparse.ArgumentTypeError(f"expected COL, COL:BINS or COL:BINS:LO:HI, got {text!r}")
    try:
        bins = int(rest[0]) if rest else None
        lo, hi = (float(v) for v in rest[1:]) if len(rest) == 3 else (None, None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected COL, COL:BINS or COL:BINS:LO:HI, got {text!r}") from None
    if not col or (bins is not None and not 1 <= bins <= 10_000) or \
            (lo is not None and not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi)):
        raise argparse.ArgumentTypeError(f"expected COL, COL:BINS (1 to 10000) or COL:BINS:LO:HI "
                                         f"(LO <= HI), got {text!r}")
    return col, bins, lo, hi


def _table(src, rows):
    """Every column of the files, for the drill-down, as a pyarrow table; None when its rows
    are not the rows read (junk skipped, standard input, files DuckDB reads only
    decompressed), and the page then shows the columns the server holds."""
    from ..io.files import kind

    kinds = {kind(f) for f in src.files}
    if src.stdin or len(kinds) != 1 or next(iter(kinds))[1] not in (None, "gzip", "zstd"):
        table = None
    else:
        listed = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in src.files) + "]"
        k, codec = next(iter(kinds))
        if k == "parquet":
            sql = f"SELECT * FROM read_parquet({listed}, union_by_name=true)"
        else:
            types = ", ".join("'" + c.replace("'", "''") + "': 'DOUBLE'" for c in src.numbers)
            sql = (f"SELECT * FROM read_csv({listed}, header=true, quote='\"', escape='\"', "
                   f"union_by_name=true, ignore_errors=true, types={{{types}}})")
        try:
            rel = src.con.sql(sql)
            table = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
        except Exception:  # noqa: BLE001 - the drill-down shows the held columns instead
            table = None
    if table is not None and table.num_rows != rows:
        table = None
    if table is None:
        print("hotbin serve: the drill-down shows the columns held (the input's rows could not "
              "be read again one for one)", file=sys.stderr)
    return table
