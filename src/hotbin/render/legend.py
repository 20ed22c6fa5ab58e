"""The legend of a picture by category: which colour is which category, in the PNG.

Every PNG of a heatmap with categories carries its legend as a ``tEXt`` chunk
(``legend``: a JSON list of ``[label, "#rrggbb"]`` pairs, in category order), which
any PNG reader can get at (:func:`hotbin.render.png.read_text`, Pillow's
``Image.text``) without changing a pixel: the picture's pixels stay the heatmap's
cells. On request (``legend=True``) the legend is also drawn, in a panel to the right
of the picture, with Pillow's default font (``pip install "hotbin[image]"``).
"""
from __future__ import annotations

import json

import numpy as np

from . import png

__all__ = ["entries", "legend_text", "draw", "encode_heatmap"]

#: the legend's keyword in a PNG's text chunks
KEY = "legend"
#: pixels of a swatch's side and of the margins around the legend's rows
SWATCH = 12
PAD = 6


def entries(hm, color_key=None):
    """``[(label, (r, g, b)), ...]`` of a heatmap's categories in order, coloured as
    :meth:`hotbin.Heatmap.shade` colours them; None without categories."""
    if hm.categories is None:
        return None
    from .colorize import category_colors

    rgb = category_colors(len(hm.categories), color_key, labels=hm.categories)
    return [(lab, tuple(int(c) for c in row)) for lab, row in zip(hm.categories, rgb)]


def legend_text(items) -> dict:
    """``{"legend": '[["label", "#rrggbb"], ...]'}``: the PNG text chunk of a legend ({} for None).

    Labels are written as JSON values when they are numbers or strings, else as text;
    non-Latin-1 characters are escaped (``\\uXXXX``), as a ``tEXt`` chunk is Latin-1.
    """
    if not items:
        return {}
    pairs = [[lab if isinstance(lab, (str, int, float)) and not isinstance(lab, bool) else str(lab),
              "#%02x%02x%02x" % rgb] for lab, rgb in _plain(items)]
    return {KEY: json.dumps(pairs, ensure_ascii=True)}


def _plain(items):
    """Labels as Python scalars (NumPy integers and floats become int and float)."""
    for lab, rgb in items:
        yield (lab.item() if isinstance(lab, np.generic) else lab), rgb


def draw(rgba, items, background=None):
    """``rgba`` (north up) with the legend drawn in a panel to its right: a swatch and the
    label of each category, one row each, on ``background`` (default: white when the
    picture is transparent). Needs Pillow."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ModuleNotFoundError:
        raise ModuleNotFoundError('drawing a legend needs Pillow: pip install "hotbin[image]"') from None
    from .shade import _rgb

    font = ImageFont.load_default()
    labels = [str(lab) for lab, _ in items]
    probe = ImageDraw.Draw(Image.new("RGBA", (1, 1)))
    boxes = [probe.textbbox((0, 0), s, font=font) for s in labels]
    row = max(SWATCH, *(b[3] - b[1] for b in boxes)) + PAD
    width = PAD + SWATCH + PAD + max(b[2] - b[0] for b in boxes) + PAD
    h, w = rgba.shape[:2]
    height = max(h, PAD + row * len(items))
    bg = (255, 255, 255) if background is None else _rgb(background, "background")
    ink = (0, 0, 0) if sum(bg) > 384 else (255, 255, 255)
    canvas = np.empty((height, w + width, 4), np.uint8)
    canvas[...] = (*bg, 255)  # the panel's colour, below the picture too when the legend is taller
    canvas[:h, :w] = rgba
    panel = Image.new("RGBA", (width, height), (*bg, 255))
    pen = ImageDraw.Draw(panel)
    for k, ((_, rgb), text, box) in enumerate(zip(items, labels, boxes)):
        top = PAD + k * row
        pen.rectangle([PAD, top, PAD + SWATCH - 1, top + SWATCH - 1], fill=(*rgb, 255))
        pen.text((2 * PAD + SWATCH, top + (SWATCH - (box[3] - box[1])) // 2 - box[1]), text, fill=(*ink, 255),
                 font=font)
    canvas[:, w:] = np.asarray(panel)
    return canvas


def encode_heatmap(hm, legend=False, **shade_kwargs) -> bytes:
    """PNG bytes of a shaded heatmap, north up, with its categories' legend as a text chunk and,
    with ``legend=True``, drawn beside the picture (:func:`draw`). ``shade_kwargs`` are those of
    :meth:`hotbin.Heatmap.shade`."""
    picture = hm.shade(**shade_kwargs)[::-1]
    items = entries(hm, shade_kwargs.get("color_key"))
    if legend and items:
        picture = draw(picture, items, shade_kwargs.get("background"))
    return png.encode(np.ascontiguousarray(picture), text=legend_text(items))
