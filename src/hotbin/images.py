"""Image histograms: luminance, its histogram, equalization, channel histograms, percentiles.

An ops module (DESIGN.md §2): it composes the backend primitives (counts of integer
levels, scan) and the bin rule of :mod:`hotbin.binning`, and launches no kernel of its own. A backend may offer the optional
fused primitive ``luma_histogram(img) -> (N, 256) int64`` for uint8 ``(N, H, W, C)``
images with C in {3, 4}; it is used when present.

The luma rule is :mod:`hotbin.luma`'s.

Histogram bins
--------------
``bins`` equal-width bins over the levels ``[0, 2**depth)``, placed by
:mod:`hotbin.binning` exactly as ``numpy.histogram(level, bins, range=(0, 2**depth))``.
So ``bins=256`` on an 8-bit image is one level per bin, and on a 16-bit or float
image 256 levels per bin (``level >> 8``). Every level lands in a bin.

Arrays stay where they are: NumPy in, NumPy out; CuPy or torch CUDA tensors are
processed on their GPU and the results come back as the same kind of array.
"""
from __future__ import annotations

import numpy as np

from . import luma
from .arrays import adapt, dask_array, restore
from .blocks import Plan
from .luma import FLOAT_TOP
from .plan import executor
from .reductions import COUNT
from .binning import positive_int
from .pillow import is_pillow, pillow_pixels

__all__ = ["luminance", "luminance_histogram", "equalize", "channel_histograms", "percentiles",
           "FLOAT_TOP"]


def luminance(image, *, levels=False):
    """The luma plane of an image or batch (see the module's luma rule).

    Parameters
    ----------
    image : array, (H, W), (H, W, C) or (N, H, W, C)
    levels : bool
        Return the integer levels (uint8 for 8-bit images, uint16 for 16-bit and
        float ones) instead of values in the image's own units.

    Returns
    -------
    array, (H, W) or (N, H, W)
        uint8/uint16 images: the integer levels, same dtype as the image. Float
        images: ``level / 65280`` in float32 (float16 and float32 input) or float64,
        so a float gray image already on the 8.8 grid (``level / 65280``, among them
        ``k / 255``) comes back unchanged.
        Same kind of array and device as ``image``.
    """
    be, img = luma.load(image, None)
    lv = luma.levels(img.data, img.depth)
    if img.is_float and not levels:
        ft = np.result_type(img.data.dtype, np.float32)
        lv = lv.astype(ft) / ft.type(luma.FLOAT_TOP)
    return restore(lv if img.batch else lv[0], like=image)


def luminance_histogram(image, bins=256, *, backend=None):
    """Histogram of luma levels: ``(bins,)``, or ``(N, bins)`` for a batch.

    Parameters
    ----------
    image : array, (H, W), (H, W, C) or (N, H, W, C)
        uint8, uint16 or float in [0, 1] (see the module's luma rule).
    bins : int
        Equal-width bins over the levels ``[0, 2**depth)`` (depth 8 for uint8, 16
        otherwise), as ``numpy.histogram(level, bins, range=(0, 2**depth))``:
        ``bins=256`` on uint8 is one bin per level, white in bin 255.
    backend : {"cpu", "cuda", "wgpu"}, optional
        Defaults to ``$HOTBIN_BACKEND``, else the device of ``image``.

    Returns
    -------
    array of int64
        Counts; each row sums to H*W. Exact, deterministic, identical on every
        backend, never overflowing. Same kind of array and device as ``image``
        (a lazy dask array for a dask image).
    """
    nb = positive_int(bins, "bins")
    if is_pillow(image):
        image = pillow_pixels(image)
    ex = executor(backend, image)
    if ex.lazy:
        return _lazy_luma(ex, ex.array(image, "image"), nb)
    img = luma.parse(ex.array(image))
    h = luma.fold(luma.level_counts(ex.be, img), nb, img.levels)
    return ex.restore(h if img.batch else h[0], image)


