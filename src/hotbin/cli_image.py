"""``hotbin image``: summarize an image's luminance, plot its histogram, equalize it.

PNG is read and written by :mod:`hotbin.png` (no imaging library needed); other
formats (JPEG, TIFF, palette PNGs, ...) use Pillow, imported only then.
"""
from __future__ import annotations

import os

import numpy as np

INSTALL = 'pip install "hotbin[image]"'
#: plot raster: bar area size in pixels and the margin around it
PLOT_W, PLOT_H, MARGIN = 512, 256, 16
_INK = {"bg": 255, "bar": 96, "axis": 0}
_CDF_RGB = (214, 39, 40)


def register(sub):
    p = sub.add_parser("image", help="luminance summary, histogram plot and equalization of an image")
    p.add_argument("path", help="image file: PNG (built in), JPEG, TIFF, ... (with Pillow)")
    p.add_argument("--equalize", metavar="OUT", help="write the luma-equalized image here")
    p.add_argument("--plot", metavar="HIST.png", help="write a PNG chart of the luma histogram here")
    p.add_argument("--backend", choices=("cpu", "cuda", "wgpu"), default=None,
                   help="backend to count with (default: $HOTBIN_BACKEND or cpu)")
    p.set_defaults(func=run)


def run(args) -> int:
    from . import images
    from .cli import UserError

    img = read_image(args.path)
    try:
        counts = images.luminance_histogram(img, bins=1 << (8 if img.dtype == np.uint8 else 16),
                                            backend=args.backend)
        pct = images.percentiles(img, [1, 50, 99], backend=args.backend)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{args.path}: {exc}") from None
    print(summary(args.path, img, counts, pct))
    if args.plot:
        from . import png

        png.write(args.plot, plot(counts))
        print(f"histogram plot: {args.plot}")
    if args.equalize:
        write_image(args.equalize, images.equalize(img, backend=args.backend))
        print(f"equalized: {args.equalize}")
    return 0


def summary(path, img, counts, pct) -> str:
    """The lines printed for one image (levels are 8-bit, or 16-bit for deeper images)."""
    h, w = img.shape[:2]
    c = 1 if img.ndim == 2 else img.shape[2]
    kind = {1: "gray", 2: "gray+alpha", 3: "RGB", 4: "RGBA"}[c]
    top = counts.size - 1
    n = int(counts.sum())
    mean = float(np.dot(np.arange(counts.size, dtype=np.float64), counts)) / n
    if img.dtype.kind == "f":
        pct = np.rint(np.asarray(pct) * top).astype(np.int64)
    return "\n".join([
        f"{path}: {w}x{h} pixels, {c} channel{'s' if c > 1 else ''} ({kind}), {img.dtype}",
        f"mean luma: {mean:.2f} (levels 0..{top})",
        "luma percentiles 1/50/99: " + " / ".join(str(int(v)) for v in pct),
        f"clipped shadows (level 0): {100 * counts[0] / n:.2f}%   "
        f"highlights (level {top}): {100 * counts[top] / n:.2f}%",
    ])


def plot(counts, width=PLOT_W, height=PLOT_H) -> np.ndarray:
    """An RGB uint8 bar chart of ``counts`` (gray bars) with its CDF (red line), axes in black."""
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

    out = np.full((height + 2 * MARGIN, width + 2 * MARGIN, 3), _INK["bg"], np.uint8)
    rows = np.arange(height)[::-1][:, None]  # height above the axis of each raster row
    area = out[MARGIN:MARGIN + height, MARGIN:MARGIN + width]
    area[rows < bar[None, :]] = _INK["bar"]
    area[np.arange(height)[::-1][cdf_y], np.arange(width)] = _CDF_RGB
    out[MARGIN + height, MARGIN - 1:MARGIN + width + 1] = _INK["axis"]  # x axis
    out[MARGIN:MARGIN + height + 1, MARGIN - 1] = _INK["axis"]  # y axis
    for t in range(5):  # ticks at 0, 1/4, 1/2, 3/4 and the top level
        x = MARGIN + min(width - 1, t * width // 4)
        out[MARGIN + height:MARGIN + height + 5, x] = _INK["axis"]
    return out


def _pillow():
    from .cli import UserError

    try:
        from PIL import Image
    except ModuleNotFoundError:
        raise UserError(f"reading and writing formats other than PNG needs Pillow: {INSTALL}") from None
    return Image


def read_image(path) -> np.ndarray:
    """Pixels of an image file: (H, W) or (H, W, C) uint8/uint16 (float32 for float TIFFs)."""
    from . import png
    from .cli import UserError

    if not os.path.isfile(path):
        raise UserError(f"{path}: no such file")
    with open(path, "rb") as f:
        is_png = f.read(8) == b"\x89PNG\r\n\x1a\n"
    if is_png:
        try:
            return png.read(path)
        except Exception as exc:  # palette, interlaced, 1/2/4-bit, corrupt: let Pillow try
            first = exc
        try:
            from PIL import Image  # noqa: F401
        except ModuleNotFoundError:
            raise UserError(f"{path}: {first} (other PNG kinds need Pillow: {INSTALL})") from None
    Image = _pillow()
    try:
        with Image.open(path) as im:
            return _from_pillow(im)
    except (OSError, SyntaxError, ValueError) as exc:
        raise UserError(f"{path}: cannot read image: {exc}") from None


def _from_pillow(im) -> np.ndarray:
    mode = im.mode
    if mode in ("L", "LA", "RGB", "RGBA"):
        return np.asarray(im)
    if mode.startswith("I;16"):
        return np.asarray(im).astype(np.uint16)
    if mode in ("I", "F"):
        a = np.asarray(im)
        if mode == "F":
            return a.astype(np.float32)
        if a.size and (a.min() < 0 or a.max() > 65535):
            raise ValueError(f"32-bit integer pixels outside 0..65535 (mode {mode})")
        return a.astype(np.uint16)
    has_alpha = "A" in mode or "transparency" in im.info
    return np.asarray(im.convert("RGBA" if has_alpha else "RGB"))


def write_image(path, img) -> None:
    """Write pixels: PNG by hotbin.png, anything else by Pillow (format from the suffix)."""
    from . import png

    if img.dtype.kind == "f":
        img = np.rint(np.clip(img.astype(np.float64), 0, 1) * 65535).astype(np.uint16)
    if str(path).lower().endswith(".png"):
        png.write(path, img)
        return
    Image = _pillow()
    if img.dtype == np.uint16 and img.ndim != 2:
        raise ValueError(f"{path}: 16-bit colour can only be written as PNG")
    Image.fromarray(img).save(path)
