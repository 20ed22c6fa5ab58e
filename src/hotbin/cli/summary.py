"""What ``hotbin heatmap`` writes and says: the output file, the ranges line, the summary.

The output is the picture (north up; PNGs carry the ranges in ``tEXt`` chunks,
:func:`png_text`), the numbers as ``.npy`` (the counts, or the values of
``--agg``/``--by``, row 0 at ``y_range[0]``), or the :class:`hotbin.Heatmap`
itself as NetCDF or GeoTIFF (:mod:`hotbin.cli.geo`). stderr gets the ranges and
what fell outside; stdout one line, or with ``--json`` the summary of
:func:`summary` as one JSON object.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from .image_files import write_all

__all__ = ["write_heatmap", "report", "summary", "png_text"]

#: Pillow formats without an alpha channel
NO_ALPHA = frozenset({"JPEG", "BMP", "PPM"})


def write_heatmap(args, hm, fmt) -> None:
    """Write ``hm`` to ``args.output`` in the format ``fmt`` (all or nothing)."""
    text = None
    if fmt in ("NETCDF", "GEOTIFF"):
        out = hm
    elif fmt == "NPY":
        out = np.ascontiguousarray(np.asarray(_numbers(hm)))
    else:  # the picture north up; formats without alpha (JPEG) keep the colours of empty cells
        background = None if args.background in ("none", "transparent") else args.background
        pic = hm.shade(how=args.how, cmap=args.cmap, smooth=args.smooth, background=background)[::-1]
        out = np.ascontiguousarray(pic[..., :3] if fmt in NO_ALPHA else pic)
        text = png_text(hm) if fmt == "PNG" else None
    write_all([(args.output, out, fmt, text)])


def _numbers(hm):
    """What ``.npy`` holds: the exact counts (or weight sums) of a plain heatmap, else the values."""
    from ..core.arrays import to_host

    plain = hm.agg == "count" and hm.categories is None
    return to_host(hm.counts if plain else hm.values)


def png_text(hm) -> dict:
    """The ``tEXt`` chunks of a heatmap's PNG: the ranges (interval notation, shortest round-trip
    numbers, ``]`` for a closed end), the column names, the CRS and aggregation when set."""
    from .. import __version__
    from ..core.ranges import interval

    text = {"Software": f"hotbin {__version__}", "x_range": interval(hm.x_range, hm.x_closed),
            "y_range": interval(hm.y_range, hm.y_closed), "x_name": hm.x_name, "y_name": hm.y_name}
    if hm.crs:
        text["crs"] = hm.crs
    if hm.agg != "count":
        text["agg"] = hm.agg
    if hm.categories is not None:
        from ..render.legend import entries, legend_text

        text["categories"] = json.dumps([_plain(c) for c in hm.categories])
        text.update(legend_text(entries(hm)))
    return text


def summary(args, hm, n, source, junk, fmt, seconds) -> dict:
    """The ``--json`` summary: ``n`` points read (after ``--where`` and junk rows), of which
    ``dropped`` fell in no cell and ``skipped`` had no value or category
    (``n == sum of points + dropped + skipped``), ``junk_rows`` skipped as not numbers,
    the ranges and where they came from, the largest cell value, the grid and the output."""
    from ..core.arrays import to_host

    values = np.asarray(to_host(hm.values), np.float64)
    finite = values[np.isfinite(values)]
    return {
        "output": args.output, "format": fmt.lower(), "n": int(n), "dropped": int(hm.dropped),
        "skipped": int(hm.skipped), "junk_rows": junk.rows if junk is not None else 0,
        "x_range": [float(v) for v in hm.x_range], "y_range": [float(v) for v in hm.y_range],
        "x_closed": bool(hm.x_closed), "y_closed": bool(hm.y_closed), "ranges_from": source,
        "max": float(finite.max()) if finite.size else None,
        "agg": hm.agg, "value": args.agg[1] if hasattr(args, "agg") else None,
        "by": getattr(args, "by", None),
        "categories": None if hm.categories is None else [_plain(c) for c in hm.categories],
        "width": hm.width, "height": hm.height, "x": hm.x_name, "y": hm.y_name, "crs": hm.crs,
        "seconds": round(seconds, 3),
    }


def report(args, hm, n, what, source, junk, fmt, seconds) -> None:
    """The ranges line on stderr; the summary line (or ``--json``) on stdout."""
    from ..core.ranges import interval

    xr, yr = interval(hm.x_range, hm.x_closed, ".10g"), interval(hm.y_range, hm.y_closed, ".10g")
    unit = f" ({hm.crs} metres)" if hm.crs else ""
    print(f"ranges: x {xr}, y {yr}{unit}; {hm.dropped:,} of {n:,} points outside (dropped)", file=sys.stderr)
    if args.json:
        print(json.dumps(summary(args, hm, n, source, junk, fmt, seconds)))
        return
    print(f"wrote {args.output}: {hm.width}x{hm.height} cells, {n:,} points of {what}, "
          f"{hm.dropped:,} outside, {seconds:.1f} s")


def _plain(v):
    """A category label as JSON has it (NumPy scalars become Python's)."""
    return v.item() if isinstance(v, np.generic) else v
