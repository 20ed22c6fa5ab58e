"""Categories to a picture: each cell's colour is the mix of its categories' colours.

datashader's ``colorize``, composed of hotbin's shading: a cell's RGB is the
average of the category colours weighted by the category counts in it, and its
opacity grows with the cell's total count under the normalization ``how``
(:func:`hotbin.render.shade.normalize`) from ``min_alpha`` to 255, so dense cells are
solid and sparse ones faint. Cells without points are transparent (or
``background``).
"""
from __future__ import annotations

import numpy as np

from ..core.arrays import to_host
from .colormaps import PALETTES
from .shade import _colours, _hex_table, _rgb, normalize

__all__ = ["colorize", "category_colors", "PALETTE"]

#: the categories' colours, in order: colorcet's glasbey (glasbey_bw_minc_20), 256 colours chosen
#: far apart from one another and from black and white, so a category stays recognisable next to
#: the mixed colours of cells that hold several
PALETTE = "glasbey"
#: opacity of the sparsest non-empty cell (datashader's default)
MIN_ALPHA = 40


def category_colors(n: int, color_key=None, labels=None) -> np.ndarray:
    """``(n, 3)`` uint8 RGB, one colour per category.

    ``color_key``: a list of colours (at least ``n``), or a dict from label to
    colour (every label of ``labels`` present); default the :data:`PALETTE`,
    whose 256 colours repeat beyond 256 categories.
    """
    if color_key is None:
        table = _palette(PALETTE)
        return table[np.arange(n) % table.shape[0]]
    if isinstance(color_key, dict):
        if labels is None:
            labels = range(n)
        missing = [lab for lab in labels if lab not in color_key]
        if missing:
            raise ValueError(f"color_key: no colour for the categories {missing[:5]}")
        cols = [color_key[lab] for lab in labels]
    else:
        cols = list(color_key)
        if len(cols) < n:
            raise ValueError(f"color_key: {len(cols)} colours for {n} categories")
        cols = cols[:n]
    return np.rint(_colours(cols, "color_key")).astype(np.uint8).reshape(n, 3)


def _palette(name):
    """``(256, 3)`` uint8 of a palette of :data:`hotbin.render.colormaps.PALETTES`."""
    return _hex_table(PALETTES[name])


def colorize(counts, color_key=None, how="eq_hist", labels=None, min_alpha=MIN_ALPHA,
             background=None) -> np.ndarray:
    """RGBA ``(H, W, 4)`` uint8 of per-category counts ``(ncat, H, W)`` (NumPy or CuPy).

    Row 0 of the picture is row 0 of the grids. Negative or NaN counts count as 0.
    ``how``: the normalization of the total count that sets the opacity; with
    ``background`` the cells are composited over it (opaque).
    """
    c = np.asarray(to_host(counts), np.float64)
    if c.ndim != 3:
        raise ValueError(f"counts: expected (categories, height, width), got shape {c.shape}")
    c = np.where(np.isfinite(c) & (c > 0), c, 0.0)
    rgb = category_colors(c.shape[0], color_key, labels).astype(np.float64)
    total = c.sum(axis=0)
    mask = total > 0
    mix = np.einsum("khw,kc->hwc", c, rgb) / np.where(mask, total, 1.0)[..., None]
    alpha = min_alpha + (255 - min_alpha) * normalize(total, how, mask=mask)
    out = np.zeros(total.shape + (4,), np.uint8)
    if background is None:
        out[..., :3] = np.rint(mix)
        out[..., 3] = np.rint(alpha)
        out[~mask] = 0
        return out
    a = alpha[..., None] / 255.0  # composited over the background: opaque everywhere
    bg = np.array(_rgb(background, "background"), np.float64)
    out[..., :3] = np.rint(np.where(mask[..., None], mix * a + bg * (1 - a), bg))
    out[..., 3] = 255
    return out
