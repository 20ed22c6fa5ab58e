"""Minimal PNG reading and writing with NumPy and zlib (no imaging library needed)."""
from __future__ import annotations

import struct
import sys
import zlib

import numpy as np

from ._jit import lazy

_SIG = b"\x89PNG\r\n\x1a\n"
_COLOR = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type (gray, gray+alpha, RGB, RGBA)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode(image: np.ndarray, text=None) -> bytes:
    """PNG bytes of a ``(H, W)`` or ``(H, W, C)`` uint8/uint16 image, C in 1..4; row 0 on top.

    ``text``: ``{keyword: value}`` written as ``tEXt`` chunks before the image data (keywords
    of 1-79 printable Latin-1 characters without leading, trailing or double spaces; values
    Latin-1), as :func:`read_text` and Pillow's ``Image.text`` read them.
    """
    img = np.asarray(image)
    if img.ndim == 2:
        img = img[:, :, None]
    if img.ndim != 3 or img.shape[2] not in _COLOR:
        raise ValueError(f"image: expected (H, W) or (H, W, 1..4), got shape {image.shape}")
    if img.dtype not in (np.uint8, np.uint16):
        raise TypeError(f"image: expected uint8 or uint16, got {img.dtype}")
    h, w, c = img.shape
    depth = 8 * img.dtype.itemsize
    rows = np.ascontiguousarray(img, dtype=img.dtype.newbyteorder(">")).reshape(h, w * c).view(np.uint8)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rows], axis=1).tobytes()
    header = struct.pack(">IIBBBBB", w, h, depth, _COLOR[c], 0, 0, 0)
    chunks = b"".join(_chunk(b"tEXt", _text(k, v)) for k, v in (text or {}).items())
    return (_SIG + _chunk(b"IHDR", header) + chunks + _chunk(b"IDAT", zlib.compress(raw, 6))
            + _chunk(b"IEND", b""))


def _text(key, value) -> bytes:
    """The body of a ``tEXt`` chunk: keyword, NUL, text (both Latin-1)."""
    key, value = str(key), str(value)
    if not (1 <= len(key) <= 79) or key != key.strip() or "  " in key \
            or any(not (32 <= ord(c) <= 126 or 161 <= ord(c) <= 255) for c in key):
        raise ValueError(f"text: {key!r} is not a PNG keyword (1-79 printable Latin-1 characters)")
    try:
        return key.encode("latin-1") + b"\0" + value.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(f"text: the value of {key!r} is not Latin-1 text") from None


def write(path, image: np.ndarray, text=None) -> None:
    """Write ``image`` (see :func:`encode`, with its ``text`` chunks) to ``path``."""
    with open(path, "wb") as f:
        f.write(encode(image, text))


