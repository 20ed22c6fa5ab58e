"""Minimal PNG reading and writing with NumPy and zlib (no imaging library needed)."""
from __future__ import annotations

import struct
import zlib

import numpy as np

from ._jit import lazy

_SIG = b"\x89PNG\r\n\x1a\n"
_COLOR = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type (gray, gray+alpha, RGB, RGBA)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode(image: np.ndarray) -> bytes:
    """PNG bytes of a ``(H, W)`` or ``(H, W, C)`` uint8/uint16 image, C in 1..4; row 0 on top."""
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
    return _SIG + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b"")


def write(path, image: np.ndarray) -> None:
    """Write ``image`` (see :func:`encode`) to ``path``."""
    with open(path, "wb") as f:
        f.write(encode(image))


def read(path) -> np.ndarray:
    """Read a non-interlaced 8/16-bit gray/RGB(A) PNG (what :func:`write` produces)."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(_SIG):
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    if header is None:
        raise ValueError(f"{path}: PNG without a header")
    w, h, depth, color, _, _, interlace = header
    channels = {v: k for k, v in _COLOR.items()}.get(color)
    if channels is None or depth not in (8, 16) or interlace:
        raise ValueError(f"{path}: unsupported PNG (colour type {color}, depth {depth}, interlace {interlace})")
    bpp = channels * depth // 8
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(h, 1 + w * bpp)
    out = _unfilter(raw, bpp)
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
