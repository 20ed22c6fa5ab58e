"""What a request may ask for: a view of the data, a tile, a shading; everything else is a 400.

Every parameter a client sends is parsed and checked here, before any work: numbers must be
finite, ranges must run low to high, the grid must stay under :data:`MAX_PIXELS` cells (and
:data:`MAX_SIDE` along either axis), ``how`` and ``cmap`` must be names shading knows, and a
tile must lie in the world. A problem raises :class:`BadRequest`, which the app answers with
HTTP 400 and ``{"error": message}``. Unknown parameter names are refused too, so a typo
(``x2=``) is an error instead of a silently ignored default.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..render.project import tile_bounds
from ..render.shade import HOWS, colormap

__all__ = ["BadRequest", "View", "Shading", "MAX_PIXELS", "MAX_SIDE", "MAX_LAYER_CELLS", "TILE",
           "VIEW_NAMES", "SHADING_NAMES", "parse_view", "parse_shading", "parse_cell", "parse_tile",
           "check_names", "check_layers", "parse_brushes", "parse_box", "parse_hist", "parse_rows",
           "BRUSH", "HIST_NAMES", "ROWS_NAMES", "MAX_ROWS"]

#: the most cells one view may have: a 4K screen at full resolution (3840 x 2160)
MAX_PIXELS = 3840 * 2160
#: the most cells along either axis of a view
MAX_SIDE = 8192
#: the most cells of all the layers of a view with categories (8 bytes each, and their counts)
MAX_LAYER_CELLS = 1 << 25
#: side of an XYZ tile in cells
TILE = 256
#: tile zoom levels served (as :func:`hotbin.render.project.tile_bounds`)
MAX_ZOOM = 30

#: the parameters of a view, and of its shading
VIEW_NAMES = ("x0", "x1", "y0", "y1", "width", "height")
SHADING_NAMES = ("how", "cmap")
_INT = re.compile(r"^[0-9]{1,10}$")
#: the prefix of a brush parameter, ``f.COL=lo,hi``
BRUSH = "f."
#: the parameters of /hist.json and /rows.json (besides brushes)
HIST_NAMES = ("column", "bins", "lo", "hi", "x0", "x1", "y0", "y1")
ROWS_NAMES = ("x0", "x1", "y0", "y1", "limit", "offset")
#: the most rows /rows.json sends at once
MAX_ROWS = 10_000


class BadRequest(ValueError):
    """A parameter a client sent is not acceptable; the message names it."""


@dataclass(frozen=True)
class View:
    """A grid of ``height x width`` cells over ``[x0, x1) x [y0, y1)`` (data units)."""

    x0: float
    x1: float
    y0: float
    y1: float
    width: int
    height: int

    @property
    def key(self) -> tuple:
        return (self.x0, self.x1, self.y0, self.y1, self.width, self.height)


@dataclass(frozen=True)
class Shading:
    how: str = "eq_hist"
    cmap: str = "inferno"


def check_names(query, allowed, brushes=True) -> None:
    """Refuse parameters that the endpoint does not take (brushes ``f.COL`` aside when it
    takes them)."""
    unknown = sorted(k for k in set(query.keys()) - set(allowed)
                     if not (brushes and k.startswith(BRUSH)))
    if unknown:
        raise BadRequest(f"unknown parameter {unknown[0]!r}; this endpoint takes "
                         f"{', '.join(allowed) or 'none'}")


def _number(query, name, default):
    text = query.get(name)
    if text is None:
        return default
    try:
        v = float(text)
    except ValueError:
        raise BadRequest(f"{name}: expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise BadRequest(f"{name}: expected a finite number, got {text!r}")
    return v


def _count(query, name, default, most):
    text = query.get(name)
    if text is None:
        return default
    if not _INT.match(text.strip()):
        raise BadRequest(f"{name}: expected a whole number of cells, got {text!r}")
    v = int(text)
    if not 1 <= v <= most:
        raise BadRequest(f"{name}: expected 1 to {most} cells, got {v}")
    return v


def parse_view(query, home, default_size=(512, 512), square=False) -> View:
    """The view a query asks for; a bound not given is the home view's (``home`` = x0, x1, y0, y1).

    A size not given is ``default_size``'s; with ``square``, it follows the view's aspect
    instead (cells as wide as they are tall in data units, as :func:`hotbin.heatmap` without a
    height): the other side's, or ``default_size[0]`` across, within the limits on cells.
    """
    x0, x1, y0, y1 = (_number(query, k, d) for k, d in zip(VIEW_NAMES[:4], home))
    for lo, hi, a in ((x0, x1, "x"), (y0, y1, "y")):
        if not lo < hi:
            raise BadRequest(f"{a}0, {a}1: expected {a}0 < {a}1, got {lo!r} and {hi!r}")
        if not math.isfinite(hi - lo):
            raise BadRequest(f"{a}0, {a}1: the extent [{lo!r}, {hi!r}) is too wide to divide into cells")
    width = _count(query, "width", None if square else default_size[0], MAX_SIDE)
    height = _count(query, "height", None if square else default_size[1], MAX_SIDE)
    if width is None or height is None:
        width, height = _square(width, height, (y1 - y0) / (x1 - x0), default_size[0])
        if max(width, height) > MAX_SIDE:
            raise BadRequest(f"width, height: {width} x {height} cells (the view's aspect) is more than "
                             f"{MAX_SIDE} along a side; give both")
    if width * height > MAX_PIXELS:
        raise BadRequest(f"width, height: {width} x {height} = {width * height:,} cells is more than "
                         f"the {MAX_PIXELS:,} a view may have")
    return View(x0, x1, y0, y1, width, height)


def _square(width, height, aspect, across):
    """The side(s) not given of a grid of square cells over a view ``aspect`` times as tall as
    wide; with neither, ``across`` cells across at most, within :data:`MAX_SIDE` and
    :data:`MAX_PIXELS`."""
    aspect = min(max(aspect, 1.0 / MAX_SIDE), float(MAX_SIDE))  # 0 or inf for absurd extents
    if width is not None:
        return width, max(1, round(width * aspect))
    if height is not None:
        return max(1, round(height / aspect)), height
    width = max(1, math.floor(min(across, MAX_SIDE / aspect, math.sqrt(MAX_PIXELS / aspect))))
    return width, max(1, min(round(width * aspect), MAX_SIDE, MAX_PIXELS // width))


def check_layers(view: View, layers: int) -> None:
    """A view of data with categories has a grid per category: their cells are bounded too."""
    cells = view.width * view.height * layers
    if cells > MAX_LAYER_CELLS:
        raise BadRequest(f"width, height: {view.width} x {view.height} cells x {layers} categories is "
                         f"more than the {MAX_LAYER_CELLS:,} cells a view may have; ask for fewer cells")


def parse_shading(query, default: Shading) -> Shading:
    """``how`` and ``cmap``: one of :data:`hotbin.render.shade.HOWS`, a colormap name shading knows."""
    how = query.get("how", default.how)
    if how not in HOWS:
        raise BadRequest(f"how: expected one of {', '.join(HOWS)}, got {how!r}")
    cmap = query.get("cmap", default.cmap)
    try:
        colormap(cmap)
    except (ValueError, TypeError) as exc:
        raise BadRequest(str(exc)) from None
    return Shading(how, cmap)


def parse_cell(query, view: View) -> tuple[int, int]:
    """``(i, j)``: the column ``i`` (from x0) and row ``j`` (from y0) of a cell of ``view``."""
    return _index(query, "i", view.width), _index(query, "j", view.height)


def _index(query, name, size):
    text = query.get(name)
    if text is None or not _INT.match(text.strip()):
        raise BadRequest(f"{name}: expected a cell index 0 to {size - 1}, got {text!r}")
    v = int(text)
    if v >= size:
        raise BadRequest(f"{name}: expected a cell index 0 to {size - 1}, got {v}")
    return v


def parse_tile(z: str, x: str, y: str) -> View:
    """The view of XYZ tile ``z/x/y`` (``y`` from the north) in Web Mercator metres, 256 x 256."""
    vals = []
    for name, text in (("z", z), ("x", x), ("y", y)):
        if not _INT.match(text):
            raise BadRequest(f"tile {z}/{x}/{y}: {name} must be a whole number")
        vals.append(int(text))
    tz, tx, ty = vals
    if tz > MAX_ZOOM or tx >= 1 << tz or ty >= 1 << tz:
        raise BadRequest(f"tile {tz}/{tx}/{ty}: outside the world (0 <= x, y < 2**z, z <= {MAX_ZOOM})")
    x0, x1, y0, y1 = tile_bounds(tz, tx, ty)
    return View(x0, x1, y0, y1, TILE, TILE)



def parse_brushes(query, categorical=None) -> dict:
    """``{column: (lo, hi)}`` of the ``f.COL=lo,hi`` parameters, numbers parsed here (a value is
    never text passed on); ``f.<categorical>=a,b`` lists category names instead."""
    out = {}
    for key in query.keys():
        if not key.startswith(BRUSH):
            continue
        name, values = key[len(BRUSH):], query.getlist(key)
        if len(values) != 1:
            raise BadRequest(f"{key}: given {len(values)} times; give each brush once")
        text = values[0]
        if name == categorical:
            out[name] = [v for v in text.split(",") if v != ""]
            continue
        parts = text.split(",")
        if len(parts) != 2:
            raise BadRequest(f"{key}: expected lo,hi (two numbers), got {text[:80]!r}")
        lo, hi = (_number({key: p.strip()}, key, None) for p in parts)
        if not lo < hi:
            raise BadRequest(f"{key}: expected lo < hi, got {lo!r} and {hi!r}")
        out[name] = (lo, hi)
    return out


def parse_box(query):
    """``(x0, x1, y0, y1)`` when all four are given (half-open, increasing), None when none."""
    given = [k for k in VIEW_NAMES[:4] if k in query]
    if not given:
        return None
    if len(given) != 4:
        raise BadRequest(f"x0, x1, y0, y1: give all four or none, got {', '.join(given)}")
    x0, x1, y0, y1 = (_number(query, k, None) for k in VIEW_NAMES[:4])
    for lo, hi, a in ((x0, x1, "x"), (y0, y1, "y")):
        if not lo < hi:
            raise BadRequest(f"{a}0, {a}1: expected {a}0 < {a}1, got {lo!r} and {hi!r}")
    return (x0, x1, y0, y1)


def parse_hist(query, most_bins):
    """``(column, bins or None, lo or None, hi or None)`` of a /hist.json request."""
    column = query.get("column")
    if not column:
        raise BadRequest("column: name the column to histogram")
    bins = _count(query, "bins", None, most_bins)
    lo, hi = _number(query, "lo", None), _number(query, "hi", None)
    if lo is not None and hi is not None and not lo <= hi:
        raise BadRequest(f"lo, hi: expected lo <= hi, got {lo!r} and {hi!r}")
    return column, bins, lo, hi


def parse_rows(query) -> tuple[int, int]:
    """``(limit, offset)`` of a /rows.json request: 100 rows from the first by default."""
    limit = _count(query, "limit", 100, MAX_ROWS) if query.get("limit") != "0" else 0
    text = query.get("offset", "0")
    if not _INT.match(text.strip()):
        raise BadRequest(f"offset: expected a whole number of rows, got {text!r}")
    return limit, int(text)