def read_text(path) -> dict:
    """The ``tEXt`` chunks of a PNG file as ``{keyword: value}``."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(_SIG):
        raise ValueError(f"{path}: not a PNG file")
    out = {}
    for kind, body in _chunks(data, path):
        if kind == b"tEXt" and b"\0" in body:
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
    return out


#: the pixel limit when Pillow has not been imported: Pillow's default ``Image.MAX_IMAGE_PIXELS``
DEFAULT_MAX_PIXELS = 1024 * 1024 * 1024 // 4 // 3
#: Adam7 interlace passes: first column, first row, column step, row step
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def max_pixels():
    """The most pixels :func:`read` accepts: Pillow's ``PIL.Image.MAX_IMAGE_PIXELS``.

    The value set there is honoured (``None`` turns the check off); when Pillow has
    not been imported it is Pillow's default, :data:`DEFAULT_MAX_PIXELS` (89,478,485).
    """
    pil = sys.modules.get("PIL.Image")
    return DEFAULT_MAX_PIXELS if pil is None else pil.MAX_IMAGE_PIXELS


def _passes(w, h, interlace):
    """(column, row, column step, row step, width, height) of each non-empty pass."""
    out = []
    for x0, y0, dx, dy in (_ADAM7 if interlace else ((0, 0, 1, 1),)):
        pw, ph = max(0, -(-(w - x0) // dx)), max(0, -(-(h - y0) // dy))
        if pw and ph:
            out.append((x0, y0, dx, dy, pw, ph))
    return out


def _chunks(data, path):
    """The (kind, body) chunks of PNG bytes after the signature, up to IEND."""
    pos = len(_SIG)
    while pos < len(data):
        if pos + 12 > len(data):
            raise ValueError(f"{path}: truncated PNG chunk")
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        if pos + 12 + n > len(data):
            raise ValueError(f"{path}: truncated PNG chunk {kind!r} ({n} bytes announced)")
        yield kind, data[pos + 8:pos + 8 + n]
        if kind == b"IEND":
            return
        pos += 12 + n


def _inflate(stream, size, path) -> np.ndarray:
    """Exactly ``size`` bytes of the zlib ``stream``, never decompressing more."""
    try:
        raw = zlib.decompressobj().decompress(stream, size)
    except zlib.error as exc:
        raise ValueError(f"{path}: corrupt PNG image data ({exc})") from None
    if len(raw) != size:
        raise ValueError(f"{path}: PNG image data is truncated ({len(raw)} of {size} bytes)")
    return np.frombuffer(raw, np.uint8)


def read(path) -> np.ndarray:
    """Read an 8/16-bit gray/RGB(A) PNG, interlaced or not (what :func:`write` produces, and more).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    ndarray, (H, W) or (H, W, C), uint8 or uint16

    Raises
    ------
    ValueError
        Not a PNG; an unsupported kind (palette, 1/2/4-bit); corrupt or truncated
        data; no pixels; or more pixels than :func:`max_pixels` (a possible
        decompression bomb). The size is checked from the header before anything
        is allocated or decompressed, and no more than the image's bytes are ever
        decompressed.
    """
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(_SIG):
        raise ValueError(f"{path}: not a PNG file")
    idat, header = [], None
    for kind, body in _chunks(data, path):
        if kind == b"IHDR" and len(body) == 13:
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    if header is None:
        raise ValueError(f"{path}: PNG without a header")
    w, h, depth, color, _, _, interlace = header
    channels = {v: k for k, v in _COLOR.items()}.get(color)
    if channels is None or depth not in (8, 16) or interlace > 1:
        raise ValueError(f"{path}: unsupported PNG (colour type {color}, depth {depth}, interlace {interlace})")
    limit = max_pixels()
    if w == 0 or h == 0:
        raise ValueError(f"{path}: PNG of {w}x{h} pixels has no pixels")
    if limit is not None and w * h > limit:
        raise ValueError(f"{path}: PNG of {w}x{h} pixels is over the limit of {limit} pixels "
                         "(PIL.Image.MAX_IMAGE_PIXELS): a possible decompression bomb")
    bpp = channels * depth // 8
    passes = _passes(w, h, interlace)
    raw = _inflate(b"".join(idat), sum(ph * (1 + pw * bpp) for *_, pw, ph in passes), path)
    out = np.empty((h, w * bpp), np.uint8) if interlace else None
    pos = 0
    for x0, y0, dx, dy, pw, ph in passes:
        rows = raw[pos:pos + ph * (1 + pw * bpp)].reshape(ph, 1 + pw * bpp)
        pos += rows.size
        if rows[:, 0].max() > 4:
            raise ValueError(f"{path}: corrupt PNG (row filter type {rows[:, 0].max()})")
        sub = _unfilter(rows, bpp)
        if interlace:
            out.reshape(h, w, bpp)[y0::dy, x0::dx] = sub.reshape(ph, pw, bpp)
        else:
            out = sub
    img = out.view(">u2").astype(np.uint16) if depth == 16 else out
    return img.reshape(h, w, channels) if channels > 1 else img.reshape(h, w)


@lazy(cache=True, nogil=True)
def _unfilter(raw, bpp):
    """Undo PNG's per-row filters (None, Sub, Up, Average, Paeth)."""
    h, n = raw.shape[0], raw.shape[1] - 1
    out = np.zeros((h, n), np.uint8)
    for r in range(h):
        ftype = raw[r, 0]
        for i in range(n):
            a = np.int32(out[r, i - bpp]) if i >= bpp else 0
            b = np.int32(out[r - 1, i]) if r > 0 else 0
            c = np.int32(out[r - 1, i - bpp]) if (r > 0 and i >= bpp) else 0
            if ftype == 0:
                pred = 0
            elif ftype == 1:
                pred = a
            elif ftype == 2:
                pred = b
            elif ftype == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if (pa <= pb and pa <= pc) else (b if pb <= pc else c)
            out[r, i] = (np.int32(raw[r, i + 1]) + pred) & 0xFF
    return out
