"""The cpu backend's fused luma histogram: RGB(A) bytes in, 256 luma counts per image out.

One pass over the pixels, no luma plane: each parallel task takes a run of one
image's pixels, reads each pixel once (an RGBA pixel as one 32-bit word), computes
the exact Rec. 709 level ``(2126*R + 7152*G + 722*B) // 10000`` in unsigned
integers and counts it in a private histogram (``NSUB`` interleaved copies, so a
run of one hot level does not serialize on one counter). Tasks' partials are
summed per image at the end (DESIGN.md §1.2). :mod:`hotbin.images` owns the rule
and documents it; this is the cpu backend's copy, tested against it.
"""
from __future__ import annotations

import sys

import numba
import numpy as np
from numba import njit, prange

from .cpu import MIN_PER_THREAD, NSUB

__all__ = ["luma_histogram"]

#: pixels per task at most: keeps the private int32 counters from overflowing
MAX_TASK_PIXELS = 1 << 30
_LITTLE = sys.byteorder == "little"


@njit(inline="always")
def _level(r, g, b):
    return (np.uint32(2126) * np.uint32(r) + np.uint32(7152) * np.uint32(g)
            + np.uint32(722) * np.uint32(b)) // np.uint32(10000)


@njit(parallel=True, cache=True, nogil=True)
def _luma_rgba(words, ntasks, out):
    """words: (N, P) uint32 little-endian RGBA pixels; out: (N, 256) int64."""
    nimg, npix = words.shape
    step = (npix + ntasks - 1) // ntasks
    part = np.zeros((nimg * ntasks, 256), np.int64)
    for t in prange(nimg * ntasks):
        px = words[t // ntasks]
        h = np.zeros((NSUB, 256), np.int32)
        start = (t % ntasks) * step
        for j in range(start, min(npix, start + step)):
            w = px[j]
            h[j & (NSUB - 1), _level(w & 0xFF, (w >> 8) & 0xFF, (w >> 16) & 0xFF)] += 1
        for k in range(NSUB):
            for v in range(256):
                part[t, v] += h[k, v]
    for i in range(nimg):
        for t in range(ntasks):
            out[i] += part[i * ntasks + t]


@njit(parallel=True, cache=True, nogil=True)
def _luma_rgb(px3, ntasks, out):
    """px3: (N, P*3) uint8 RGB bytes; out: (N, 256) int64."""
    nimg = px3.shape[0]
    npix = px3.shape[1] // 3
    step = (npix + ntasks - 1) // ntasks
    part = np.zeros((nimg * ntasks, 256), np.int64)
    for t in prange(nimg * ntasks):
        px = px3[t // ntasks]
        h = np.zeros((NSUB, 256), np.int32)
        start = (t % ntasks) * step
        for j in range(start, min(npix, start + step)):
            o = 3 * j
            h[j & (NSUB - 1), _level(px[o], px[o + 1], px[o + 2])] += 1
        for k in range(NSUB):
            for v in range(256):
                part[t, v] += h[k, v]
    for i in range(nimg):
        for t in range(ntasks):
            out[i] += part[i * ntasks + t]


def _tasks(nimg: int, npix: int) -> int:
    """Tasks per image: enough for every thread, none smaller than MIN_PER_THREAD pixels."""
    threads = numba.get_num_threads()
    per_image = max(1, -(-threads // max(nimg, 1)))
    per_image = min(per_image, max(1, npix // MIN_PER_THREAD))
    return max(per_image, -(-npix // MAX_TASK_PIXELS))


def luma_histogram(img) -> np.ndarray:
    """Luma counts of a batch of 8-bit colour images.

    Parameters
    ----------
    img : ndarray of uint8, shape (N, H, W, C), C in {3, 4}
        RGB or RGBA; alpha is ignored. Any layout (copied to C order if needed).

    Returns
    -------
    ndarray of int64, shape (N, 256)
        ``out[n, v]`` = number of pixels of image ``n`` whose level
        ``(2126*R + 7152*G + 722*B) // 10000`` is ``v``. Exact and deterministic.
    """
    img = np.asarray(img)
    if img.ndim != 4 or img.shape[3] not in (3, 4) or img.dtype != np.uint8:
        raise ValueError(f"img: expected uint8 (N, H, W, 3|4), got {img.dtype} {img.shape}")
    n, h, w, c = img.shape
    out = np.zeros((n, 256), np.int64)
    if n == 0 or h * w == 0:
        return out
    img = np.ascontiguousarray(img)
    ntasks = _tasks(n, h * w)
    if c == 4 and _LITTLE:
        _luma_rgba(img.reshape(n, h * w * 4).view(np.uint32), ntasks, out)
    else:
        _luma_rgb(np.ascontiguousarray(img[..., :3]).reshape(n, h * w * 3) if c == 4 else
                  img.reshape(n, h * w * 3), ntasks, out)
    return out
