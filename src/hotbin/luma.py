"""The luma rule and the counting of luma levels, shared by every image function.

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
its pixels in a luma-ready mode (see :func:`hotbin.io.pillow.pillow_pixels`): palette
("P", "PA") and other modes are converted to RGB(A) first, never counted as palette
indices; the results are then NumPy arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .core.arrays import to_host
from .core.binning import histogram_rule
from .io.pillow import is_pillow, pillow_pixels
from .exec.local import executor

__all__ = ["Image", "parse", "load", "levels", "level_counts", "fold", "cdf", "LUMA_WEIGHTS",
           "LUMA_DIVISOR", "FLOAT_TOP", "FLOAT16_STEP", "BLOCK_PIXELS"]

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
class Image:
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


def parse(a, name="image") -> Image:
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
    if a.ndim == 2:  # indexing, not reshape: a view in memory, no rechunking on Dask
        return Image(a[None, :, :, None], False, depth)
    if a.ndim in (3, 4) and shape[-1] in (1, 2, 3, 4):
        return Image(a if a.ndim == 4 else a[None], a.ndim == 4, depth)
    if a.ndim in (3, 4):
        raise ValueError(f"{name}: {shape[-1]} channels are not supported; expected {_MEANING} "
                         "(a batch of gray images is (N, H, W, 1))")
    raise ValueError(f"{name}: expected {_MEANING}, got shape {shape}")


def load(image, backend):
    """``(executor, Image)`` of an image: the executor of :func:`hotbin.exec.local.executor` (the one
    routing: the backend in memory, or Dask), the image parsed; on Dask a dask image whose
    channels are one chunk (a block holds whole pixels)."""
    if is_pillow(image):
        image = pillow_pixels(image)
    ex = executor(backend, image)
    img = parse(ex.array(image, "image"))
    if ex.lazy:
        img = Image(img.data.rechunk({3: -1}), img.batch, img.depth)
    return ex, img


def quantize(x):
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


def luma_numerator(q):
    """``2126*R + 7152*G + 722*B`` of (..., C>=3) integer levels, as uint32 (exact)."""
    wr, wg, wb = LUMA_WEIGHTS
    u = np.uint32
    return q[..., 0].astype(u) * u(wr) + q[..., 1].astype(u) * u(wg) + q[..., 2].astype(u) * u(wb)


def levels(x, depth):
    """Luma levels (uint8 or uint16) of (..., C) pixels."""
    q = quantize(x)
    if q.shape[-1] < 3:
        return q[..., 0]
    level_dtype = np.uint8 if depth == 8 else np.uint16
    return (luma_numerator(q) // np.uint32(LUMA_DIVISOR)).astype(level_dtype)


def _like(r, x):
    """A backend result ``r`` as the array type of the data ``x``: a device backend leaves
    host data too big to copy at once on the host (and stages it), but returns device arrays."""
    return np.asarray(to_host(r)) if isinstance(x, np.ndarray) else r


def count_levels(be, levels, nlevels):
    """int64 counts of each level of an integer plane (levels < nlevels by construction)."""
    return _like(be.bincount(levels.reshape(-1), nlevels), levels)


def row_blocks(x):
    """Row slices of one (H, W, ...) image of at most BLOCK_PIXELS pixels (at least a row)."""
    h, w = x.shape[:2]
    step = max(1, BLOCK_PIXELS // max(w, 1))
    return [slice(r, r + step) for r in range(0, h, step)]


def level_counts(be, img: Image):
    """(N, levels) int64: how many pixels of each image have each luma level."""
    x = img.data
    if x.shape[0] and img.depth == 8 and img.channels >= 3 and be.has("luma"):
        return _like(be.luma_histogram(x), x)
    out = np.zeros((x.shape[0], img.levels), np.int64, like=x)
    for i in range(x.shape[0]):
        for rows in row_blocks(x[i]):
            out[i] += count_levels(be, levels(x[i, rows], img.depth), img.levels)
    return out


def fold(counts, bins: int, nlevels: int):
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


def cdf(be, counts):
    """Row-wise running sums of (N, L) counts with one scan (the backend's cumsum) of all rows."""
    n, nl = counts.shape
    run = _like(be.cumsum(counts.reshape(-1), None, np.dtype(np.int64), False), counts).reshape(n, nl)
    base = np.concatenate([np.zeros(1, run.dtype, like=run), run[:-1, -1]])
    return run - base[:, None]
