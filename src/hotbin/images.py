"""Image histograms: luminance, its histogram, equalization, channel histograms, percentiles.

An ops module (DESIGN.md §2): it composes the backend primitives (counts of integer
levels, scan) and the bin rule of :mod:`hotbin.core.binning`, and launches no kernel of its own. A backend may offer the optional
fused primitive ``luma_histogram(img) -> (N, 256) int64`` for uint8 ``(N, H, W, C)``
images with C in {3, 4}; it is used when present.

The luma rule is :mod:`hotbin.luma`'s.

Histogram bins
--------------
``bins`` equal-width bins over the levels ``[0, 2**depth)``, placed by
:mod:`hotbin.core.binning` exactly as ``numpy.histogram(level, bins, range=(0, 2**depth))``.
So ``bins=256`` on an 8-bit image is one level per bin, and on a 16-bit or float
image 256 levels per bin (``level >> 8``). Every level lands in a bin.

Arrays stay where they are: NumPy in, NumPy out; CuPy or torch CUDA tensors are
processed on their GPU and the results come back as the same kind of array; a dask
image gives lazy dask arrays (nothing is computed in the call). Every function runs
through the executor of :mod:`hotbin.exec.local`: counts per image as plans, per-pixel work
and per-image tables blockwise.
"""
from __future__ import annotations

import numpy as np

from . import luma
from .core.arrays import dask_array
from .exec.ops import Op
from .luma import FLOAT_TOP
from .exec.local import executor
from .core.binning import positive_int
from .io.pillow import is_pillow, pillow_pixels

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
    ex, img = luma.load(image, None)
    depth = img.depth
    ft = np.result_type(img.data.dtype, np.float32) if img.is_float and not levels else None

    def plane(be, x):
        lv = luma.levels(x, depth)
        return lv if ft is None else lv.astype(ft) / ft.type(luma.FLOAT_TOP)

    dt = ft or np.dtype(np.uint8 if depth == 8 else np.uint16)
    lv = ex.blockwise(plane, "nhw", img.data, "nhwc", dtype=dt)
    return ex.restore(lv if img.batch else lv[0], image)


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
    ex, img = luma.load(image, backend)
    h = per_image(ex, img, _luma_bins, (nb,), nb)
    return ex.restore(h if img.batch else h[0], image)


def _luma_bins(be, im, nb):
    """The luma histogram of each image of ``im`` in ``nb`` bins."""
    return luma.fold(luma.level_counts(be, im), nb, im.levels)


def per_image(ex, img: luma.Image, count, shape, *args):
    """``(N,) + shape`` int64: ``count(be, Image, *args)``'s counts of each image (a module-level
    function), through the executor. In memory one call; on Dask an :class:`Op` per chunk of
    images, the counts of an image's blocks of pixels summed (exact), lazily."""
    if not ex.lazy:
        return count(ex.be, img, *args)
    rows, start = [], 0
    for n in img.data.chunks[0]:
        op = Op(image_counts, shape=(n,) + shape, params=(count, img.depth, args))
        rows.append(ex.run(op, img.data[start:start + n])[0])
        start += n
    da = dask_array()
    return da.concatenate(rows) if rows else da.zeros((0,) + shape, np.int64)


def image_counts(be, op, data, w, red):
    """An :class:`Op` kernel: ``count(be, Image, *args)`` of a chunk of images (``op.params``:
    ``(count, depth, args)``)."""
    count, depth, args = op.params
    return count(be, luma.Image(data[0], True, depth), *args), None


def channel_histograms(image, bins=256, *, backend=None):
    """One histogram per channel: ``(C, bins)``, or ``(N, C, bins)`` for a batch.

    Every channel is counted, alpha included; a 2-D gray image has C = 1. Channel
    values are levels as in the luma rule (float channels put on the 8.8 grid) and
    ``bins`` are placed as in :func:`luminance_histogram`. int64 counts, exact.
    """
    nb = positive_int(bins, "bins")
    ex, img = luma.load(image, backend)

    h = per_image(ex, img, _channel_bins, (img.channels, nb), nb)
    return ex.restore(h if img.batch else h[0], image)


