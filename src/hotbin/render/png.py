"""Minimal PNG reading and writing with NumPy and zlib (no imaging library needed)."""
from __future__ import annotations

import struct
import sys
import zlib

import numpy as np

from ..core._jit import lazy

_SIG = b"\x89PNG\r\n\x1a\n"
_COLOR = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type (gray, gray+alpha, RGB, RGBA)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode(image: np.ndarray, text=None, level: int = 6, threads: int = 1) -> bytes:
    """PNG bytes of a ``(H, W)`` or ``(H, W, C)`` uint8/uint16 image, C in 1..4; row 0 on top.

    ``text``: ``{keyword: value}`` written as ``tEXt`` chunks before the image data (keywords
    of 1-79 printable Latin-1 characters without leading, trailing or double spaces; values
    Latin-1), as :func:`read_text` and Pillow's ``Image.text`` read them. ``level``: deflate
    level. ``threads > 1`` deflates bands of rows on that many threads (zlib releases the
    GIL) into raw blocks ending on a byte boundary, joined into one zlib stream as pigz does:
    the same picture for any decoder, for a live view (``hotbin serve``) that is sent once.
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
    header = struct.pack(">IIBBBBB", w, h, depth, _COLOR[c], 0, 0, 0)
    chunks = b"".join(_chunk(b"tEXt", _text(k, v)) for k, v in (text or {}).items())
    return (_SIG + _chunk(b"IHDR", header) + chunks + _chunk(b"IDAT", _zlib(rows, level, threads))
            + _chunk(b"IEND", b""))


#: rows per band at least when deflating in bands (smaller bands lose compression at each restart)
BAND_ROWS = 64
_POOL = None


def _scanlines(rows: np.ndarray) -> bytes:
    raw = np.empty((rows.shape[0], rows.shape[1] + 1), np.uint8)
    raw[:, 0] = 0  # filter type None
    raw[:, 1:] = rows
    return raw.tobytes()


def _zlib(rows: np.ndarray, level: int, threads: int) -> bytes:
    """The zlib stream of the scanlines of ``rows``: one stream, or bands on ``threads``."""
    k = max(1, min(threads, rows.shape[0] // BAND_ROWS))
    if k == 1:
        return zlib.compress(_scanlines(rows), level)
    global _POOL
    if _POOL is None or _POOL._max_workers < k:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(k, thread_name_prefix="hotbin-png")
    cuts = np.linspace(0, rows.shape[0], k + 1).astype(int)

    def band(i):
        data = _scanlines(rows[cuts[i]:cuts[i + 1]])
        c = zlib.compressobj(level, zlib.DEFLATED, -15)
        out = c.compress(data) + c.flush(zlib.Z_FINISH if i == k - 1 else zlib.Z_SYNC_FLUSH)
        return out, zlib.adler32(data), len(data)

    parts = list(_POOL.map(band, range(k)))
    adler = 1
    for _, a, n in parts:
        adler = _adler_combine(adler, a, n)
    return b"\x78\x01" + b"".join(p for p, _, _ in parts) + struct.pack(">I", adler)


def _adler_combine(a1: int, a2: int, len2: int) -> int:
    """adler32 of the concatenation of two byte strings, from theirs (zlib's adler32_combine)."""
    base = 65521
    rem = len2 % base
    s1 = a1 & 0xFFFF
    s2 = (rem * s1) % base
    s1 = (s1 + (a2 & 0xFFFF) + base - 1) % base
    s2 = (s2 + ((a1 >> 16) & 0xFFFF) + ((a2 >> 16) & 0xFFFF) + base - rem) % base
    return (s2 << 16) | s1


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
