"""Bounded device memory for the cuda backend: inputs staged slab by slab.

Every cuda primitive is a reduction whose partial results combine exactly
(counts add, fixed-point words add then fold, scans continue from a carry), so an
input that does not fit, or does not fit next to what the device holds already,
can be taken a slab at a time:

* device arrays the kernels read in place go whole, in one launch (the fast path);
* host arrays up to :data:`STAGE_BYTES` are copied whole (:func:`hotbin.backend.cuda.prepare`);
  larger ones stay on the host and are sent here one region of at most :data:`PIN_BYTES` at a
  time while the regions before them are counted, and device arrays that need a converted
  copy (layout, float16) are converted a slab of about ``STAGE_BYTES`` at a time, so device
  memory and host copies stay bounded whatever the input's size;
* host data goes through :data:`PIN_BUFFERS` page-locked buffers, allocated once and kept
  (:func:`pump`): host threads copy the caller's pageable pages into one buffer while the
  copy engine sends another and kernels count a third, so a large host array costs about
  one transfer over the link (arrays under :data:`PIN_MIN_BYTES` go in one ``cupy.asarray``);
* when CUDA runs out of memory anyway (other arrays hold the device), the slab
  is cut in halves and retried, down to :data:`MIN_STAGE_BYTES`; then a
  ``MemoryError`` says how much was free.

The partial of a slab is computed into fresh buffers and combined only once it is
complete, so a retried slab is never counted twice.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import math
import os
import threading

import numpy as np

from .runtime import cupy as _cupy
from .tuning import current

#: most input bytes staged on the device at once (one slab): large enough that a slab's
#: transfer dwarfs its launches and merging (results/gpu-h200.md, stage.py).
STAGE_BYTES = 1 << 30
#: the smallest slab tried after out-of-memory errors before giving up
MIN_STAGE_BYTES = 1 << 20

#: Host data goes to the device through PIN_BUFFERS page-locked buffers of PIN_BYTES each
#: (128 MiB of host memory, allocated on first use and kept; as many device buffers while
#: a host array larger than a slab is counted), filled by PIN_THREADS host threads in pieces
#: of at least PIN_MIN_CHUNK; an array is cut into chunks of at most a buffer, no more than
#: PIN_BUFFERS of them when it is small, so copies overlap from the first megabytes.
#: benchmarks/probes/gpu_host_tune.py chose them, nearest the pinned copy's floor (numbers:
#: results/gpu-h200.md, stage.py).
PIN_BUFFERS = 4
PIN_BYTES = 32 << 20
PIN_THREADS = min(8, os.cpu_count() or 1)
PIN_MIN_CHUNK = 1 << 20
#: host arrays from this size go through the pinned buffers, smaller ones in one
#: cupy.asarray, which was as fast up to 16 MiB and far slower at 64 (benchmarks/gpu_host.py;
#: results/gpu-h200.md, stage.py)
PIN_MIN_BYTES = 32 << 20
#: byte offsets of the arrays of one region in a buffer (and on the device): 16-byte loads
PIN_ALIGN = 256


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
    """A slab on the device: host data copied (native byte order), device data as it is.

    From :data:`PIN_MIN_BYTES`, through the pinned buffers (:func:`pump`), a region of
    the device array per chunk."""
    cp = _cupy()
    if isinstance(v, cp.ndarray):
        return v
    v = np.asarray(v)
    if v.nbytes < PIN_MIN_BYTES or v.dtype.hasobject or v.ndim == 0:
        if not v.dtype.isnative:
            v = v.astype(v.dtype.newbyteorder("="))
        return cp.asarray(v)
    out = cp.empty(v.shape, v.dtype.newbyteorder("="))
    limit = max(1, _chunk_bytes(v.nbytes) // v.itemsize)
    pump([[(v[r], 0, out.data.ptr + _first(v.shape, r) * v.itemsize)] for r in regions(v.shape, limit)])
    return out


def _first(shape, region) -> int:
    """The C-order flat index of the first element of ``region``."""
    starts = [r.start if isinstance(r, slice) else r for r in region]
    return sum(i * math.prod(shape[k + 1:]) for k, i in enumerate(starts))


def _chunk_bytes(nbytes: int) -> int:
    """Bytes per chunk through the pinned buffers: a buffer, or a share of ``nbytes`` that
    keeps every buffer busy (no smaller than :data:`PIN_MIN_CHUNK`)."""
    return min(PIN_BYTES, max(PIN_MIN_CHUNK, -(-nbytes // max(2, PIN_BUFFERS))))


# --- the pinned buffers -----------------------------------------------------------------------

class _Pinned:
    """Page-locked host buffers (portable: every device reads them) and numpy views of them."""

    def __init__(self, count: int, size: int):
        cp = _cupy()
        self.key = (count, size)
        portable = getattr(cp.cuda.runtime, "hostAllocPortable", 1)  # cudaHostAllocPortable
        self.mem = [cp.cuda.PinnedMemory(size, portable) for _ in range(count)]
        self.host = [np.frombuffer((ctypes.c_ubyte * size).from_address(m.ptr), np.uint8) for m in self.mem]


_LOCK = threading.Lock()  #: one caller at a time streams through the buffers
_PINNED: list = []  #: [the _Pinned], made on first use (again when the PIN_ constants change)
_THREADS: list = []  #: [the thread pool that fills them]
_STREAMS: dict = {}  #: device id -> its copy stream (non-blocking: the legacy stream runs beside it)


def _pinned() -> _Pinned:
    key = (max(2, PIN_BUFFERS), PIN_BYTES)
    if not _PINNED or _PINNED[0].key != key:
        _PINNED.clear()
        _PINNED.append(_Pinned(*key))
    return _PINNED[0]


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    if not _THREADS:
        _THREADS.append(concurrent.futures.ThreadPoolExecutor(PIN_THREADS, thread_name_prefix="hotbin-pin"))
    return _THREADS[0]


def _copy_stream():
    cp = _cupy()
    dev = cp.cuda.Device().id
    if dev not in _STREAMS:
        _STREAMS[dev] = cp.cuda.Stream(non_blocking=True)
    return _STREAMS[dev]


def _pieces(slab, dst):
    """``(destination, source)`` pairs that split a copy among the host threads (first axis)."""
    n = slab.shape[0]
    k = max(1, min(PIN_THREADS, n, slab.nbytes // PIN_MIN_CHUNK))
    cuts = [n * i // k for i in range(k + 1)]
    return [(dst[a:b], slab[a:b]) for a, b in zip(cuts, cuts[1:])]


def pump(chunks, use=None) -> None:
    """Host slabs to the device through the pinned buffers, chunk after chunk.

    ``chunks[k]`` lists ``(slab, offset, pointer)``: a host array (any strides and byte
    order) that the host threads copy, in native byte order, to byte ``offset`` of pinned
    buffer ``k % PIN_BUFFERS``, and that the copy stream then sends to the device
    ``pointer``. Chunk ``k + 1`` is sent while ``use(k)`` (when given) queues its work on
    the current stream, which waits for chunk ``k``; the device memory of chunk ``k`` is
    written again (by chunk ``k + PIN_BUFFERS``) only after that work. The buffer of
    chunk ``k`` is refilled once its copy is done. Returns when every copy is done (the
    buffers free for the next caller); the work of ``use`` may still be running.
    """
    cp = _cupy()
    if not chunks:
        return
    with _LOCK:
        pin, pool, stream = _pinned(), _pool(), _copy_stream()
        nbuf = len(pin.host)
        main = cp.cuda.get_current_stream()
        copied = [cp.cuda.Event(disable_timing=True) for _ in range(nbuf)]
        used = [cp.cuda.Event(disable_timing=True) for _ in range(nbuf)]
        fills: dict = {}

        def fill(k):
            buf, jobs = pin.host[k % nbuf], []
            for slab, off, _ in chunks[k]:
                dst = buf[off:off + slab.nbytes].view(slab.dtype.newbyteorder("=")).reshape(slab.shape)
                jobs += _pieces(slab, dst)
            fills[k] = [pool.submit(np.copyto, d, s) for d, s in jobs]

        def send(k):
            b = k % nbuf
            for f in fills.pop(k):
                f.result()
            if use is not None and k >= nbuf:
                stream.wait_event(used[b])
            for slab, off, ptr in chunks[k]:
                cp.cuda.runtime.memcpyAsync(ptr, pin.mem[b].ptr + off, slab.nbytes,
                                            cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
            copied[b].record(stream)

        try:
            for k in range(min(nbuf, len(chunks))):
                fill(k)
            send(0)
            for k in range(len(chunks)):
                b = k % nbuf
                if k + 1 < len(chunks):
                    send(k + 1)
                if use is not None:
                    main.wait_event(copied[b])
                    use(k)
                    used[b].record(main)
                if k + nbuf < len(chunks):
                    copied[b].synchronize()
                    fill(k + nbuf)
        finally:  # no thread or copy may touch the buffers once they are released
            concurrent.futures.wait([f for fs in fills.values() for f in fs])
            stream.synchronize()


def _streamed(arrays, fn, add, cut, width, budget, align):
    """``fn`` over regions of ``arrays`` whose host arrays go through :func:`pump` into a
    ring of device buffers (region ``k`` counted while region ``k + 1`` is copied; device
    arrays sliced as they are). ``(total, regions left)``: regions are left when a region
    does not fit a buffer, or the device runs out of memory (the caller goes on slab by slab).
    """
    cp = _cupy()
    host = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]
    unit = width // sum(a.dtype.itemsize for a in arrays)
    host_width = sum(arrays[i].dtype.itemsize for i in host) * unit
    chunk = _chunk_bytes(math.prod(cut) * host_width) - PIN_ALIGN * len(host)
    limit = max(1, min(budget // width, chunk // host_width))
    todo = list(regions(cut, limit, align=align))
    layout, size = [], 0
    for region in todo:
        off, parts = 0, []
        for i in host:
            slab = arrays[i][region]
            parts.append((i, slab, off))
            off = -(-(off + slab.nbytes) // PIN_ALIGN) * PIN_ALIGN
        if off > PIN_BYTES:
            return None, todo
        layout.append(parts)
        size = max(size, off)
    try:
        ring = [cp.empty(size, cp.uint8) for _ in range(max(2, PIN_BUFFERS))]
    except cp.cuda.memory.OutOfMemoryError:
        cp.get_default_memory_pool().free_all_blocks()
        return None, todo
    done = [None, 0]  # the total so far, regions combined into it

    def use(k):
        slabs = [a[todo[k]] for a in arrays]
        mem = ring[k % len(ring)].data
        for i, slab, off in layout[k]:
            slabs[i] = cp.ndarray(slab.shape, slab.dtype.newbyteorder("="), memptr=mem + off)
        part = fn(*slabs)
        done[:] = add(done[0], part, todo[k]), k + 1

    chunks = [[(slab, off, ring[k % len(ring)].data.ptr + off) for _, slab, off in parts]
              for k, parts in enumerate(layout)]
    try:
        pump(chunks, use)
    except cp.cuda.memory.OutOfMemoryError:
        ring.clear()
        cp.get_default_memory_pool().free_all_blocks()
    return done[0], todo[done[1]:]


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
    uploaded; ``add(None, part, whole region)`` still shapes the result). Host
    arrays go through the pinned buffers a region at a time (:func:`pump`: at most
    :data:`PIN_BYTES` of host data and ``stage_bytes`` in all per region), the
    region before counted while one is copied. Otherwise ``fn`` runs on C-order regions of about ``stage_bytes``
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
    if not in_place and math.prod(shape) and any(isinstance(a, np.ndarray) for a in arrays):
        total, pending = _streamed(arrays, fn, add, cut, width, budget, align)
        if not pending:
            return total
    else:
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
        if kind is None:
            return False
        cp = _cupy()
        if not issubclass(kind, cp.cuda.memory.OutOfMemoryError):
            return False
        cp.get_default_memory_pool().free_all_blocks()
        free, total = cp.cuda.runtime.memGetInfo()
        raise MemoryError(f"cuda backend: out of GPU memory on cuda:{cp.cuda.Device().id} "
                          f"({free:,} of {total:,} bytes free): {exc}") from None
