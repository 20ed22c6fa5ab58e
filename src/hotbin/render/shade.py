"""Shading: a grid of counts to an RGBA picture, composed of hotbin's primitives.

``shade`` = optional Gaussian smoothing (:func:`blur`) -> a normalization to ``[0, 1]`` (``eq_hist``,
``log``, ``cbrt`` or ``linear``) -> a colormap lookup. ``eq_hist`` is exact: counts get the
cumulative sum of a bincount of their levels, other values their rank among the distinct values
(sort, unique, inverse), so outliers cannot squeeze the ordinary cells into one colour; nothing
here launches a kernel of its own. Smoothing runs with
the array module of the counts (NumPy, or CuPy on the GPU); the picture is
returned as a NumPy array.

Empty cells are fully transparent: cells without points when the caller says
which cells hold points (``occupied``: a weighted cell whose sum is 0 is not
empty), else cells of zero; NaN and infinite values too. Every other cell is
opaque and coloured from ``FLOOR`` upwards in the colormap, so the sparsest
cells stay visible: the bottom of inferno, magma and fire is black, which
vanishes against a dark page.
"""
from __future__ import annotations

import importlib
import math
from functools import lru_cache

import numpy as np

from ..core.arrays import to_host
from .colormaps import ALIASES, TABLES

__all__ = ["shade", "normalize", "eq_hist", "blur", "colormap", "HOWS", "CMAPS"]

HOWS = ("eq_hist", "log", "cbrt", "linear")
CMAPS = tuple(TABLES)
#: lowest colormap position of a non-empty cell (keeps the sparsest cells visible)
FLOOR = 0.2
#: integer levels up to which eq_hist equalizes by a bincount of the levels (counts); beyond, by rank
EQ_HIST_BINS = 1 << 16
#: Gaussian taps reach this many standard deviations each way
TRUNCATE = 3.0


def shade(counts, how="eq_hist", cmap="inferno", smooth=0.0, span=None, background=None,
          occupied=None):
    """RGBA picture ``(H, W, 4)`` uint8 of a 2-D grid of counts or sums.

    Parameters
    ----------
    counts : array, shape (H, W)
        NumPy or CuPy. Row 0 of the picture is row 0 of ``counts``.
    how : {"eq_hist", "log", "cbrt", "linear"}
        The normalization (:func:`normalize`).
    cmap : str, matplotlib Colormap or sequence of colours
        See :func:`colormap`: a name (hotbin's :data:`CMAPS`, else matplotlib's
        or colorcet's when installed), a matplotlib ``Colormap``, or colours
        (``"#rrggbb"``, RGB(A) floats in 0-1 or numbers in 0-255) interpolated to
        256 entries.
    smooth : float
        Standard deviation, in cells, of a Gaussian blur applied first (0: none).
        Smoothing spreads counts into neighbouring cells, which then show. Any
        finite value works: taps beyond the grid are never built.
    span : (float, float), optional
        Values mapped to the bottom and top of the colormap (data units);
        values outside are clipped. Defaults to the extent of the non-empty cells.
    background : str or (r, g, b), optional
        Colour of empty cells (opaque); default: fully transparent.
    occupied : array, shape (H, W), optional
        Which cells hold points (nonzero: yes), e.g. :attr:`hotbin.Heatmap.points`
        of a weighted heatmap, whose sums may be 0 where points are. Default: the
        nonzero cells of ``counts``. With ``smooth``, the cells the blur reaches
        from an occupied cell are occupied.

    Returns
    -------
    numpy.ndarray (H, W, 4) uint8
        Empty cells (not occupied, NaN, inf) transparent; every other cell opaque, coloured
        from ``FLOOR`` to 1 along the colormap, monotone in the value for every
        ``how``.
    """
    lut = colormap(cmap)
    data = _as_float(counts)
    if data.ndim != 2:
        raise ValueError(f"counts: expected a 2-D grid, got shape {tuple(data.shape)}")
    if occupied is not None:
        occupied = _as_float(occupied)
        if occupied.shape != data.shape:
            raise ValueError(f"occupied: expected shape {tuple(data.shape)}, got {tuple(occupied.shape)}")
    if smooth:
        data = blur(data, smooth)
        if occupied is not None:
            occupied = blur(occupied != 0, smooth)
    xp = _xp(data)
    mask = xp.isfinite(data) & ((data != 0) if occupied is None else (xp.asarray(occupied) != 0))
    t = normalize(data, how, span, mask)
    pos = FLOOR + (1.0 - FLOOR) * t
    n = lut.shape[0]
    idx = xp.clip(xp.rint(pos * (n - 1)), 0, n - 1).astype(np.uint16)
    idx[~mask] = n  # the empty cells' entry
    # one packed little-endian RGBA word per entry, the empty colour last: a single gather
    empty = (0, 0, 0, 0) if background is None else (*_rgb(background, "background"), 255)
    table = np.zeros((n + 1, 4), np.uint8)
    table[:n, :3] = lut[:, :3]
    table[:n, 3] = 255
    table[n] = empty
    words = xp.asarray(table).view("<u4").reshape(-1).take(idx)
    return np.asarray(to_host(words)).view(np.uint8).reshape(data.shape + (4,))


