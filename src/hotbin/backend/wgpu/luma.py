"""Luma histograms of uint8 RGB(A) batches on the device (luma.wgsl), chunk by chunk.

A chunk holds whole pixels of consecutive images; each image of the chunk gets one row of
workgroups and its own 256 64-bit counters, added into the result on the host.
"""
from __future__ import annotations

import numpy as np

from .device import gpu, pow2_floor, words64
from .tuning import LUMA_COPIES, WG

#: luma levels, one counter each
LEVELS = 256
#: bytes of one image's 64-bit level counters: the images of a chunk fill at most one binding
OUT_BYTES = LEVELS * 8
#: chunks start on 4-pixel boundaries: 4 RGB pixels are 12 bytes, whole u32 words
PX_ALIGN = 4
#: luma.wgsl indexes an image's pixels in u32
MAX_PIXELS = 1 << 31


def luma_histogram(img) -> np.ndarray:
    """Histograms of exact Rec. 709 luma levels of uint8 RGB(A) images.

    ``img`` is ``(H, W, C)`` or a batch ``(N, H, W, C)`` with ``C`` 3 or 4;
    ``level = (2126 R + 7152 G + 722 B) // 10000`` (alpha ignored). Returns int64
    counts, ``(256,)`` or ``(N, 256)``, exact and deterministic; NotImplemented for
    images of 2**31 pixels or more.
    """
    img = np.asarray(img)
    if img.dtype != np.uint8:
        raise TypeError(f"img: expected uint8 pixels, got dtype {img.dtype}")
    if img.ndim not in (3, 4) or img.shape[-1] not in (3, 4):
        raise ValueError(f"img: expected shape (H, W, C) or (N, H, W, C) with C in (3, 4), "
                         f"got {img.shape}")
    batch = img if img.ndim == 4 else img[None]
    out = _luma(np.ascontiguousarray(batch))
    if out is NotImplemented:
        return out
    return out if img.ndim == 4 else out[0]


def _luma(batch: np.ndarray) -> np.ndarray:
    g = gpu()
    n, h, w, c = batch.shape
    ppi = h * w
    out = np.zeros((n, LEVELS), np.int64)
    if n == 0 or ppi == 0:
        return out
    if ppi >= MAX_PIXELS:
        return NotImplemented
    flat = batch.reshape(-1)
    total = n * ppi
    step_px = max(PX_ALIGN, g.binding // c // PX_ALIGN * PX_ALIGN)
    max_imgs = max(1, min(g.max_groups, g.binding // OUT_BYTES))  # one workgroup row per image
    copies = min(LUMA_COPIES, pow2_floor(g.wg_words // LEVELS))
    pipe = g.pipeline("luma", "luma_hist", WG=WG, COPIES=copies, C=c)
    buf = g.take(min(total, step_px) * c)
    try:
        _chunks(g, pipe, buf, flat, out, ppi, c, step_px, max_imgs)
    finally:
        g.give(buf)
    return out


def _chunks(g, pipe, buf, flat, out, ppi, c, step_px, max_imgs):
    """Count the chunks of whole pixels of ``flat`` into ``out``, one submission and one
    read-back of pooled counters each."""
    total = out.shape[0] * ppi
    p0 = 0
    while p0 < total:
        img0 = p0 // ppi
        p1 = min(total, p0 + step_px, (img0 + max_imgs) * ppi)
        if p1 < total:
            p1 = max(p1 // PX_ALIGN * PX_ALIGN, min(total, p0 + PX_ALIGN))
        off0 = p0 - img0 * ppi
        nimg = -(-(off0 + p1 - p0) // ppi)
        g.upload(buf, flat[p0 * c:p1 * c])
        enc = g.device.create_command_encoder()
        obuf = g.zeros(nimg * OUT_BYTES, enc)
        per = max(1, min(g.workgroups // nimg, -(-ppi // WG), g.max_groups))
        params = np.array([off0, ppi, p1 - p0, 0], np.uint32).tobytes()
        g.run("luma", pipe, params, {2: buf, 4: obuf}, (per, nimg), enc)
        out[img0:img0 + nimg] += words64(g.read(obuf, nimg * OUT_BYTES, enc, recycle=True)).reshape(
            nimg, LEVELS)
        p0 = p1