def _lazy_luma(ex, a, nb):
    """:func:`luminance_histogram` of a dask image or batch, lazy: per-chunk histograms of the
    luma levels are summed (exact), one plan per chunk of images of a batch."""
    if a.ndim not in (2, 3, 4):
        raise ValueError(f"image: expected (H, W), (H, W, C) or a batch (N, H, W, C), got shape {a.shape}")
    probe = np.zeros((1,) * (a.ndim - 1) + (a.shape[-1] if a.ndim >= 3 else 1,), a.dtype)
    luma.parse(probe if a.ndim >= 3 else probe.reshape(1, 1))  # the in-memory checks and errors, now
    if a.ndim >= 3:
        a = a.rechunk({a.ndim - 1: -1})

    def block(be, chunk):
        img = luma.parse(chunk)
        return (luma.fold(luma.level_counts(be, img), nb, img.levels),)

    if a.ndim < 4:
        return ex.run(Plan(lambda be, c: (block(be, c)[0][0],), ((COUNT, (nb,)),)), a)[0]
    start = 0
    rows = []
    for n in a.chunks[0]:
        rows.append(ex.run(Plan(block, ((COUNT, (n, nb)),)), a[start:start + n])[0])
        start += n
    return dask_array().concatenate(rows) if rows else dask_array().zeros((0, nb), np.int64)


def channel_histograms(image, bins=256, *, backend=None):
    """One histogram per channel: ``(C, bins)``, or ``(N, C, bins)`` for a batch.

    Every channel is counted, alpha included; a 2-D gray image has C = 1. Channel
    values are levels as in the luma rule (float channels put on the 8.8 grid) and
    ``bins`` are placed as in :func:`luminance_histogram`. int64 counts, exact.
    """
    nb = positive_int(bins, "bins")
    be, img = luma.load(image, backend)
    x = img.data
    counts = np.zeros((x.shape[0], img.channels, img.levels), np.int64, like=x)
    for i in range(x.shape[0]):
        for rows in luma.row_blocks(x[i]):
            q = luma.quantize(x[i, rows])
            for k in range(img.channels):
                counts[i, k] += luma.count_levels(be, q[..., k], img.levels)
    h = luma.fold(counts, nb, img.levels)
    return restore(h if img.batch else h[0], like=image)


def percentiles(image, q, *, backend=None):
    """Luma percentiles from the cumulative histogram.

    The ``q``-th percentile is the lowest level ``L`` whose cumulative count
    reaches the share ``q / 100`` of the pixels and at least one pixel:
    ``cdf[L] >= max(n * (q / 100), 1)``, compared in float64 — NumPy's
    ``percentile(luma, q, method="inverted_cdf")``. So ``q=0`` is the darkest
    level present and ``q=100`` the brightest; no interpolation between levels.

    Parameters
    ----------
    image : array, (H, W), (H, W, C) or (N, H, W, C); at least one pixel
    q : float or sequence of floats in [0, 100]

    Returns
    -------
    array, shape ``q``'s shape, with a leading N for a batch
        Integer images: levels (int64). Float images: ``level / 65280`` (float64).
    """
    qa = np.asarray(q, dtype=np.float64)
    if qa.ndim > 1:
        raise ValueError(f"q: expected a number or a 1-D sequence, got shape {qa.shape}")
    if not bool(np.all((qa >= 0) & (qa <= 100))):
        raise ValueError("q: percentiles must be in the range [0, 100]")
    be, img = luma.load(image, backend)
    if img.data.shape[1] * img.data.shape[2] == 0:
        raise ValueError("image: has no pixels; percentiles need at least one")
    cdf = luma.cdf(be, luma.level_counts(be, img))
    total = cdf[:, -1:].astype(np.float64)
    thr = np.maximum(total * np.asarray(qa.reshape(-1) / 100.0, like=total), 1.0)  # (N, Q)
    level = (cdf[:, :, None] < thr[:, None, :]).sum(axis=1)  # levels below the threshold
    out = level.astype(np.float64) / luma.FLOAT_TOP if img.is_float else level.astype(np.int64)
    out = out.reshape(out.shape[:1] + qa.shape)
    return restore(out if img.batch else out[0], like=image)


