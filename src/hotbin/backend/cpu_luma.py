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

__all__ = ["luma_histogram"]

# --- tuning (benchmarks/luma_cpu.py) -- own constants: cpu.py imports this module
#: interleaved private copies of the 256 counters (as cpu.NSUB: a constant image
#: would otherwise serialize every increment on one counter)
NSUB = 4
#: fewest pixels per parallel task (below it, task start-up costs more than it saves)
MIN_PER_THREAD = 1 << 15
#: pixels per task at most: keeps the private int32 counters from overflowing
MAX_TASK_PIXELS = 1 << 30
_LITTLE = sys.byteorder == "little"
#: the Rec. 709 rule, level = (2126*R + 7152*G + 722*B) // 10000, as three product
#: tables (one add chain per pixel instead of three multiplies: 1.4x on one core,
#: benchmarks/luma_cpu.py); at most 2,550,000, exact in uint32
_WEIGHTS = np.array([2126, 7152, 722], np.uint32)
_DIVISOR = np.uint32(10000)
_TABLES = np.arange(256, dtype=np.uint32)[None, :] * _WEIGHTS[:, None]  # (3, 256)


@njit(inline="always")
def _flush(h, part):
    for k in range(NSUB):
        for v in range(256):
            part[v] += h[k, v]


@njit(inline="always")
def _merge(part, ntasks, out):
    for t in range(part.shape[0]):
        out[t // ntasks] += part[t]


@njit(parallel=True, cache=True, nogil=True)
def _luma_rgba(words, ntasks, tables, out):
    """words: (N, P) uint32 little-endian RGBA pixels, one load each; out: (N, 256) int64."""
    nimg, npix = words.shape
    step = (npix + ntasks - 1) // ntasks
    tr, tg, tb = tables[0], tables[1], tables[2]
    part = np.zeros((nimg * ntasks, 256), np.int64)
    for t in prange(nimg * ntasks):
        px = words[t // ntasks]
        h = np.zeros((NSUB, 256), np.int32)
        start = (t % ntasks) * step
        for j in range(start, min(npix, start + step)):
            w = px[j]
            h[j & (NSUB - 1), (tr[w & 0xFF] + tg[(w >> 8) & 0xFF] + tb[(w >> 16) & 0xFF]) // _DIVISOR] += 1
        _flush(h, part[t])
    _merge(part, ntasks, out)


@njit(parallel=True, cache=True, nogil=True)
def _luma_rgb(px3, ntasks, tables, out):
    """px3: (N, P*3) uint8 RGB bytes; out: (N, 256) int64."""
    nimg = px3.shape[0]
    npix = px3.shape[1] // 3
    step = (npix + ntasks - 1) // ntasks
    tr, tg, tb = tables[0], tables[1], tables[2]
    part = np.zeros((nimg * ntasks, 256), np.int64)
    for t in prange(nimg * ntasks):
        px = px3[t // ntasks]
        h = np.zeros((NSUB, 256), np.int32)
        start = (t % ntasks) * step
        for j in range(start, min(npix, start + step)):
            o = 3 * j
            h[j & (NSUB - 1), (tr[px[o]] + tg[px[o + 1]] + tb[px[o + 2]]) // _DIVISOR] += 1
        _flush(h, part[t])
    _merge(part, ntasks, out)


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
        _luma_rgba(img.reshape(n, h * w * 4).view(np.uint32), ntasks, _TABLES, out)
    else:
        _luma_rgb(np.ascontiguousarray(img[..., :3]).reshape(n, h * w * 3) if c == 4 else
                  img.reshape(n, h * w * 3), ntasks, _TABLES, out)
    return out