def normalize(values, how="eq_hist", span=None, mask=None):
    """Map values to ``[0, 1]``, monotone non-decreasing; 0 outside ``mask``.

    ``linear``, ``log`` and ``cbrt`` apply ``f`` = identity, signed ``log1p``
    (``sign(v) * log1p(|v|)``) or ``cbrt`` and scale ``f(span[0])..f(span[1])``
    to ``0..1``. ``eq_hist`` gives each value the fraction of the masked cells
    at or below it (:func:`eq_hist`), after clipping to ``span``. When all the
    masked values are equal they map to 1.
    """
    if how not in HOWS:
        raise ValueError(f"how: expected one of {', '.join(HOWS)}, got {how!r}")
    xp = _xp(values)
    if mask is None:
        mask = xp.isfinite(values) & (values != 0)
    out = xp.zeros(values.shape, np.float64)
    v = values[mask]
    if v.size == 0:
        return out
    lo, hi = _span(span) if span is not None else (float(v.min()), float(v.max()))
    v = xp.clip(v, lo, hi)
    if how == "eq_hist":
        out[mask] = eq_hist(v)
        return out
    f = {"linear": lambda a: a, "cbrt": xp.cbrt,
         "log": lambda a: xp.sign(a) * xp.log1p(xp.abs(a))}[how]
    flo, fhi = (float(f(xp.asarray(b, np.float64))) for b in (lo, hi))
    out[mask] = 1.0 if fhi == flo else (f(v) - flo) / (fhi - flo)
    return out


def eq_hist(v, nbins=EQ_HIST_BINS):
    """Histogram equalization of the 1-D values ``v``, exact: no value's colour depends on how far
    away the others lie.

    Integer values with at most ``nbins`` levels (counts) get the fraction of the values at or
    below them: histogram (one bin per level) -> cumulative sum. Any other values get their rank
    among the distinct values, ``rank / (distinct - 1)`` (sort, unique, inverse), so one huge
    outlier takes one step of the colormap, not all but one (equal-width bins between the
    extremes, as datashader's, would put every ordinary value in the bottom bin). Ties share a
    colour. The lowest value maps to 0, the highest to 1; all-equal values map to 1.
    """
    xp = _xp(v)
    lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        return xp.ones(v.shape, np.float64)
    levels = hi - lo + 1
    if levels <= nbins and bool((v == xp.rint(v)).all()):
        # one unit bin per integer level: the bin of v is v - lo, exactly
        hist = xp.bincount((v - lo).astype(np.int64), minlength=int(levels))
        cdf = xp.cumsum(hist).astype(np.float64)  # integer counts: exact in any order
        first = cdf[0]  # bin 0 holds the lowest value
        return (cdf[(v - lo).astype(np.int64)] - first) / (cdf[-1] - first)
    distinct, rank = xp.unique(v, return_inverse=True)  # rank: the index of v among the sorted distinct
    return rank.reshape(v.shape).astype(np.float64) / (distinct.size - 1)


