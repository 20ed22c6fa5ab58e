"""A heatmap in a notebook: its picture on an opaque background, and a short HTML summary.

Empty cells are transparent in :meth:`hotbin.Heatmap.shade`; on a notebook's white
page that turns a dark colormap (inferno, magma, fire: black at the bottom) into
speckle. :func:`heatmap_png` composites the picture on a background that suits the
colormap: black under a colormap whose bottom is dark, white under a light one and
under categories (sparse cells, drawn faint, fade into the page). :func:`heatmap_html`
shows that picture inline (base64) beside what it is: cells, ranges, aggregation,
points, dropped and skipped, and the categories' colours. ``Heatmap._repr_png_`` and
``_repr_html_`` call them.
"""
from __future__ import annotations

import base64
import html

import numpy as np

from . import png

__all__ = ["heatmap_png", "heatmap_html", "background"]

#: the picture's longest side on the page at least (small grids are scaled up, pixelated)
MIN_SIDE = 256
#: and at most (larger grids are scaled down by the browser)
MAX_SIDE = 512


def background(hm, cmap="inferno") -> str:
    """``"black"`` or ``"white"``: the page under the picture. Black when the colormap's
    bottom is dark (Rec. 709 luma under half), white for a light one and for categories."""
    if hm.categories is not None:
        return "white"
    from .shade import colormap

    r, g, b = (int(c) for c in colormap(cmap)[0])
    return "black" if 2126 * r + 7152 * g + 722 * b < 10000 * 128 else "white"


def heatmap_png(hm, how="eq_hist", cmap="inferno", color_key=None) -> bytes:
    """PNG bytes of the shaded heatmap, north up, opaque: every pixel, empty cells included, is
    composited on :func:`background`. A heatmap with categories gets its legend drawn beside it
    when Pillow is installed (and always as a text chunk, :mod:`hotbin.render.legend`)."""
    return _png(hm, how, cmap, color_key, drawn=True)


def _png(hm, how, cmap, color_key, drawn):
    from .legend import draw, entries, legend_text

    bg = background(hm, cmap)
    kwargs = {"color_key": color_key} if hm.categories is not None else {"cmap": cmap}
    picture = hm.shade(how=how, background=bg, **kwargs)[::-1]
    items = entries(hm, color_key)
    if items and drawn:
        try:
            picture = draw(picture, items, bg)
        except ModuleNotFoundError:
            pass  # the legend stays in the text chunk
    return png.encode(np.ascontiguousarray(picture), text=legend_text(items))


def heatmap_html(hm, how="eq_hist", cmap="inferno", color_key=None) -> str:
    """HTML of the heatmap: its picture (:func:`heatmap_png`, the legend left to the table) inline
    as base64, and a summary table (cells, x and y ranges and names, the range of the shaded
    values, agg, points, dropped, skipped, the CRS and the categories' colours when set). Every
    name is escaped."""
    from ..core.arrays import to_host
    from .legend import entries

    data = base64.b64encode(_png(hm, how, cmap, color_key, drawn=False)).decode("ascii")
    side = max(hm.width, hm.height)
    scale = min(max(MIN_SIDE / side, 1.0), MAX_SIDE / side) if side < MIN_SIDE or side > MAX_SIDE else 1.0
    style = f"width:{round(hm.width * scale)}px;" + ("image-rendering:pixelated;" if scale > 1 else "")
    points = int(np.sum(np.asarray(to_host(hm.points), np.int64)))
    rows = [("cells", f"{hm.width} &times; {hm.height}"),
            (_e(hm.x_name), _range(hm.x_range, hm.x_closed)),
            (_e(hm.y_name), _range(hm.y_range, hm.y_closed))]
    if hm.crs:
        rows.append(("crs", _e(hm.crs)))
    rows.append(("agg", _e(hm.agg)))
    grid, occupied = hm.shaded()
    lo, hi = _value_range(np.asarray(to_host(grid), np.float64),
                          None if occupied is None else np.asarray(to_host(occupied)))
    if lo is not None and hm.categories is None:
        rows.append(("values", f"{_number(lo)} to {_number(hi)}"))
    rows += [("n", f"{points + hm.dropped + hm.skipped:,}"), ("in cells", f"{points:,}"),
             ("dropped", f"{hm.dropped:,}"), ("skipped", f"{hm.skipped:,}")]
    items = entries(hm, color_key)
    if items:
        swatches = "<br>".join(
            f'<span style="display:inline-block;width:0.9em;height:0.9em;background:{_hex(rgb)};'
            f'vertical-align:middle"></span> {_e(lab)}' for lab, rgb in items)
        rows.append(("categories", swatches))
    table = "".join(f'<tr><th style="text-align:left;padding-right:1em">{k}</th>'
                    f'<td style="text-align:left">{v}</td></tr>' for k, v in rows)
    return (f'<div style="display:flex;gap:1em;align-items:flex-start">'
            f'<img src="data:image/png;base64,{data}" style="{style}" alt="{_e(repr(hm))}">'
            f'<table>{table}</table></div>')


def _value_range(grid, occupied):
    """(min, max) of the non-empty cells' values, as shading sees them; (None, None) if none."""
    if grid.ndim != 2:
        return None, None
    mask = np.isfinite(grid) & ((grid != 0) if occupied is None else (occupied != 0))
    if not mask.any():
        return None, None
    return float(grid[mask].min()), float(grid[mask].max())


def _range(r, closed) -> str:
    """``[lo, hi)`` (``]`` when the top is closed), six significant digits: for reading."""
    return f"[{_number(r[0])}, {_number(r[1])}{']' if closed else ')'}"


def _number(v) -> str:
    return f"{int(v):,}" if float(v).is_integer() and abs(v) < 1e15 else f"{v:.6g}"


def _hex(rgb) -> str:
    return "#%02x%02x%02x" % tuple(rgb)


def _e(text) -> str:
    return html.escape(str(text))
