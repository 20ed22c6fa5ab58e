"""``hotbin image``: summarize an image's luminance, plot its histogram, equalize it.

PNG is read and written by :mod:`hotbin.render.png` (no imaging library needed); other
formats (JPEG, TIFF, palette PNGs, ...) use Pillow, imported only then, and 16-bit
colour TIFFs (which Pillow would reduce to 8 bits) use tifffile where it is installed.

The equalized image keeps the input's depth: 8-bit in, 8-bit out; 16-bit in, 16-bit
out (PNG, or TIFF), never silently reduced. Files are checked for their size before
anything is allocated (Pillow's ``Image.MAX_IMAGE_PIXELS``). Outputs are written only
when the whole command succeeds: everything is computed and each output is first
written to a temporary file beside it, then all are renamed into place.
"""
from __future__ import annotations

import os

import numpy as np

from ..backend import NAMES as BACKENDS
from .image_files import check_output, read_image, write_all

#: plot raster: bar area size in pixels and the margins around it (room for the labels)
PLOT_W, PLOT_H, MARGIN = 512, 256, 16
LEFT, RIGHT, BOTTOM = 56, 44, 40
_INK = {"bg": 255, "bar": 96, "axis": 0}
_CDF_RGB = (214, 39, 40)
#: glyphs of the axis labels, 3x5 pixels each ("#" ink), drawn twice their size
_FONT = dict(zip("0123456789%.kMGCDFlumaevpixs ", (
    "###,#.#,#.#,#.#,###", ".#.,##.,.#.,.#.,###", "###,..#,###,#..,###", "###,..#,.##,..#,###",
    "#.#,#.#,###,..#,..#", "###,#..,###,..#,###", "###,#..,###,#.#,###", "###,..#,.#.,.#.,.#.",
    "###,#.#,###,#.#,###", "###,#.#,###,..#,###", "#.#,..#,.#.,#..,#.#", "...,...,...,...,.#.",
    "#..,#.#,##.,#.#,#.#", "#.#,###,###,#.#,#.#", "###,#..,#.#,#.#,###", "###,#..,#..,#..,###",
    "##.,#.#,#.#,#.#,##.", "###,#..,##.,#..,#..", "#..,#..,#..,#..,.##", "...,#.#,#.#,#.#,###",
    "...,###,###,#.#,#.#", "...,##.,..#,###,###", "...,###,###,#..,.##", "...,#.#,#.#,#.#,.#.",
    "...,##.,#.#,##.,#..", "#..,...,#..,#..,#..", "...,#.#,.#.,.#.,#.#", "...,.##,.#.,..#,##.",
    "...,...,...,...,...")))
GLYPH = 2  #: scale of the glyphs


def register(sub):
    p = sub.add_parser("image", help="luminance summary, histogram plot and equalization of an image")
    p.add_argument("path", help="image file: PNG (built in), JPEG, TIFF, ... (with Pillow)")
    p.add_argument("--equalize", metavar="OUT", help="write the luma-equalized image here "
                   "(16-bit images need .png or .tif)")
    p.add_argument("--plot", metavar="HIST.png", help="write a PNG chart of the luma histogram here")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="backend to count with (default: $HOTBIN_BACKEND or cpu)")
    p.set_defaults(func=run)


def run(args) -> int:
    from .. import images
    from . import UserError

    outputs = [(name, path) for name, path in (("plot", args.plot), ("equalize", args.equalize)) if path]
    if len(outputs) == 2 and os.path.abspath(args.plot) == os.path.abspath(args.equalize):
        raise UserError(f"--plot and --equalize: both name {args.plot}")
    formats = {name: check_output(path) for name, path in outputs}
    img = read_image(args.path)
    try:
        counts = images.luminance_histogram(img, bins=1 << (8 if img.dtype == np.uint8 else 16),
                                            backend=args.backend)
        pct = images.percentiles(img, [1, 50, 99], backend=args.backend)
        pixels = {"plot": plot(counts) if args.plot else None,
                  "equalize": images.equalize(img, backend=args.backend) if args.equalize else None}
    except (TypeError, ValueError) as exc:
        raise UserError(f"{args.path}: {exc}") from None
    except MemoryError:
        raise UserError(f"{args.path}: not enough memory for this {_size(img)} image") from None
    text = summary(args.path, img, counts, pct)
    write_all([(path, pixels[name], formats[name]) for name, path in outputs])
    print(text)
    for name, path in outputs:
        print(f"{'histogram plot' if name == 'plot' else 'equalized'}: {path}")
    return 0


def _size(img) -> str:
    return f"{img.shape[1]}x{img.shape[0]}"


