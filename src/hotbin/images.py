"""Image histograms: luminance, its histogram, equalization, channel histograms, percentiles.

An ops module (DESIGN.md §2): it composes the backend primitives (counts of integer
levels, scan) and the bin rule of :mod:`hotbin.binning`, and launches no kernel of its own. A backend may offer the optional
fused primitive ``luma_histogram(img) -> (N, 256) int64`` for uint8 ``(N, H, W, C)``
images with C in {3, 4}; it is used when present.

The luma rule (DESIGN.md §4; exact, identical on every backend)
----------------------------------------------------------------
Pixels are first put on an integer grid of ``2**depth`` levels per channel:

* **uint8**: the bytes themselves, depth 8 (levels 0..255).
* **uint16**: the values themselves, depth 16 (levels 0..65535).
* **float** (float16/32/64, meant to lie in [0, 1]): each channel is put on the
  8.8 fixed-point grid of the 8-bit scale, ``q = rint(min(max(v, 0), 1) * 65280)``
  (65280 = 255 * 256: ``q / 256`` is the value in 8-bit levels, with 8 more bits of
  fraction), evaluated in float64 (``v`` widened exactly, one correctly rounded
  multiply, then round half to even). float16, which has only 11 significant bits,
  is rounded to every 32nd level of that grid: ``q = 32 * rint(min(max(v, 0), 1) * 2040)``.
  Values below 0 or above 1, including -inf and +inf, are clipped; NaN is rejected
  with ``ValueError``. Depth 16: levels 0..65280 of the 65536, so the top 255 are
  never used. A float image holding ``k / 255`` (however that was rounded to its
  dtype) is on the grid at ``q = 256 k``, and its luma level below is ``256 S / 10000``
  floored, whose top 8 bits (``level >> 8``, the bin at ``bins=256``) are exactly the
  uint8 image's level ``S // 10000``: ``image / 255`` has the uint8 image's 256-bin
  histogram, bit for bit.

The luma level of an RGB(A) pixel is then the Rec. 709 weighted sum in exact integer
arithmetic, ``level = (2126*R + 7152*G + 722*B) // 10000`` (at most 655,350,000 at
depth 16: fits an unsigned 32-bit integer). A gray pixel ``(v, v, v)`` has level ``v``,
white has the top level (255, 65535, or 65280 for float images). Alpha is ignored;
gray images are their own luma.

Shapes
------
``(H, W)``        one gray image
``(H, W, C)``     one image; C = 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA
``(N, H, W, C)``  a batch of N images (same C meanings); results gain a leading N axis.

A 3-D array is always one image with channels last; a batch of gray images is
``(N, H, W, 1)`` (``a[..., None]``, a view). Pixels may be uint8, uint16 or float
(any byte order and layout); anything else is a ``TypeError``, any other shape or
channel count a ``ValueError``, each naming the argument. A Pillow image is taken as
its pixels in a luma-ready mode (see :func:`hotbin.pillow.pillow_pixels`): palette
("P", "PA") and other modes are converted to RGB(A) first, never counted as palette
indices; the results are then NumPy arrays.

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

from dataclasses import dataclass

import numpy as np

from . import backend as _backends
from . import distributed as _dask
from .api import cumsum
from .binning import histogram_rule, positive_int
from .pillow import is_pillow, pillow_pixels

__all__ = ["luminance", "luminance_histogram", "equalize", "channel_histograms", "percentiles"]

#: Rec. 709 luma weights and their divisor: level = (wr*R + wg*G + wb*B) // divisor
LUMA_WEIGHTS = (2126, 7152, 722)
LUMA_DIVISOR = 10000
#: float channels are quantized to this top level: the 8.8 fixed-point grid of 8-bit levels
FLOAT_TOP = 255 << 8
#: float16 channels use every FLOAT16_STEP-th level of that grid (11 significant bits)
FLOAT16_STEP = 32
#: pixels per block of rows: bounds the temporaries of the unfused paths (luma plane,
#: float64 copies) to tens of MiB whatever the image size
BLOCK_PIXELS = 1 << 22

_MEANING = "(H, W) gray, (H, W, C) or a batch (N, H, W, C) with C = 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA"


@dataclass(frozen=True)
class _Image:
    """A validated image or batch, as the backend's array of shape (N, H, W, C)."""

    data: object  #: backend array (N, H, W, C), native byte order
    batch: bool  #: the input had a batch axis
    depth: int  #: 8 or 16 bits per level

    @property
    def levels(self) -> int:
        return 1 << self.depth

    @property
    def top(self) -> int:
        """The highest level a channel can have (white)."""
        return FLOAT_TOP if self.is_float else self.levels - 1

    @property
    def is_float(self) -> bool:
        return self.data.dtype.kind == "f"

    @property
    def channels(self) -> int:
        return self.data.shape[3]


