"""Image files in and out for the command line: read any format, write by the path's suffix.

PNG by the built-in encoder (:mod:`hotbin.render.png`, 8 and 16 bits), everything else by Pillow
(``pip install "hotbin[image]"``; tifffile for 16-bit colour TIFF). Results that are data
(``raw``: a heatmap) are also written as ``.npy`` (NumPy), ``.nc`` (NetCDF by xarray) and
``.tif`` (GeoTIFF by rasterio, :mod:`hotbin.cli.geo`). Outputs are checked before any work
(:func:`output_format`, :func:`check_output`: the suffix, the directory, the library that
writes it) and written all or none (:func:`write_all`).
"""
from __future__ import annotations

import os
import warnings

import numpy as np

__all__ = ["read_image", "output_format", "check_output", "write_all", "write_image"]

INSTALL = 'pip install "hotbin[image]"'
#: raw results: the counts as an array file (``numpy.load``), a heatmap as NetCDF or GeoTIFF
RAW = {".npy": "NPY", ".nc": "NETCDF", ".tif": "GEOTIFF", ".tiff": "GEOTIFF"}
#: formats written from a Heatmap, not from pixels
DATA = frozenset({"NETCDF", "GEOTIFF"})


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
    from ..render import png
    from . import UserError

    if not os.path.isfile(path):
        raise UserError(f"{path}: no such file")
    with open(path, "rb") as f:
        head = f.read(26)
    if head[:8] == png._SIG:
        # kinds hotbin.render.png reads (8/16-bit gray/RGB(A)) are not retried with Pillow,
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
        with warnings.catch_warnings():  # over MAX_IMAGE_PIXELS is an error, as in hotbin.render.png
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                if _pillow_truncates(im):
                    return _read_deep_tiff(path, im)
                from ..io.pillow import pillow_pixels

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
    from ..render import png
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


def output_format(path, raw: bool = False) -> str:
    """The format an output path asks for by its suffix: "PNG", a Pillow format name, or (with
    ``raw``: a heatmap's results) "NPY", "NETCDF" or "GEOTIFF". Any other suffix is refused."""
    from . import UserError

    ext = os.path.splitext(str(path))[1].lower()
    if ext == ".png":
        return "PNG"
    if raw and ext in RAW:
        return RAW[ext]
    if ext == "":
        raise UserError(f"{path}: no file suffix; use .png{', .npy, .nc' if raw else ''}, .tif, .jpg, ...")
    fmt = _pillow().registered_extensions().get(ext)
    if fmt is None:
        raise UserError(f"{path}: unknown format {ext!r}; use .png{', .npy, .nc' if raw else ''}, .tif, .jpg, ...")
    return fmt


def check_output(path, raw: bool = False) -> str:
    """The format of the output ``path`` (:func:`output_format`), checked before any work: its
    directory exists and is writable, the path is not a directory, the suffix is known and the
    library that writes it is installed."""
    from . import UserError

    head = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(head):
        raise UserError(f"{path}: no such directory")
    if os.path.isdir(path):
        raise UserError(f"{path}: is a directory")
    if not os.access(head, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UserError(f"{path}: not writable")
    fmt = output_format(path, raw)
    if fmt in DATA:
        from .geo import check_writer

        check_writer(path, fmt)
    return fmt


def _deep_ok(img, fmt) -> bool:
    """Whether ``fmt`` keeps these 16-bit or float pixels (PNG always; TIFF gray by Pillow, else tifffile)."""
    return fmt == "PNG" or (fmt == "TIFF" and (img.ndim == 2 or _tifffile() is not None))


def write_all(files) -> None:
    """Write ``(path, pixels, format[, text])`` outputs all or none (``text``: PNG ``tEXt``
    chunks; ``pixels`` a :class:`hotbin.Heatmap` for NetCDF and GeoTIFF).

    Each output is checked (its directory exists, the format can hold the pixels'
    depth), then written to a temporary file in its directory; only when every
    one is written are they renamed into place. On any failure the temporary files are removed and a
    :class:`hotbin.cli.UserError` names the output.
    """
    from . import UserError

    files = [tuple(f) + (None,) * (4 - len(f)) for f in files]
    for path, img, fmt, _ in files:
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise UserError(f"{path}: no such directory")
        if fmt != "NPY" and fmt not in DATA and img.dtype != np.uint8 and not _deep_ok(img, fmt):
            raise UserError(f"{path}: {fmt} cannot hold {img.dtype} pixels without losing depth; "
                            "write .png or .tif (16-bit colour TIFF needs tifffile)")
    staged = []
    try:
        for i, (path, img, fmt, text) in enumerate(files):
            head, tail = os.path.split(os.path.abspath(path))
            tmp = os.path.join(head, f".{tail}.{os.getpid()}-{i}.hotbin-tmp")
            staged.append(tmp)
            try:
                write_image(tmp, img, fmt, text)
            except (OSError, ValueError, TypeError, KeyError) as exc:
                raise UserError(f"{path}: cannot write {fmt}: {exc}") from None
        for tmp, (path, *_) in zip(staged, files):
            os.replace(tmp, path)
    finally:
        for tmp in staged:
            if os.path.exists(tmp):
                os.remove(tmp)


def write_image(path, img, fmt=None, text=None) -> None:
    """Write pixels in their own depth: PNG by hotbin.render.png (with ``text`` chunks), other formats
    by Pillow (tifffile for 16-bit colour TIFF). ``fmt``: "PNG" or a Pillow format name; default
    from the suffix. Float pixels become 16-bit in PNG, float32 in TIFF."""
    from ..render import png

    fmt = output_format(path) if fmt is None else fmt
    if fmt in DATA:
        from . import geo

        (geo.write_netcdf if fmt == "NETCDF" else geo.write_geotiff)(path, img)
        return
    if fmt == "NPY":
        with open(path, "wb") as f:
            np.save(f, img)
        return
    if fmt == "PNG":
        if img.dtype.kind == "f":
            img = np.rint(np.clip(img.astype(np.float64), 0, 1) * 65535).astype(np.uint16)
        png.write(path, img, text=text)
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