def summary(path, img, counts, pct) -> str:
    """The lines printed for one image (levels are 8-bit, 16-bit for deeper images, 0..65280 for float)."""
    from ..images import FLOAT_TOP

    h, w = img.shape[:2]
    c = 1 if img.ndim == 2 else img.shape[2]
    kind = {1: "gray", 2: "gray+alpha", 3: "RGB", 4: "RGBA"}[c]
    if img.dtype.kind == "f":  # the 8.8 grid of the luma rule: levels above FLOAT_TOP are empty
        counts = counts[:FLOAT_TOP + 1]
        pct = np.rint(np.asarray(pct) * FLOAT_TOP).astype(np.int64)
    top = counts.size - 1
    n = int(counts.sum())
    mean = float(np.dot(np.arange(counts.size, dtype=np.float64), counts)) / n
    return "\n".join([
        f"{path}: {w}x{h} pixels, {c} channel{'s' if c > 1 else ''} ({kind}), {img.dtype}",
        f"mean luma: {mean:.2f} (levels 0..{top})",
        "luma percentiles 1/50/99: " + " / ".join(str(int(v)) for v in pct),
        f"clipped shadows (level 0): {100 * counts[0] / n:.2f}%   "
        f"highlights (level {top}): {100 * counts[top] / n:.2f}%",
    ])


def plot(counts, width=PLOT_W, height=PLOT_H) -> np.ndarray:
    """An RGB uint8 bar chart of ``counts`` (gray bars) with its CDF (red line) and labelled axes:
    luma levels along x, pixels up the left (0 to the peak of the inner levels, which the bars
    are scaled to), the CDF's share up the right."""
    counts = np.asarray(counts, dtype=np.float64)
    size = counts.size
    if size > width:  # several bins per column: sum them
        first = (np.arange(width) * size) // width
        per_col = np.add.reduceat(counts, first)
        last = np.append(first[1:], size) - 1
    else:  # one bin over several columns
        first = last = (np.arange(width) * size) // width
        per_col = counts[last]
    # scale to the peak of the inner levels: clipped shadows/highlights would flatten the rest
    inner = per_col[(first > 0) & (last < size - 1)]
    peak = inner.max() if inner.size and inner.max() > 0 else max(per_col.max(), 1.0)
    bar = np.rint(np.minimum(per_col / peak, 1.0) * (height - 1)).astype(np.int64)
    cdf = np.cumsum(counts)
    cdf_col = cdf[last]
    cdf_y = np.rint(cdf_col / max(cdf[-1], 1) * (height - 1)).astype(np.int64)

    top, left = MARGIN, LEFT
    out = np.full((height + top + BOTTOM, width + LEFT + RIGHT, 3), _INK["bg"], np.uint8)
    rows = np.arange(height)[::-1][:, None]  # height above the axis of each raster row
    area = out[top:top + height, left:left + width]
    area[rows < bar[None, :]] = _INK["bar"]
    area[np.arange(height)[::-1][cdf_y], np.arange(width)] = _CDF_RGB
    out[top + height, left - 1:left + width + 1] = _INK["axis"]  # x axis
    out[top:top + height + 1, left - 1] = _INK["axis"]  # y axis (pixels)
    out[top:top + height + 1, left + width] = _CDF_RGB  # right axis (CDF)
    ink, red = (_INK["axis"],) * 3, _CDF_RGB
    for t in range(5):  # ticks and levels at 0, 1/4, 1/2, 3/4 and the top level
        x = left + min(width - 1, t * width // 4)
        out[top + height:top + height + 5, x] = _INK["axis"]
        _text(out, str(round(t * (size - 1) / 4)), x, top + height + 7, ink, "center")
    _text(out, "luma level", left + width // 2, top + height + 23, ink, "center")
    _text(out, "0", left - 4, top + height - 5, ink, "right")
    _text(out, _compact(peak), left - 4, top, ink, "right")
    _text(out, "pixels", left - 4, top + height // 2 - 5, ink, "right")
    _text(out, "0%", left + width + 4, top + height - 5, red)
    _text(out, "100%", left + width + 4, top, red)
    _text(out, "CDF", left + width + 4, top + height // 2 - 5, red)
    return out


def _compact(v) -> str:
    """A count in at most a few glyphs: 950, 12k, 3.4M."""
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            q = v / div
            return (f"{q:.1f}" if q < 10 else f"{q:.0f}").replace(".0", "") + unit
    return f"{v:.0f}"


def _text(out, text, x, y, rgb, align="left"):
    """Draw ``text`` in :data:`_FONT` with its top at row ``y``, from ``x`` (or ending / centred
    there), clipped to the image."""
    w = len(text) * 4 * GLYPH - GLYPH
    x0 = {"left": x, "right": x - w, "center": x - w // 2}[align]
    for i, ch in enumerate(text):
        glyph = np.array([[c == "#" for c in row] for row in _FONT[ch].split(",")])
        big = np.kron(glyph, np.ones((GLYPH, GLYPH), bool))
        gx = x0 + i * 4 * GLYPH
        ys, xs = np.nonzero(big)
        ys, xs = ys + y, xs + gx
        ok = (ys >= 0) & (ys < out.shape[0]) & (xs >= 0) & (xs < out.shape[1])
        out[ys[ok], xs[ok]] = rgb
