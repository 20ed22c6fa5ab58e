"""The cpu backend's fused luma histogram: RGB(A) bytes in, 256 luma counts per image out.

No luma plane: each parallel task takes a run of one image's pixels and walks it
in blocks of ``BLOCK`` pixels. For a block it first computes the exact Rec. 709
levels ``(2126*R + 7152*G + 722*B) // 10000`` in unsigned 32-bit integers into a
small byte buffer that stays in L1 (a loop LLVM vectorizes: an RGBA pixel is one
32-bit load), then counts the buffer into a private histogram (``NSUB``
interleaved copies, so a run of one hot level does not serialize on one counter).
Tasks' partials are summed per image at the end (DESIGN.md §1.2). The pixels are
read from memory once. :mod:`hotbin.images` owns the rule and documents it; this is
the cpu backend's copy, tested against it.
"""
from __future__ import annotations

import sys

import numpy as np

from ...core._jit import njit
from .chunks import readonly
from .parallel import MIN_PER_THREAD, Kernel, threads

__all__ = ["luma_histogram"]

# --- tuning (benchmarks/luma_cpu.py) ------------------------------------------
#: interleaved private copies of the 256 counters (a constant image would otherwise
#: serialize every increment on one counter)
NSUB = 4
#: pixels per block: levels computed a block at a time (vectorized) into an L1-sized
#: buffer, then counted: faster than one loop that computed and counted each pixel
#: (results/probes-cpu.md, luma.py).
BLOCK = 4096
#: pixels per task at most: keeps the private int32 counters from overflowing
MAX_TASK_PIXELS = 1 << 30
_LITTLE = sys.byteorder == "little"
_WR, _WG, _WB, _DIV = (np.uint32(v) for v in (2126, 7152, 722, 10000))  # at most 2,550,000


@njit(nogil=True, cache=True)
def _levels_rgba(words, buf):
    """buf[j] = level of the little-endian RGBA word words[j] (alpha ignored)."""
    for j in range(words.size):
        w = words[j]
        num = ((w & np.uint32(0xFF)) * _WR + ((w >> np.uint32(8)) & np.uint32(0xFF)) * _WG
               + ((w >> np.uint32(16)) & np.uint32(0xFF)) * _WB)
        buf[j] = np.uint8(num // _DIV)


@njit(nogil=True, cache=True)
def _levels_rgb(px, buf):
    """buf[j] = level of the RGB bytes px[3j:3j+3]."""
    for j in range(px.size // 3):
        num = np.uint32(px[3 * j]) * _WR + np.uint32(px[3 * j + 1]) * _WG + np.uint32(px[3 * j + 2]) * _WB
        buf[j] = np.uint8(num // _DIV)


@njit(inline="always")
def _count(buf, m, h):
    for j in range(m):
        h[j & (NSUB - 1), buf[j]] += 1


@njit(inline="always")
def _flush(h, part):
    for k in range(NSUB):
        for v in range(256):
            part[v] += h[k, v]


@Kernel
def _luma_rgba(words, ntasks, part, t, nt):
    """words: (N, P) uint32 little-endian RGBA pixels; part: (N * ntasks, 256) int64 zeros,
    a row per task (task ``u`` takes run ``u % ntasks`` of image ``u // ntasks``)."""
    npix = words.shape[1]
    step = (npix + ntasks - 1) // ntasks
    h = np.empty((NSUB, 256), np.int32)
    buf = np.empty(BLOCK, np.uint8)
    for u in range(t, part.shape[0], nt):
        px = words[u // ntasks]
        h[:] = 0
        stop = min(npix, (u % ntasks + 1) * step)
        for b0 in range((u % ntasks) * step, stop, BLOCK):
            b1 = min(stop, b0 + BLOCK)
            _levels_rgba(px[b0:b1], buf)
            _count(buf, b1 - b0, h)
        _flush(h, part[u])


@Kernel
def _luma_rgb(px3, ntasks, part, t, nt):
    """px3: (N, P*3) uint8 RGB bytes; part as :func:`_luma_rgba`'s."""
    npix = px3.shape[1] // 3
    step = (npix + ntasks - 1) // ntasks
    h = np.empty((NSUB, 256), np.int32)
    buf = np.empty(BLOCK, np.uint8)
    for u in range(t, part.shape[0], nt):
        px = px3[u // ntasks]
        h[:] = 0
        stop = min(npix, (u % ntasks + 1) * step)
        for b0 in range((u % ntasks) * step, stop, BLOCK):
            b1 = min(stop, b0 + BLOCK)
            _levels_rgb(px[3 * b0:3 * b1], buf)
            _count(buf, b1 - b0, h)
        _flush(h, part[u])


def _tasks(nimg: int, npix: int) -> int:
    """Tasks per image: enough for every thread, none smaller than MIN_PER_THREAD pixels
    (below it, task start-up costs more than it saves)."""
    per_image = max(1, -(-threads() // max(nimg, 1)))
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
    img = readonly(np.ascontiguousarray(img))  # one kernel for writable and read-only images
    ntasks = _tasks(n, h * w)
    part = np.zeros((n * ntasks, 256), np.int64)
    if c == 4 and _LITTLE:
        _luma_rgba(n * h * w, img.reshape(n, h * w * 4).view(np.uint32), ntasks, part)
    else:
        _luma_rgb(n * h * w, np.ascontiguousarray(img[..., :3]).reshape(n, h * w * 3) if c == 4 else
                  img.reshape(n, h * w * 3), ntasks, part)
    return part.reshape(n, ntasks, 256).sum(axis=1, out=out)