def _channel_bins(be, im, nb):
    """Each channel's histogram of each image of ``im`` in ``nb`` bins."""
    x = im.data
    counts = np.zeros((x.shape[0], im.channels, im.levels), np.int64, like=x)
    for i in range(x.shape[0]):
        for rows in luma.row_blocks(x[i]):
            q = luma.quantize(x[i, rows])
            for k in range(im.channels):
                counts[i, k] += luma.count_levels(be, q[..., k], im.levels)
    return luma.fold(counts, nb, im.levels)


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
    ex, img = luma.load(image, backend)
    if img.data.shape[1] * img.data.shape[2] == 0:
        raise ValueError("image: has no pixels; percentiles need at least one")
    is_float = img.is_float

    def levels_at(be, counts):
        cdf = luma.cdf(be, counts)
        total = cdf[:, -1:].astype(np.float64)
        thr = np.maximum(total * np.asarray(qa.reshape(-1) / 100.0, like=total), 1.0)  # (N, Q)
        level = (cdf[:, :, None] < thr[:, None, :]).sum(axis=1)  # levels below the threshold
        return level.astype(np.float64) / luma.FLOAT_TOP if is_float else level.astype(np.int64)

    counts = per_image(ex, img, luma.level_counts, (img.levels,))
    out = ex.blockwise(levels_at, "nq", counts, "nl", dtype=np.dtype(np.float64 if is_float else np.int64),
                       new_axes={"q": qa.size})
    out = out[:, 0] if qa.ndim == 0 else out
    return ex.restore(out if img.batch else out[0], image)


def _equalize_lut(be, counts, top):
    """(N, levels) int64 lookup tables from each image's (N, levels) level counts.

    ``lut[v] = round((cdf[v] - cdf_min) * top / (n - cdf_min))`` in integers
    (halves up), clipped to [0, top], where ``cdf_min`` is the count of the
    darkest level present; an image of one level maps to itself.
    """
    cdf = luma.cdf(be, counts)
    total = cdf[:, -1:]
    cmin = np.where(cdf > 0, cdf, total).min(axis=1, keepdims=True)
    span = total - cmin
    safe = np.maximum(span, 1)
    lut = ((cdf - cmin) * (2 * top) + safe) // (2 * safe)
    ident = np.arange(counts.shape[1], dtype=np.int64, like=cdf)[None, :]
    return np.where(span > 0, np.clip(lut, 0, top), ident)


def _equalized(x, lut, top):
    """The equalized (N, H, W, C) pixels ``x`` (new levels, alpha copied) by each image's table."""
    out = np.empty(x.shape, x.dtype, like=x)
    for i in range(x.shape[0]):
        for rows in luma.row_blocks(x[i]):
            v = x[i, rows]
            new = _equalize_one(v, lut[i], top)
            if x.dtype.kind == "f":
                new = new.astype(np.float64) / FLOAT_TOP
            k = new.shape[-1]
            out[i, rows, :, :k] = new.astype(out.dtype)
            if k < x.shape[-1]:
                out[i, rows, :, k:] = v[..., k:]
    return out


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
    * A Pillow image is equalized as its pixels (:func:`~hotbin.io.pillow.pillow_pixels`) and comes
      back as a NumPy array.
    """
    if is_pillow(image):
        image = pillow_pixels(image)
    ex, img = luma.load(image, backend)
    top = img.top
    counts = per_image(ex, img, luma.level_counts, (img.levels,))
    lut = ex.blockwise(lambda be, c: _equalize_lut(be, c, top), "nl", counts, "nl", dtype=np.dtype(np.int64))
    out = ex.blockwise(lambda be, x, t: _equalized(x, t, top), "nhwc", img.data, "nhwc", lut, "nl",
                       dtype=img.data.dtype)
    out = out if img.batch else out[0] if np.ndim(image) == 3 else out[0, :, :, 0]
    dt = getattr(image, "dtype", None)
    if isinstance(dt, np.dtype) and dt != out.dtype:  # a byte order other than the native one
        out = out.astype(dt)
    return ex.restore(out, image)