def _equalize_lut(be, img: luma.Image):
    """(N, levels) int64 lookup tables from each image's CDF.

    ``lut[v] = round((cdf[v] - cdf_min) * top / (n - cdf_min))`` in integers
    (halves up), clipped to [0, top], where ``cdf_min`` is the count of the
    darkest level present; an image of one level maps to itself.
    """
    top = img.top
    cdf = luma.cdf(be, luma.level_counts(be, img))
    total = cdf[:, -1:]
    cmin = np.where(cdf > 0, cdf, total).min(axis=1, keepdims=True)
    span = total - cmin
    safe = np.maximum(span, 1)
    lut = ((cdf - cmin) * (2 * top) + safe) // (2 * safe)
    ident = np.arange(img.levels, dtype=np.int64, like=cdf)[None, :]
    return np.where(span > 0, np.clip(lut, 0, top), ident)


def _equalize_one(x, lut, top):
    """Equalize one (H, W, C) image's levels (``top``: white); returns new channel levels (float64 or int)."""
    q = luma.quantize(x)
    if q.shape[-1] < 3:
        return lut[q[..., :1].astype(np.intp)]
    top = float(top)
    num = luma.luma_numerator(q)
    target = lut[(num // np.uint32(luma.LUMA_DIVISOR)).astype(np.intp)].astype(np.float64)
    black = num == 0
    y = num.astype(np.float64)
    y /= luma.LUMA_DIVISOR
    y[black] = 1.0
    peak = np.maximum(np.maximum(q[..., 0], q[..., 1]), q[..., 2]).astype(np.float64)
    peak[black] = 1.0
    gain = np.minimum(target / y, top / peak)  # black pixels: gain target, on zero channels
    new = q[..., :3].astype(np.float64)
    new *= gain[..., None]
    np.rint(new, out=new)
    np.clip(new, 0.0, top, out=new)
    new[black] = target[black][:, None]
    return new


def equalize(image, *, backend=None):
    """Histogram equalization of the luma: same shape, dtype and kind of array out.

    Each image's luma histogram (one bin per level) is scanned into a CDF
    (:func:`hotbin.cumsum`) and turned into a monotone lookup table (see
    ``_equalize_lut``): the darkest level present goes to 0, the brightest to the
    top level, the levels in between spread by their share of pixels.

    * Gray images (C = 1, 2): the table is applied to the gray channel.
    * Colour images: each pixel's RGB is scaled by ``new_luma / old_luma``, with
      ``old_luma = (2126 R + 7152 G + 722 B) / 10000`` (exact, not floored) and
      ``new_luma`` the table's level, so the ratios R:G:B (hue and saturation)
      are kept. Where a channel would pass the top level the gain is lowered until
      the largest channel is exactly the top (hue still kept; that pixel ends up
      darker than its target). Black pixels become gray at their target level.
      Channels are rounded half to even in float64.
    * Alpha is copied unchanged. Batches equalize each image by its own histogram.
    * Float images are quantized by the luma rule and come back on the 16-bit
      grid: ``new_level / 65280``, in the image's dtype (top level 65280).
    * A Pillow image is equalized as its pixels (:func:`~hotbin.pillow.pillow_pixels`) and comes
      back as a NumPy array.
    """
    if is_pillow(image):
        image = pillow_pixels(image)
    be, img = luma.load(image, backend)
    src = adapt(be, image)
    out = np.empty(src.shape, src.dtype, like=src)
    view = out.reshape(img.data.shape)
    lut = _equalize_lut(be, img) if img.data.shape[0] else None
    for i in range(img.data.shape[0]):
        for rows in luma.row_blocks(img.data[i]):
            x = img.data[i, rows]
            new = _equalize_one(x, lut[i], img.top)
            if img.is_float:
                new = new.astype(np.float64) / FLOAT_TOP
            k = new.shape[-1]
            view[i, rows, :, :k] = new.astype(out.dtype)
            if k < img.channels:
                view[i, rows, :, k:] = x[..., k:]
    return restore(out, like=image)