def blur(values, sigma):
    """Separable Gaussian blur (standard deviation ``sigma`` cells, zeros beyond the edges).

    Taps reach ``ceil(3 * sigma)`` cells each way (normalized over that reach);
    those beyond the grid are not built, so any finite ``sigma`` costs at most
    the grid's size in taps.

    Runs with the array module of ``values`` (NumPy, CuPy on the GPU); returns float64.
    """
    try:
        sigma = float(sigma)
    except (TypeError, ValueError):
        raise TypeError(f"smooth: expected a number of cells, got {sigma!r}") from None
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"smooth: expected a finite standard deviation >= 0 (cells), got {sigma}")
    xp = _xp(values)
    data = xp.where(xp.isfinite(values), values, 0).astype(np.float64)
    if sigma == 0:
        return data
    r = max(1, math.ceil(TRUNCATE * sigma))
    # taps reach at most across the grid: the farther ones would only meet the zeros beyond it
    k = min(r, max(max(data.shape) - 1, 1))
    taps = np.exp(-0.5 * (np.arange(-k, k + 1) / sigma) ** 2)
    taps /= taps.sum() if k == r else _gauss_sum(sigma, r)
    for axis in (0, 1):
        data = _blur_axis(xp, data, taps, axis)
    return data


def _gauss_sum(sigma, r):
    """``sum(exp(-0.5 * (j / sigma)**2) for |j| <= r)``, without building the taps when r is large."""
    if r <= 1 << 20:
        return float(np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2).sum())
    # sigma > 2**20 / 3: the midpoint rule is exact to rounding for so wide a Gaussian
    return sigma * math.sqrt(2 * math.pi) * math.erf((r + 0.5) / (sigma * math.sqrt(2)))


def _blur_axis(xp, a, taps, axis):
    r = taps.size // 2
    out = a * taps[r]
    b = xp.moveaxis(a, axis, 0)
    o = xp.moveaxis(out, axis, 0)  # a view: writes land in out
    for k in range(1, min(r, b.shape[0] - 1) + 1):
        o[k:] += taps[r + k] * b[:-k]
        o[:-k] += taps[r - k] * b[k:]
    return out


def colormap(cmap="inferno", n=256) -> np.ndarray:
    """``(n, 3)`` uint8 table of a colormap.

    Parameters
    ----------
    cmap : str, matplotlib Colormap or sequence of colours
        A name: hotbin's own (:data:`CMAPS`, case-insensitive, ``grey`` too; need
        nothing installed), else a matplotlib colormap name (``"Blues"``,
        ``"viridis_r"``) when matplotlib is installed, else a colorcet name
        (``"bmy"``) when colorcet is. A matplotlib ``Colormap`` object (anything
        callable with an ``N`` attribute, returning RGBA in 0-1). Or a sequence
        of colours interpolated evenly: ``"#rrggbb"`` strings, ``"black"``,
        ``"white"`` (any matplotlib colour name when installed), or RGB / RGBA
        rows, in 0-1 when they are floats all within 0-1 (matplotlib's
        convention) and in 0-255 otherwise (integers); alpha is ignored.
    n : int
        Entries of the table.

    Raises
    ------
    ValueError
        An unknown name (the message lists the choices), colours out of range.
    TypeError
        Anything else.
    """
    if isinstance(cmap, str):
        return _named(cmap, n)
    if callable(cmap) and hasattr(cmap, "N"):  # a matplotlib Colormap
        rgba = np.asarray(cmap(np.linspace(0.0, 1.0, n)), np.float64)
        if rgba.ndim != 2 or rgba.shape[1] not in (3, 4):
            raise TypeError(f"cmap: {cmap!r} did not return RGBA colours")
        return np.rint(np.clip(rgba[:, :3], 0, 1) * 255).astype(np.uint8)
    try:
        items = list(cmap)
    except TypeError:
        raise TypeError(f"cmap: expected a colormap name, a matplotlib Colormap or a sequence of "
                        f"colours, got {cmap!r}") from None
    if len(items) < 1:
        raise ValueError("cmap: needs at least one colour")
    return _interpolate(_colours(items, "cmap"), n)


def _named(cmap, n):
    name = ALIASES.get(cmap.lower(), cmap.lower())
    if name in TABLES:
        return _table(name, n)
    mpl = _optional("matplotlib")
    if mpl is not None and cmap in mpl.colormaps:
        return colormap(mpl.colormaps[cmap], n)
    cc = _optional("colorcet")
    if cc is not None and cmap in getattr(cc, "palette", {}):
        if mpl is not None and cmap in getattr(cc, "cm", {}):  # the published floats
            return colormap(cc.cm[cmap], n)
        # colorcet's hex palettes truncate each float to 8 bits: within one step of the floats
        return _interpolate(_colours(list(cc.palette[cmap]), "cmap"), n)
    more = [w for w, m in (("a matplotlib colormap name", mpl), ("a colorcet name", cc)) if m is not None]
    raise ValueError(f"cmap: unknown colormap {cmap!r}; choose one of {', '.join(CMAPS)}"
                     + "".join(f", or {w}" for w in more))