def _parse(a, name="image") -> _Image:
    dt = a.dtype
    if dt.kind == "f" and dt.itemsize in (2, 4, 8):
        depth = 16
    elif dt.kind == "u" and dt.itemsize in (1, 2):
        depth = 8 * dt.itemsize
    else:
        raise TypeError(f"{name}: expected uint8, uint16 or float pixels (float values in [0, 1]), "
                        f"got dtype {dt}")
    if dt.byteorder not in "=|":
        a = a.astype(dt.newbyteorder("="))
    shape = tuple(a.shape)
    if a.ndim == 2:
        return _Image(a.reshape((1,) + shape + (1,)), False, depth)
    if a.ndim in (3, 4) and shape[-1] in (1, 2, 3, 4):
        return _Image(a if a.ndim == 4 else a.reshape((1,) + shape), a.ndim == 4, depth)
    if a.ndim in (3, 4):
        raise ValueError(f"{name}: {shape[-1]} channels are not supported; expected {_MEANING} "
                         "(a batch of gray images is (N, H, W, 1))")
    raise ValueError(f"{name}: expected {_MEANING}, got shape {shape}")


def _load(image, backend):
    if is_pillow(image):
        image = pillow_pixels(image)
    be = _backends.select(backend, image)
    return be, _parse(be.asarray(image))


