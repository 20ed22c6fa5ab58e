"""The fused luminance histogram of 8-bit RGB(A) images: ``hotbin/kernels/luma.cu``."""
from __future__ import annotations

import numpy as np

from .runtime import cupy, device_info, kernel, launch

__all__ = ["batch", "luma_histogram", "ci_name_expressions"]

#: threads per block (luma.cu's template argument), blocks per SM, fewest pixels per block.
#: At the read floor (benchmarks/gpu_spatial.py's luma rows; results/gpu-h200.md, luma.py).
LUMA_THREADS = 512
LUMA_BLOCKS_PER_SM = 4
LUMA_MIN_PIXELS = 1 << 16
LUMA_MAX_PIXELS = 1 << 31  #: 32-bit per-block counters
_EXPRS = tuple(f"luma_histogram<{c}, {LUMA_THREADS}>" for c in (3, 4))


def ci_name_expressions() -> dict[str, list[str]]:
    """Every instantiation of luma.cu this module launches (for .ci/compile_kernels.py)."""
    return {"luma.cu": list(_EXPRS)}


def batch(a):
    """``a`` as a batch ``(N, H, W, C)`` of uint8 RGB(A) images (one ``(H, W, C)`` image: N = 1)."""
    if a.dtype != np.uint8:
        raise TypeError(f"img: expected uint8 pixels, got dtype {a.dtype}")
    if a.ndim == 3:
        a = a[None]
    if a.ndim != 4 or a.shape[-1] not in (3, 4):
        raise ValueError(f"img: expected (N, H, W, C) with C 3 or 4, got shape {tuple(a.shape)}")
    return a


def luma_histogram(img):
    """``(N, 256)`` int64 counts of the Rec. 709 luma levels of uint8 RGB(A) images.

    ``img`` is ``(N, H, W, C)`` (or one ``(H, W, C)`` image, giving ``(1, 256)``),
    uint8, ``C`` 3 or 4; any layout (copied to C order when needed). The level of a
    pixel is ``(2126*R + 7152*G + 722*B) // 10000`` in exact integers: a gray pixel
    ``(v, v, v)`` has level ``v``, white 255; alpha is ignored. Counts are exact
    (64-bit) and reproducible. One launch reads every pixel once.
    """
    cp = cupy()
    a = batch(cp.asarray(img))
    nimg, c = a.shape[0], a.shape[-1]
    npix = a.shape[1] * a.shape[2]
    out = cp.zeros((nimg, 256), cp.uint64)
    if nimg and npix:
        a = cp.ascontiguousarray(a)
        if a.data.ptr % 16:
            a = a.copy()
        sms = device_info(a.device.id)["sms"]
        parts = -(-sms * LUMA_BLOCKS_PER_SM // nimg)
        parts = max(1, min(parts, -(-npix // LUMA_MIN_PIXELS)))
        parts = max(parts, -(-npix // LUMA_MAX_PIXELS))
        kern = kernel("luma.cu", _EXPRS[c - 3], _EXPRS)
        with a.device:
            launch(kern, nimg * parts, LUMA_THREADS, (a, np.uint64(npix), np.uint32(parts), out))
    return out.view(cp.int64)