def _optional(module):
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


@lru_cache(maxsize=None)
def _table(name, n):
    """The published 256-entry table of ``name``, resampled to ``n`` entries (itself for 256)."""
    table = _interpolate(_hex_table(TABLES[name]).astype(np.float64), n)
    table.flags.writeable = False
    return table


def _hex_table(text) -> np.ndarray:
    """``(k, 3)`` uint8 of the ``rrggbb`` colours of a table of :mod:`hotbin.render.colormaps`."""
    words = "".join(text.split())
    return np.array([[int(words[i + k:i + k + 2], 16) for k in (0, 2, 4)]
                     for i in range(0, len(words), 6)], np.uint8)


def _interpolate(pts, n):
    if len(pts) == 1:
        return np.repeat(np.rint(pts).astype(np.uint8), n, axis=0)
    at = np.linspace(0, 1, len(pts))
    x = np.linspace(0, 1, n)
    return np.rint(np.stack([np.interp(x, at, pts[:, c]) for c in range(3)], axis=1)).astype(np.uint8)


_NAMED = {"black": (0, 0, 0), "white": (255, 255, 255)}


def _colours(items, name) -> np.ndarray:
    """``(k, 3)`` float64 RGB in 0-255 of a list of colours (see :func:`colormap`).

    Numeric rows are 0-1 when they are floats all within 0-1, else 0-255; the
    decision is taken over all the rows together.
    """
    out = np.zeros((len(items), 3), np.float64)
    rows, where, floats = [], [], False
    for i, c in enumerate(items):
        if isinstance(c, str):
            out[i] = _hex(c, name)
            continue
        try:
            v = np.asarray(c)
        except (TypeError, ValueError):
            v = np.asarray(None)
        if v.shape not in ((3,), (4,)) or v.dtype.kind not in "biuf":
            raise ValueError(f"{name}: expected '#rrggbb', a colour name or (r, g, b) numbers, got {c!r}")
        floats |= v.dtype.kind == "f"
        rows.append(v[:3].astype(np.float64))
        where.append(i)
    if rows:
        rgb = np.stack(rows)
        if not np.all(np.isfinite(rgb) & (rgb >= 0)) or rgb.max() > 255:
            raise ValueError(f"{name}: colour values must lie in 0-1 (floats) or 0-255, got {items!r}")
        out[where] = rgb * 255 if floats and rgb.max() <= 1 else rgb
    return out


def _hex(c, name):
    """(r, g, b) 0-255 of ``"#rrggbb"``, ``"black"``/``"white"`` or a matplotlib colour name."""
    if c.lower() in _NAMED:
        return _NAMED[c.lower()]
    h = c.lstrip("#")
    if len(h) == 6:
        try:
            return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))
        except ValueError:
            pass
    mpl = _optional("matplotlib.colors")
    if mpl is not None and mpl.is_color_like(c):
        return tuple(255 * v for v in mpl.to_rgb(c))
    raise ValueError(f"{name}: expected '#rrggbb', 'black', 'white' or (r, g, b), got {c!r}")


def _rgb(c, name):
    """(r, g, b) ints 0-255 of one colour (the rules of :func:`colormap`'s colour lists)."""
    return tuple(int(round(v)) for v in _colours([c], name)[0])


def _span(span):
    try:
        lo, hi = (float(b) for b in span)
    except (TypeError, ValueError):
        raise ValueError(f"span: expected a (low, high) pair of numbers, got {span!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"span: expected finite low < high, got {span!r}")
    return lo, hi


def _xp(a):
    return np if isinstance(a, np.ndarray) else importlib.import_module("cupy")


def _as_float(counts):
    """float64 grid: CuPy stays on the GPU; anything else becomes NumPy."""
    if hasattr(counts, "__cuda_array_interface__"):
        try:
            cupy = importlib.import_module("cupy")
        except ModuleNotFoundError:
            return np.asarray(to_host(counts), np.float64)
        return cupy.asarray(counts, dtype=np.float64)
    return np.asarray(to_host(counts), np.float64)
