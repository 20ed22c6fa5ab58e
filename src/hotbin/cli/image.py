"""``hotbin image``: summarize an image's luminance, plot its histogram, equalize it.

PNG is read and written by :mod:`hotbin.png` (no imaging library needed); other
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
import warnings

import numpy as np

from ..backend import NAMES as BACKENDS

INSTALL = 'pip install "hotbin[image]"'
#: plot raster: bar area size in pixels and the margin around it
PLOT_W, PLOT_H, MARGIN = 512, 256, 16
_INK = {"bg": 255, "bar": 96, "axis": 0}
_CDF_RGB = (214, 39, 40)


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
    formats = {name: output_format(path) for name, path in outputs}
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
    from . import UserError

    try:
        from PIL import Image
    except ModuleNotFoundError:
        raise UserError(f"reading and writing formats other than PNG needs Pillow: {INSTALL}") from None
    return Image


def _tifffile():
    try:
        import tifffile
    except ModuleNotFoundError:
        return None
    return tifffile


def read_image(path) -> np.ndarray:
    """Pixels of an image file: (H, W) or (H, W, C) uint8/uint16 (float32 for float TIFFs).

    Any failure to read (missing, unreadable, corrupt, too large, out of memory)
    is a :class:`hotbin.cli.UserError` naming ``path``.
    """
    from .. import png
    from . import UserError

    if not os.path.isfile(path):
        raise UserError(f"{path}: no such file")
    with open(path, "rb") as f:
        head = f.read(26)
    if head[:8] == png._SIG:
        # kinds hotbin.png reads (8/16-bit gray/RGB(A)) are not retried with Pillow,
        # which would reduce 16-bit colour to 8 bits
        ours = len(head) == 26 and head[12:16] == b"IHDR" and head[24] in (8, 16) and head[25] in (0, 2, 4, 6)
        try:
            return png.read(path)
        except MemoryError:
            raise UserError(f"{path}: not enough memory to read this image") from None
        except Exception as exc:  # palette, 1/2/4-bit, corrupt: Pillow may read it
            if ours:
                raise UserError(str(exc)) from None
            first = exc
        try:
            from PIL import Image  # noqa: F401
        except ModuleNotFoundError:
            raise UserError(f"{path}: {first} (other PNG kinds need Pillow: {INSTALL})") from None
    Image = _pillow()
    try:
        with warnings.catch_warnings():  # over MAX_IMAGE_PIXELS is an error, as in hotbin.png
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                if _pillow_truncates(im):
                    return _read_deep_tiff(path, im)
                from ..pillow import pillow_pixels

                return pillow_pixels(im)
    except UserError:
        raise
    except MemoryError:
        raise UserError(f"{path}: not enough memory to read this image") from None
    except Exception as exc:  # a hostile or damaged file may fail anywhere in a decoder
        raise UserError(f"{path}: cannot read image: {type(exc).__name__}: {exc}") from None


def _pillow_truncates(im) -> bool:
    """Whether Pillow would reduce this opened image's 16-bit samples to 8 bits."""
    if im.mode.startswith("I") or im.mode == "F":
        return False
    raw = [t.args if isinstance(t.args, str) else (t.args or ("",))[0] for t in im.tile]
    return any(";16" in str(r) for r in raw)


def _read_deep_tiff(path, im) -> np.ndarray:
    """A 16-bit colour (or gray+alpha) image Pillow cannot keep: read by tifffile."""
    from .. import png
    from . import UserError

    tifffile = _tifffile()
    if im.format != "TIFF" or tifffile is None:
        raise UserError(f"{path}: 16-bit {im.mode} image; Pillow would reduce it to 8 bits"
                        + (" (install tifffile to read it)" if im.format == "TIFF" else ""))
    limit = png.max_pixels()
    if limit is not None and im.size[0] * im.size[1] > limit:
        raise UserError(f"{path}: {im.size[0]}x{im.size[1]} pixels is over the limit of {limit} "
                        "(PIL.Image.MAX_IMAGE_PIXELS): a possible decompression bomb")
    with tifffile.TiffFile(path) as tf:
        series = tf.series[0]
        a = series.asarray()
    if series.axes == "SYX":
        a = np.moveaxis(a, 0, -1)
    elif series.axes not in ("YXS", "YX"):
        raise UserError(f"{path}: unsupported TIFF layout (axes {series.axes})")
    return a


def output_format(path) -> str:
    """The format an output path asks for by its suffix: "PNG" or a Pillow format name."""
    from . import UserError

    ext = os.path.splitext(str(path))[1].lower()
    if ext == ".png":
        return "PNG"
    fmt = _pillow().registered_extensions().get(ext)
    if fmt is None:
        raise UserError(f"{path}: unknown image format {ext!r}; use .png, .tif, .jpg, ...")
    return fmt


def _deep_ok(img, fmt) -> bool:
    """Whether ``fmt`` keeps these 16-bit or float pixels (PNG always; TIFF gray by Pillow, else tifffile)."""
    return fmt == "PNG" or (fmt == "TIFF" and (img.ndim == 2 or _tifffile() is not None))


def write_all(files) -> None:
    """Write ``(path, pixels, format)`` outputs all or none.

    Each output is checked (its directory exists, the format can hold the pixels'
    depth), then written to a temporary file in its directory; only when every
    one is written are they renamed into place. On any failure the temporary files are removed and a
    :class:`hotbin.cli.UserError` names the output.
    """
    from . import UserError

    for path, img, fmt in files:
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise UserError(f"{path}: no such directory")
        if img.dtype != np.uint8 and not _deep_ok(img, fmt):
            raise UserError(f"{path}: {fmt} cannot hold {img.dtype} pixels without losing depth; "
                            "write .png or .tif (16-bit colour TIFF needs tifffile)")
    staged = []
    try:
        for i, (path, img, fmt) in enumerate(files):
            head, tail = os.path.split(os.path.abspath(path))
            tmp = os.path.join(head, f".{tail}.{os.getpid()}-{i}.hotbin-tmp")
            staged.append(tmp)
            try:
                write_image(tmp, img, fmt)
            except (OSError, ValueError, TypeError, KeyError) as exc:
                raise UserError(f"{path}: cannot write {fmt}: {exc}") from None
        for tmp, (path, _, _) in zip(staged, files):
            os.replace(tmp, path)
    finally:
        for tmp in staged:
            if os.path.exists(tmp):
                os.remove(tmp)


def write_image(path, img, fmt=None) -> None:
    """Write pixels in their own depth: PNG by hotbin.png, other formats by Pillow (tifffile for
    16-bit colour TIFF). ``fmt``: "PNG" or a Pillow format name; default from the suffix.
    Float pixels become 16-bit in PNG, float32 in TIFF."""
    from .. import png

    fmt = output_format(path) if fmt is None else fmt
    if fmt == "PNG":
        if img.dtype.kind == "f":
            img = np.rint(np.clip(img.astype(np.float64), 0, 1) * 65535).astype(np.uint16)
        png.write(path, img)
        return
    if img.dtype.kind == "f":
        img = img.astype(np.float32)
    if img.dtype == np.uint8 or img.ndim == 2:
        _pillow().fromarray(img).save(path, format=fmt)
        return
    if fmt != "TIFF" or _tifffile() is None:
        raise ValueError(f"{fmt} cannot hold {img.dtype} colour pixels")
    c = img.shape[2]
    _tifffile().imwrite(path, img, photometric="rgb" if c >= 3 else "minisblack",
                        extrasamples=["unassalpha"] if c in (2, 4) else None)