def _quantize(x):
    """Channel levels: integers as they are; floats by the 8.8 grid rule (NaN rejected)."""
    if x.dtype.kind != "f":
        return x
    if bool(np.isnan(x).any()):
        raise ValueError("image: contains NaN; float pixels must be numbers (values outside "
                         "[0, 1] are clipped)")
    step = FLOAT16_STEP if x.dtype.itemsize == 2 else 1
    q = np.rint(np.clip(x.astype(np.float64), 0.0, 1.0) * float(FLOAT_TOP // step))
    if step > 1:
        q *= step
    return q.astype(np.uint16)


def _luma_numerator(q):
    """``2126*R + 7152*G + 722*B`` of (..., C>=3) integer levels, as uint32 (exact)."""
    wr, wg, wb = LUMA_WEIGHTS
    u = np.uint32
    return q[..., 0].astype(u) * u(wr) + q[..., 1].astype(u) * u(wg) + q[..., 2].astype(u) * u(wb)


def _levels(x, depth):
    """Luma levels (uint8 or uint16) of (..., C) pixels."""
    q = _quantize(x)
    if q.shape[-1] < 3:
        return q[..., 0]
    level_dtype = np.uint8 if depth == 8 else np.uint16
    return (_luma_numerator(q) // np.uint32(LUMA_DIVISOR)).astype(level_dtype)


def _like(r, x):
    """A backend result ``r`` as the array type of the data ``x``: a device backend leaves
    host data too big to copy at once on the host (and stages it), but returns device arrays."""
    return np.asarray(_backends.to_host(r)) if isinstance(x, np.ndarray) else r


def _count_levels(be, levels, nlevels):
    """int64 counts of each level of an integer plane (levels < nlevels by construction)."""
    return _like(be.bincount(levels.reshape(-1), nlevels), levels)


def _row_blocks(x):
    """Row slices of one (H, W, ...) image of at most BLOCK_PIXELS pixels (at least a row)."""
    h, w = x.shape[:2]
    step = max(1, BLOCK_PIXELS // max(w, 1))
    return [slice(r, r + step) for r in range(0, h, step)]


def _level_counts(be, img: _Image):
    """(N, levels) int64: how many pixels of each image have each luma level."""
    x = img.data
    if x.shape[0] and img.depth == 8 and img.channels >= 3 and hasattr(be, "luma_histogram"):
        return _like(be.luma_histogram(x), x)
    out = np.zeros((x.shape[0], img.levels), np.int64, like=x)
    for i in range(x.shape[0]):
        for rows in _row_blocks(x[i]):
            out[i] += _count_levels(be, _levels(x[i, rows], img.depth), img.levels)
    return out


def _fold(counts, bins: int, nlevels: int):
    """Fold (..., nlevels) per-level counts into ``bins`` equal bins over [0, nlevels).

    Levels go to bins by the bin rule; as the bins are contiguous runs of levels,
    a bin's count is a difference of the levels' running sum (exact in int64).
    """
    if bins == nlevels:
        return counts
    idx = histogram_rule(np.empty(0, np.uint16), bins, range=(0, nlevels)).index(np.arange(nlevels))
    ends = np.searchsorted(idx, np.arange(bins), side="right")  # levels in bins <= i
    run = np.cumsum(counts, axis=-1)
    zero = np.zeros(counts.shape[:-1] + (1,), counts.dtype, like=counts)
    run = np.concatenate([zero, run], axis=-1)
    starts = np.concatenate([[0], ends[:-1]])
    return run[..., np.asarray(ends, like=counts)] - run[..., np.asarray(starts, like=counts)]


def _name(be) -> str:
    return be.__name__.rsplit(".", 1)[-1]


def _cdf(be, counts):
    """Row-wise running sums of (N, L) counts with one scan (hotbin.cumsum) of all rows."""
    n, nl = counts.shape
    run = cumsum(counts.reshape(-1), backend=_name(be)).reshape(n, nl)
    base = np.concatenate([np.zeros(1, run.dtype, like=run), run[:-1, -1]])
    return run - base[:, None]


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
    be, img = _load(image, None)
    lv = _levels(img.data, img.depth)
    if img.is_float and not levels:
        ft = np.result_type(img.data.dtype, np.float32)
        lv = lv.astype(ft) / ft.type(FLOAT_TOP)
    return be.to_output(lv if img.batch else lv[0], like=image)


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
    if _dask.is_dask(image):
        return _dask.luminance_histogram(image, bins, backend=backend)
    nb = positive_int(bins, "bins")
    be, img = _load(image, backend)
    h = _fold(_level_counts(be, img), nb, img.levels)
    return be.to_output(h if img.batch else h[0], like=image)


def channel_histograms(image, bins=256, *, backend=None):
    """One histogram per channel: ``(C, bins)``, or ``(N, C, bins)`` for a batch.

    Every channel is counted, alpha included; a 2-D gray image has C = 1. Channel
    values are levels as in the luma rule (float channels put on the 8.8 grid) and
    ``bins`` are placed as in :func:`luminance_histogram`. int64 counts, exact.
    """
    nb = positive_int(bins, "bins")
    be, img = _load(image, backend)
    x = img.data
    counts = np.zeros((x.shape[0], img.channels, img.levels), np.int64, like=x)
    for i in range(x.shape[0]):
        for rows in _row_blocks(x[i]):
            q = _quantize(x[i, rows])
            for k in range(img.channels):
                counts[i, k] += _count_levels(be, q[..., k], img.levels)
    h = _fold(counts, nb, img.levels)
    return be.to_output(h if img.batch else h[0], like=image)


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
    be, img = _load(image, backend)
    if img.data.shape[1] * img.data.shape[2] == 0:
        raise ValueError("image: has no pixels; percentiles need at least one")
    cdf = _cdf(be, _level_counts(be, img))
    total = cdf[:, -1:].astype(np.float64)
    thr = np.maximum(total * np.asarray(qa.reshape(-1) / 100.0, like=total), 1.0)  # (N, Q)
    level = (cdf[:, :, None] < thr[:, None, :]).sum(axis=1)  # levels below the threshold
    out = level.astype(np.float64) / FLOAT_TOP if img.is_float else level.astype(np.int64)
    out = out.reshape(out.shape[:1] + qa.shape)
    return be.to_output(out if img.batch else out[0], like=image)


def _equalize_lut(be, img: _Image):
    """(N, levels) int64 lookup tables from each image's CDF.

    ``lut[v] = round((cdf[v] - cdf_min) * top / (n - cdf_min))`` in integers
    (halves up), clipped to [0, top], where ``cdf_min`` is the count of the
    darkest level present; an image of one level maps to itself.
    """
    top = img.top
    cdf = _cdf(be, _level_counts(be, img))
    total = cdf[:, -1:]
    cmin = np.where(cdf > 0, cdf, total).min(axis=1, keepdims=True)
    span = total - cmin
    safe = np.maximum(span, 1)
    lut = ((cdf - cmin) * (2 * top) + safe) // (2 * safe)
    ident = np.arange(img.levels, dtype=np.int64, like=cdf)[None, :]
    return np.where(span > 0, np.clip(lut, 0, top), ident)


def _equalize_one(x, lut, top):
    """Equalize one (H, W, C) image's levels (``top``: white); returns new channel levels (float64 or int)."""
    q = _quantize(x)
    if q.shape[-1] < 3:
        return lut[q[..., :1].astype(np.intp)]
    top = float(top)
    num = _luma_numerator(q)
    target = lut[(num // np.uint32(LUMA_DIVISOR)).astype(np.intp)].astype(np.float64)
    black = num == 0
    y = num.astype(np.float64)
    y /= LUMA_DIVISOR
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
    be, img = _load(image, backend)
    src = be.asarray(image)
    out = np.empty(src.shape, src.dtype, like=src)
    view = out.reshape(img.data.shape)
    lut = _equalize_lut(be, img) if img.data.shape[0] else None
    for i in range(img.data.shape[0]):
        for rows in _row_blocks(img.data[i]):
            x = img.data[i, rows]
            new = _equalize_one(x, lut[i], img.top)
            if img.is_float:
                new = new.astype(np.float64) / FLOAT_TOP
            k = new.shape[-1]
            view[i, rows, :, :k] = new.astype(out.dtype)
            if k < img.channels:
                view[i, rows, :, k:] = x[..., k:]
    return be.to_output(out, like=image)
