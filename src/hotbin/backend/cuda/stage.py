"""Bounded device memory for the cuda backend: inputs staged slab by slab (issue #8).

Every cuda primitive is a reduction whose partial results combine exactly
(counts add, fixed-point words add then fold, scans continue from a carry), so an
input that does not fit, or does not fit next to what the device holds already,
can be taken a slab at a time:

* device arrays the kernels read in place go whole, in one launch (the fast path);
* host arrays up to :data:`STAGE_BYTES` are copied whole (:func:`hotbin.backend.cuda.prepare`);
  larger ones stay on the host and are copied here one C-order slab of about
  ``STAGE_BYTES`` at a time, and device arrays that need a converted copy (layout,
  float16) are converted a slab at a time, so device memory and host copies stay
  bounded whatever the input's size;
* when CUDA runs out of memory anyway (other arrays hold the device), the slab
  is cut in halves and retried, down to :data:`MIN_STAGE_BYTES`; then a
  ``MemoryError`` says how much was free.

The partial of a slab is computed into fresh buffers and combined only once it is
complete, so a retried slab is never counted twice.
"""
from __future__ import annotations

import math

import numpy as np

from .runtime import cupy as _cupy
from .tuning import current

#: most input bytes staged on the device at once (one slab). 1 GiB keeps a slab's
#: transfer ~50 ms against ~10 us of launches and merging per slab.
STAGE_BYTES = 1 << 30
#: the smallest slab tried after out-of-memory errors before giving up
MIN_STAGE_BYTES = 1 << 20


def stage_bytes() -> int:
    """Bytes per slab: :data:`STAGE_BYTES`, or what ``tuning.forced(stage_bytes=...)`` says."""
    return int(current().stage_bytes or STAGE_BYTES)


def _ready(a) -> bool:
    """A device array the kernels read in place: C-contiguous and not float16 (widened)."""
    return a.flags.c_contiguous and a.dtype != np.float16


def regions(shape, limit: int, region=None, align: int = 1):
    """C-order index regions of at most ``limit`` elements (one element at least) covering
    ``region`` of an array of ``shape`` (the whole array by default).

    A region is some integer indices, then one slice: a basic index whose slab is
    contiguous in C order. ``align`` > 1 (1-D only) keeps every cut a multiple of it.
    """
    if region is None:
        region = (slice(0, shape[0]),)
    k = len(region) - 1
    lo, hi = region[k].start, region[k].stop
    inner = math.prod(shape[k + 1:])
    if (hi - lo) * inner <= limit:
        yield region
    elif inner <= limit:
        step = max(align, limit // inner // align * align)
        for i in range(lo, hi, step):
            yield region[:k] + (slice(i, min(hi, i + step)),)
    else:
        for i in range(lo, hi):
            yield from regions(shape, limit, region[:k] + (i, slice(0, shape[k + 1])))


def region_size(shape, region) -> int:
    s = region[-1]
    return (s.stop - s.start) * math.prod(shape[len(region):])


def upload(v):
    """A slab on the device: host data copied (native byte order), device data as it is."""
    cp = _cupy()
    if isinstance(v, cp.ndarray):
        return v
    v = np.asarray(v)
    if not v.dtype.isnative:
        v = v.astype(v.dtype.newbyteorder("="))
    return cp.asarray(v)


def device(*arrays):
    """The CUDA device of the first device array (the current one for host data)."""
    cp = _cupy()
    for a in arrays:
        if isinstance(a, cp.ndarray):
            return a.device
    return cp.cuda.Device()


def add(total, part, region):
    """The default combine of :func:`staged`: the partials summed."""
    return part if total is None else total + part


def staged(arrays, fn, add=add, *, ready=_ready, keep: int = 0, align: int = 1):
    """``fn(*slabs)`` over the same-shaped ``arrays`` (host or device), partials combined.

    When every array is on the device and ``ready`` (read in place), or all of
    them fit :func:`stage_bytes` together, this is ``fn(*arrays)`` (arrays
    uploaded; ``add(None, part, whole region)`` still shapes the result). Otherwise ``fn`` runs on C-order regions of about ``stage_bytes``
    each (the last ``keep`` axes are never cut: pixels stay whole; ``align``
    keeps 1-D cuts on multiples of a tile) and ``add(total, part, region)``
    combines the partials in order (``total`` is None at first). Out-of-memory
    errors cut the failing region in halves; below :data:`MIN_STAGE_BYTES` they
    raise ``MemoryError``.
    """
    cp = _cupy()
    arrays = [a.reshape(1) if a.ndim == 0 else a for a in arrays]
    in_place = all(isinstance(a, cp.ndarray) and ready(a) for a in arrays)
    if in_place:  # the fast path first (small calls): nothing to plan
        try:
            return add(None, fn(*arrays), (slice(0, arrays[0].shape[0]),))
        except cp.cuda.memory.OutOfMemoryError:
            cp.get_default_memory_pool().free_all_blocks()
    shape = tuple(arrays[0].shape)
    cut = shape[:len(shape) - keep] if keep else shape
    unit = math.prod(shape[len(cut):])  # elements per index of the cut axes
    width = sum(a.dtype.itemsize for a in arrays) * unit  # bytes per index of the cut axes
    budget = stage_bytes()
    whole = (slice(0, cut[0]),)
    if in_place or math.prod(cut) * width <= budget:
        if not in_place:  # (in place, the whole already ran out of memory)
            try:
                return add(None, fn(*[upload(a) for a in arrays]), whole)
            except cp.cuda.memory.OutOfMemoryError:
                cp.get_default_memory_pool().free_all_blocks()
        budget = max(1, math.prod(cut) * width // 2)
        if budget < MIN_STAGE_BYTES:
            raise MemoryError(_message(width, cut, whole)) from None
    pending = list(regions(cut, max(1, budget // width), align=align))
    total = None
    while pending:
        region = pending.pop(0)
        try:
            part = fn(*[upload(a[region]) for a in arrays])
        except cp.cuda.memory.OutOfMemoryError:
            cp.get_default_memory_pool().free_all_blocks()
            n = region_size(cut, region)
            if n <= align or n * width // 2 < MIN_STAGE_BYTES:
                raise MemoryError(_message(width, cut, region)) from None
            pending[:0] = list(regions(cut, max(align, n // 2), region, align))
            continue
        total = add(total, part, region)
    return total


def _message(width, cut, region) -> str:
    cp = _cupy()
    free, total = cp.cuda.runtime.memGetInfo()
    need = region_size(cut, region) * width
    return (f"cuda backend: out of GPU memory on cuda:{cp.cuda.Device().id} with {need:,} bytes of "
            f"input at a time ({free:,} of {total:,} bytes free); free GPU memory (CuPy caches "
            "freed blocks: cupy.get_default_memory_pool().free_all_blocks()) or use backend='cpu'")


class out_of_memory:
    """``with out_of_memory():`` turns CUDA out-of-memory in result buffers into a ``MemoryError``
    that says what was free (a class, not a generator: it wraps every small call)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        cp = _cupy()
        if kind is None or not issubclass(kind, cp.cuda.memory.OutOfMemoryError):
            return False
        cp.get_default_memory_pool().free_all_blocks()
        free, total = cp.cuda.runtime.memGetInfo()
        raise MemoryError(f"cuda backend: out of GPU memory on cuda:{cp.cuda.Device().id} "
                          f"({free:,} of {total:,} bytes free): {exc}") from None
