"""``hotbin heatmap``: render a PNG heatmap of two columns of CSV or Parquet data.

INPUT is a file, a directory (its CSV/TSV/Parquet files) or a glob pattern.
Files are read in chunks of ``--chunk-rows`` rows, so memory stays bounded
whatever the data's size: when a range is not given, one pass finds the finite
extent of the columns (with ``--clip``, two to four passes find the exact
percentiles instead), then a last pass counts each chunk and sums the partial
heatmaps: the same cells as a heatmap of all the data in memory, whose ranges
from the data are closed (``numpy.histogram2d``'s edges). The ranges used and
the number of points outside them go to stderr.
``--scheduler ADDRESS`` runs the same job on a Dask cluster instead (``local``
starts one on this machine). ``--demo`` renders a generated data set and needs
only numpy and numba.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from ..backend import NAMES as BACKENDS
from . import UserError
from .datafiles import PARQUET_EXT, Files, Junk, data_files, need, reader
from .files import check_output, write_all

#: Pillow formats without an alpha channel
NO_ALPHA = frozenset({"JPEG", "BMP", "PPM"})

#: rows per chunk when streaming a file (two float64 columns: 16 MiB)
CHUNK_ROWS = 1 << 20
#: points in the --demo data set
DEMO_POINTS = 4_000_000



def register(sub):
    from ..shade import CMAPS, HOWS

    p = sub.add_parser(
        "heatmap", help="render a PNG heatmap of two columns of a CSV or Parquet file",
        description="Render a PNG heatmap of the points (x, y) of a CSV or Parquet file, "
                    "streamed in chunks. Try: hotbin heatmap --demo -o heatmap.png")
    p.add_argument("input", nargs="?", metavar="INPUT",
                   help="a .csv (.tsv, .csv.gz) or .parquet file, a directory of them, or a glob pattern")
    p.add_argument("--x", metavar="COL", help="column of the x coordinates")
    p.add_argument("--y", metavar="COL", help="column of the y coordinates")
    p.add_argument("--weight", metavar="COL", help="column of weights to sum per cell (default: count)")
    p.add_argument("--width", type=int, default=1024, help="cells across (default 1024)")
    p.add_argument("--height", type=int, default=1024, help="cells down (default 1024)")
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
                   help="a cell that is not a number is an error naming its line (default: the row "
                        "is skipped and counted)")
    p.add_argument("--progress", action="store_true", help="show progress even when stderr is not a terminal")
    p.add_argument("--demo", action="store_true", help="render a generated data set (no INPUT needed)")
    p.add_argument("--seed", type=int, default=2026, help="seed of the --demo data (default 2026)")
    p.add_argument("-o", "--output", default="heatmap.png", metavar="OUT",
                   help="by suffix: .png (default heatmap.png), .npy (the counts), .jpg/.webp/.tif "
                        "(Pillow); checked before any work")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..ranges import check_cells, check_clip, interval
    from ..shade import blur, colormap

    t0 = time.perf_counter()
    # reject bad arguments before reading anything
    fmt = check_output(args.output, raw=True)
    colormap(args.cmap)
    check_cells(args.width, args.height, weighted=bool(args.weight))
    check_clip(args.clip)
    blur(np.zeros((1, 1)), args.smooth)  # checks --smooth
    if args.chunk_rows < 1:
        raise UserError(f"--chunk-rows must be positive, got {args.chunk_rows}")
    progress = _Progress(args.progress or sys.stderr.isatty())
    if args.demo:
        if args.input:
            raise UserError("give either INPUT or --demo, not both")
        hm, n, what = *_demo(args), "demo data"
        if args.background is None:
            args.background = "black"  # the demo is a night map
    else:
        if not args.input:
            raise UserError("give an INPUT file (CSV or Parquet), or --demo")
        if not (args.x and args.y):
            raise UserError("name the coordinate columns with --x COL --y COL")
        files = data_files(args.input)
        junk = Junk(args.strict)
        hm, n = _on_cluster(args, files, junk) if args.scheduler else _from_files(args, files, progress, junk)
        if junk.message():
            print(f"hotbin heatmap: {junk.message()}", file=sys.stderr)
        what = os.path.basename(files[0]) if len(files) == 1 else f"{len(files)} files"
    if args.background in ("none", "transparent"):
        args.background = None
    if fmt == "NPY":  # the counts (sums) themselves, row 0 at y_range[0]
        out = np.asarray(hm.counts)
    else:  # the picture north up; formats without alpha (JPEG) keep the colours of empty cells
        out = hm.shade(how=args.how, cmap=args.cmap, smooth=args.smooth, background=args.background)[::-1]
        out = out[..., :3] if fmt in NO_ALPHA else out
    write_all([(args.output, np.ascontiguousarray(out), fmt)])
    xr, yr = interval(hm.x_range, hm.x_closed, ".10g"), interval(hm.y_range, hm.y_closed, ".10g")
    print(f"ranges: x {xr}, y {yr}; {hm.dropped:,} of {n:,} points outside (dropped)", file=sys.stderr)
    print(f"wrote {args.output}: {hm.width}x{hm.height} cells, {n:,} points of {what}, "
          f"{hm.dropped:,} outside, {time.perf_counter() - t0:.1f} s")
    return 0


def _pair(text):
    import argparse

    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO,HI (two numbers), got {text!r}") from None
    return lo, hi


def _from_files(args, files, progress, junk):
    from ..heatmap import Heatmap, heatmap
    from ..ranges import data_range, percentile_ranges

    columns = [c for c in (args.x, args.y, args.weight) if c]
    chunks = Files([reader(f, columns, args.chunk_rows, junk) for f in files])
    ranges = [args.x_range, args.y_range]
    closed = tuple(r is None for r in ranges)  # ranges from the data are closed, as in memory
    auto = [k for k, r in enumerate(ranges) if r is None]
    if auto and args.clip:
        passes = [0]

        def run_pass(fn, merge):  # merged chunk by chunk: memory stays bounded
            passes[0] += 1
            acc = merge([])
            for cols, done in progress.over(chunks, f"finding the percentiles (pass {passes[0]})"):
                acc = merge([acc, fn(*(cols[k] for k in auto))])
            return acc

        found = percentile_ranges(run_pass, len(auto), args.clip)
    elif auto:
        lo, hi = np.full(2, np.inf), np.full(2, -np.inf)
        for cols, done in progress.over(chunks, "finding the extent"):
            for k in auto:
                f = cols[k][np.isfinite(cols[k])]
                if f.size:
                    lo[k], hi[k] = min(lo[k], f.min()), max(hi[k], f.max())
        found = [(lo[k], hi[k]) if lo[k] <= hi[k] else None for k in auto]
    for k, ext in zip(auto, found if auto else []):
        ranges[k] = (0.0, 1.0) if ext is None else data_range(*ext, "xy"[k])
    x_range, y_range = ranges
    total, n = None, 0
    for cols, done in progress.over(chunks, "counting"):
        part = heatmap(cols[0], cols[1], cols[2] if args.weight else None, width=args.width,
                       height=args.height, x_range=x_range, y_range=y_range, closed=closed,
                       backend=args.backend)
        total = part if total is None else total + part
        n += cols[0].size
    if total is None:  # a file without rows
        empty = np.zeros((args.height, args.width), np.int64)
        total = Heatmap(empty.astype(np.float64) if args.weight else empty, 0,
                        tuple(map(float, x_range)), tuple(map(float, y_range)), *closed,
                        points=empty if args.weight else None)
    return total, n


def _on_cluster(args, files, junk):
    """The same heatmap by Dask: partitions of the files, partial heatmaps on the workers."""
    dd = need("dask", "--scheduler", module="dask.dataframe")
    distributed = need("distributed", "--scheduler")
    from ..heatmap import heatmap

    columns = list(dict.fromkeys(c for c in (args.x, args.y, args.weight) if c))
    parquet = [f.lower().endswith(PARQUET_EXT) for f in files]
    if any(parquet) and not all(parquet):
        raise UserError("--scheduler: give either CSV or Parquet files, not both")
    try:
        if all(parquet):
            df = dd.read_parquet(files, columns=columns)
        else:
            sep = "\t" if files[0].lower().endswith((".tsv", ".tsv.gz", ".tab")) else ","
            df = dd.read_csv(files, sep=sep, usecols=columns, blocksize=max(args.chunk_rows, 1) * 32)
    except (ValueError, KeyError) as exc:  # a missing column, a malformed file
        raise UserError(f"{files[0]}: {str(exc).splitlines()[0]}") from None
    if args.scheduler == "local":
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        client = distributed.Client(cluster)
    else:
        cluster, client = None, distributed.Client(args.scheduler, timeout="20s")
    try:
        cols, bad = _numbers(dd, df, [c for c in (args.x, args.y, args.weight) if c])
        nbad = 0 if bad is None else int(bad.sum().compute())  # one more pass, only for text columns
        if nbad:
            junk.rows = nbad  # places unknown: partitions carry no line numbers
            if args.strict:
                raise UserError(f"{nbad:,} rows hold a cell that is not a number (without --strict "
                                "they are skipped and counted)")
            cols = [c[~bad] for c in cols]
        x, y = cols[0], cols[1]
        w = cols[2] if args.weight else None
        hm = heatmap(x, y, w, width=args.width, height=args.height, x_range=args.x_range,
                     y_range=args.y_range, clip=args.clip, backend=args.backend)
        return hm, int(np.asarray(hm.points).sum()) + hm.dropped
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _numbers(dd, df, names):
    """float64 columns of a dask dataframe and the rows holding a cell that is not a number
    (parsed per partition on the workers; empty cells stay NaN), or None when every column
    is numeric."""
    cols, bad = [], None
    for name in names:
        raw = df[name]
        if raw.dtype.kind in "biuf":
            cols.append(raw.astype("float64"))
            continue
        num = dd.to_numeric(raw, errors="coerce")
        junk = num.isna() & ~raw.isna()
        bad = junk if bad is None else bad | junk
        cols.append(num.astype("float64"))
    return cols, bad  # bad None: every column numeric, no pass to count junk


class _Progress:
    """A one-line progress bar on stderr (only when shown)."""

    def __init__(self, show):
        self.show = show

    def over(self, chunks, label):
        t0 = time.perf_counter()
        rows = 0
        for cols, done in chunks:
            rows += cols[0].size
            if self.show:
                frac = min(max(done or 0.0, 0.0), 1.0)
                bar = "#" * int(30 * frac)
                sys.stderr.write(f"\r{label} [{bar:<30s}] {frac:4.0%} {rows:,} rows "
                                 f"{time.perf_counter() - t0:.1f} s")
                sys.stderr.flush()
            yield cols, done
        if self.show:
            sys.stderr.write("\n")


# --- demo data -----------------------------------------------------------------------

def _demo(args):
    """A seeded, skewed point set: dense city centres over sparse countryside and roads."""
    from ..heatmap import heatmap

    x, y = demo_points(DEMO_POINTS, args.seed)
    hm = heatmap(x, y, width=args.width, height=args.height,
                 x_range=args.x_range or (None if args.clip else (0.0, 100.0)),
                 y_range=args.y_range or (None if args.clip else (0.0, 100.0)), clip=args.clip,
                 backend=args.backend)
    return hm, x.size


def demo_points(n=DEMO_POINTS, seed=2026):
    """``n`` float32 points in ``[0, 100)^2`` that pile up like people on a map.

    A coastline (the sea stays empty), cities of Pareto-distributed sizes with
    dense cores and heavy-tailed suburbs, villages, roads joining each city to
    its nearest neighbours, and a thin countryside that thickens near cities.
    """
    rng = np.random.default_rng(seed)

    def coast(x):  # land is below this wavy line (y < coast(x))
        return 78 - 0.22 * x + 6 * np.sin(x / 9.0) + 2.5 * np.sin(x / 3.1 + 1)

    ncity = 14
    cx = rng.uniform(8, 92, 4 * ncity)
    cy = rng.uniform(6, 90, 4 * ncity)
    keep = cy < coast(cx) - 4
    centres = np.stack([cx[keep], cy[keep]], axis=1)[:ncity]
    ncity = len(centres)
    size = np.sort(rng.pareto(1.1, ncity) + 1)[::-1]
    share = size / size.sum()
    n_rural, n_village, n_road = n // 16, n // 20, n // 10
    n_city = n - n_rural - n_village - n_road
    xs, ys = [], []
    for (x0, y0), k, s in zip(centres, rng.multinomial(n_city, share), size):
        r = 0.3 * s ** 0.45  # core radius grows with the city
        core = k * 2 // 5
        xs.append(x0 + rng.normal(0, r, core))
        ys.append(y0 + rng.normal(0, r * 0.8, core))
        sub = k - core  # suburbs: heavy-tailed, a little elongated
        ang = rng.uniform(0, 2 * np.pi, sub)
        dist = r * 1.2 * rng.standard_exponential(sub) ** 1.6
        xs.append(x0 + dist * np.cos(ang) * 1.25)
        ys.append(y0 + dist * np.sin(ang))
    # villages: many small clumps, more of them near cities
    nv = 400
    home = centres[rng.choice(ncity, nv, p=share ** 0.3 / (share ** 0.3).sum())]
    vpos = home + rng.normal(0, 14, (nv, 2))
    vsize = rng.pareto(1.5, nv) + 1
    vspread = rng.uniform(0.05, 0.12, nv) * np.sqrt(vsize)
    for (x0, y0), k, r in zip(vpos, rng.multinomial(n_village, vsize / vsize.sum()), vspread):
        xs.append(x0 + rng.normal(0, r, k))
        ys.append(y0 + rng.normal(0, r, k))
    # roads: each city to its two nearest neighbours, gently curved
    d = np.hypot(*(centres[:, None, :] - centres[None, :, :]).transpose(2, 0, 1))
    np.fill_diagonal(d, np.inf)
    roads = {tuple(sorted((i, int(j)))) for i in range(ncity) for j in np.argsort(d[i])[:2]}
    roads = sorted(roads)
    lengths = np.array([d[i, j] for i, j in roads])
    for (i, j), k in zip(roads, rng.multinomial(n_road, lengths / lengths.sum())):
        t = rng.uniform(0, 1, k)
        (ax, ay), (bx, by) = centres[i], centres[j]
        nx, ny = (ay - by) / d[i, j], (bx - ax) / d[i, j]
        bend = np.sin(np.pi * t) * rng.normal(0, 0.08) * d[i, j]
        xs.append(ax + t * (bx - ax) + bend * nx + rng.normal(0, 0.06, k))
        ys.append(ay + t * (by - ay) + bend * ny + rng.normal(0, 0.06, k))
    # countryside: half uniform, half around the cities
    xs.append(rng.uniform(0, 100, n_rural // 2))
    ys.append(rng.uniform(0, 100, n_rural // 2))
    near = centres[rng.choice(ncity, n_rural - n_rural // 2)]
    spread = rng.normal(0, 1, near.shape) * 10
    xs.append(near[:, 0] + spread[:, 0])
    ys.append(near[:, 1] + spread[:, 1])
    x = np.concatenate(xs)
    y = np.concatenate(ys)
    land = y < coast(x)
    x, y = x[land].astype(np.float32), y[land].astype(np.float32)
    order = rng.permutation(x.size)
    return x[order], y[order]
