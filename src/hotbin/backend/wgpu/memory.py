"""The device's buffers and transfers: a pool of buffers kept between calls, uploads through
mapped staging buffers and read-backs that map once.

Every call used to make its input, output and staging buffers and drop them: new device memory
(and pinned host memory for staging) each time, zeroed by wgpu before first use. The pool keeps
them, by size class, as CuPy's memory pool does, up to :data:`~.tuning.POOL_BYTES` of idle
buffers. Host copies into and out of mapped memory are NumPy copies split over a few threads
(NumPy releases the GIL), the one copy each way a NumPy caller needs.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .tuning import (COPY_PIECE, COPY_THREADS, POOL_BYTES, READ_PIECE, READ_RING, UPLOAD_PIECE,
                     UPLOAD_RING, UPLOAD_STAGE_FROM)

#: bytes of one vec4<u32>, hist_u8.wgsl's load: chunks are whole loads, buffers at least one
LOAD_BYTES = 16
#: offsets of the results of one read-back inside its staging buffer (copies move 4-byte words;
#: 256 keeps every part on its own cache lines)
_ALIGN = 256

_copier = None
_copier_lock = threading.Lock()


def round4(n):
    return (int(n) + 3) // 4 * 4


def size_class(nbytes: int) -> int:
    """The pool's size for ``nbytes``: a power of two up to 4 KiB, above it the next multiple
    of a quarter of the power of two below (at most a quarter wasted)."""
    n = max(LOAD_BYTES, round4(nbytes))
    if n <= 4096:
        return 1 << (n - 1).bit_length()
    step = 1 << (n.bit_length() - 3)
    return -(-n // step) * step


def in_pieces(fn, a: np.ndarray, threads: int) -> list:
    """``[fn(piece), ...]`` over consecutive pieces of the flat ``a``, on up to ``threads``
    threads (at least :data:`~.tuning.COPY_PIECE` bytes a piece; NumPy releases the GIL in
    copies and reductions): one piece, in this thread, when small."""
    threads = min(threads, a.nbytes // COPY_PIECE)
    if threads <= 1:
        return [fn(a)]
    global _copier
    with _copier_lock:
        if _copier is None:
            _copier = ThreadPoolExecutor(16, thread_name_prefix="hotbin-wgpu-copy")  # made as needed
    step = -(-a.size // threads)
    return list(_copier.map(lambda s: fn(a[s:s + step], s), range(0, a.size, step)))


def copy_into(dst: np.ndarray, src: np.ndarray, threads: int = 1) -> None:
    """``dst[...] = src`` (flat, same size), in pieces on ``threads`` threads when large: one
    thread's copy into or out of mapped memory bounds the link."""
    if threads <= 1 or dst.nbytes < 2 * COPY_PIECE:
        np.copyto(dst, src)
        return
    in_pieces(lambda d, s=0: np.copyto(d, src[s:s + d.size]), dst, threads)


def extremes(a: np.ndarray, threads: int) -> tuple:
    """``(a.min(), a.max())`` of a non-empty flat array (NaN where it holds a NaN), in pieces on
    ``threads`` threads: host passes over data as large as the uploads."""
    parts = np.array(in_pieces(lambda p, s=0: (p.min(), p.max()), a, threads), a.dtype)
    return a.dtype.type(parts[:, 0].min()), a.dtype.type(parts[:, 1].max())


def write_mapped(stage, piece: np.ndarray, threads: int = 1) -> None:
    """Copy ``piece`` to the start of the write-mapped ``stage``: straight into the mapped
    memory by :func:`copy_into` where wgpu-py hands out a writable view of it, else by its
    ``write_mapped`` (one thread)."""
    view = getattr(stage, "_experimental_get_mapped_range", None)
    dst = None if view is None else np.frombuffer(view(0, piece.size), np.uint8)
    if dst is None or not dst.flags.writeable:
        stage.write_mapped(piece, 0)
    else:
        copy_into(dst, piece, threads)


def read_view(stage, size: int) -> np.ndarray:
    """The first ``size`` bytes of the read-mapped ``stage`` as uint8, no copy: valid only until
    the unmap."""
    return np.frombuffer(stage.read_mapped(0, size, copy=False), np.uint8)


def map_read(buf, device, spin_s: float):
    """Map ``buf`` for reading and wait. The copy into it was just submitted, so wgpu-py's
    "READ_NOSYNC" mode (what its own ``queue.read_buffer`` uses) skips the empty submission
    that a plain "READ" map adds; versions without that mode get the plain map (:func:`wait`)."""
    try:
        promise = buf.map_async("READ_NOSYNC")
    except (ValueError, KeyError, TypeError, AttributeError):
        promise = buf.map_async("READ")
    wait(promise, device, spin_s)


def map_write(buf, size: int, device, spin_s: float):
    """Map the first ``size`` bytes of ``buf`` for writing and wait (:func:`wait`)."""
    wait(buf.map_async("WRITE", 0, size), device, spin_s)


def wait(promise, device, spin_s: float):
    """For up to ``spin_s`` seconds this thread polls ``device`` without blocking (a map's
    callback then runs here as soon as the device is done); then, or when wgpu-py has no such
    poll, it waits for wgpu-py's poll thread to wake it, which costs a wake-up or two after
    the work is done."""
    poll = getattr(device, "_poll", None)
    if spin_s > 0 and poll is not None:
        end = time.perf_counter() + spin_s
        while getattr(promise, "_state", None) == "pending" and time.perf_counter() < end:
            poll(False)
    promise.sync_wait()


class Memory:
    """The buffer pool and the transfers of :class:`.device.Gpu` (which sets ``device``,
    ``usage``, ``kind``, ``spin_s``, ``max_binding`` and ``_lock`` before :meth:`_init_memory`)."""

    def _init_memory(self):
        #: threads of a large host copy into or out of mapped memory
        self.copy_threads = COPY_THREADS[self.kind]
        #: bytes of idle buffers kept (:meth:`give`)
        self.pool_bytes = POOL_BYTES[self.kind]
        #: idle buffers, oldest first: (kind, size, buffer); kind "storage", "read" or "write"
        self._idle = []
        self._idle_bytes = 0
        #: upload's staging buffers (UPLOAD_RING, made as needed) and the last one used
        self._ring, self._ring_at = [], -1
        self._upload_lock = threading.Lock()
        self.unused = self.storage(LOAD_BYTES)  # bound where a kernel reads nothing

    # the pool -------------------------------------------------------------------
    def storage(self, nbytes):
        """A new zeroed storage buffer of at least ``nbytes`` (16 at least, a multiple of 4)."""
        usage = self.usage.STORAGE | self.usage.COPY_SRC | self.usage.COPY_DST
        return self.device.create_buffer(size=max(LOAD_BYTES, round4(nbytes)), usage=usage)

    def _class(self, nbytes):
        size = size_class(nbytes)
        cap = self.max_binding // 4 * 4
        return size if size <= cap or nbytes > cap else max(LOAD_BYTES, round4(nbytes))

    def take(self, nbytes, kind="storage"):
        """A buffer of at least ``nbytes`` from the pool, or a new one: contents undefined (what
        the call before left). ``kind``: "storage", or "read" / "write" staging buffers."""
        size = self._class(nbytes)
        with self._lock:  # the last given: a call takes its own buffers again (:meth:`give`)
            for i in range(len(self._idle) - 1, -1, -1):
                k, s, buf = self._idle[i]
                if k == kind and s == size:
                    del self._idle[i]
                    self._idle_bytes -= size
                    return buf
        u = self.usage
        usage = {"storage": u.STORAGE | u.COPY_SRC | u.COPY_DST, "read": u.MAP_READ | u.COPY_DST,
                 "write": u.MAP_WRITE | u.COPY_SRC}[kind]
        return self.device.create_buffer(size=size, usage=usage)

    def give(self, *bufs, kind="storage"):
        """Buffers from :meth:`take` back to the pool, once the commands that use them are
        submitted (the queue runs in order: a later call's writes come after them). The
        oldest idle buffers are destroyed past ``pool_bytes`` (:data:`~.tuning.POOL_BYTES`)."""
        drop = []
        with self._lock:
            for buf in reversed(bufs):  # taken again in the order they were taken: same bind groups
                size = int(buf.size)
                if size > self.pool_bytes or size != self._class(size):
                    drop.append(buf)
                    continue
                self._idle.append((kind, size, buf))
                self._idle_bytes += size
            while self._idle_bytes > self.pool_bytes:
                _, size, old = self._idle.pop(0)
                self._idle_bytes -= size
                drop.append(old)
        for buf in drop:
            buf.destroy()

    def release_idle(self):
        """Destroy every idle buffer of the pool (their memory back to the device now)."""
        with self._lock:
            idle, self._idle, self._idle_bytes = self._idle, [], 0
        for _, _, buf in idle:
            buf.destroy()

    def zeros(self, nbytes, encoder):
        """A storage buffer of at least ``nbytes`` from the pool, zeroed by ``encoder`` (its
        first command); give it back (:meth:`give`, or ``read(recycle=True)``) once read."""
        buf = self.take(nbytes)
        encoder.clear_buffer(buf, 0, buf.size)
        return buf

    def with_data(self, arr):
        """A new storage buffer holding ``arr``."""
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        buf = self.storage(raw.size)
        self.upload(buf, raw)
        return buf

    def taken_with(self, arr, held: list):
        """A pooled storage buffer holding ``arr`` (appended to ``held``, to give back)."""
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        buf = self.take(raw.size)
        held.append(buf)
        self.upload(buf, raw)
        return buf

    # uploads --------------------------------------------------------------------
    def upload(self, buf, arr):
        """Write a contiguous array at the start of ``buf`` (padded to 4 bytes), before whatever
        is submitted next. From UPLOAD_STAGE_FROM bytes, a piece at a time through the ring of
        mapped staging buffers, each piece copied in by a few threads and its copy to ``buf``
        submitted at once (mapping a buffer again waits for its last copy); smaller arrays and
        the last bytes of a size not a multiple of 4 by ``queue.write_buffer``."""
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        body = raw.size - raw.size % 4
        if raw.size % 4:  # the last word, zero padded: no copy of the whole array
            tail = np.zeros(4, np.uint8)
            tail[:raw.size % 4] = raw[body:]
            self.device.queue.write_buffer(buf, body, tail)
        if body < max(UPLOAD_STAGE_FROM, 1):
            if body:
                self.device.queue.write_buffer(buf, 0, raw[:body])
            return
        with self._upload_lock:
            for s in range(0, body, UPLOAD_PIECE):
                piece = raw[s:min(s + UPLOAD_PIECE, body)]
                self._ring_at = (self._ring_at + 1) % UPLOAD_RING
                if len(self._ring) < UPLOAD_RING:
                    self._ring.append(None)
                at = self._ring_at % len(self._ring)
                stage = self._ring[at]
                if stage is None or stage.size < piece.size:
                    stage = self._ring[at] = self.device.create_buffer(
                        size=max(UPLOAD_PIECE, piece.size), usage=self.usage.MAP_WRITE | self.usage.COPY_SRC)
                map_write(stage, piece.size, self.device, self.spin_s)
                try:
                    write_mapped(stage, piece, self.copy_threads)
                finally:
                    stage.unmap()
                enc = self.device.create_command_encoder()
                enc.copy_buffer_to_buffer(stage, 0, buf, s, piece.size)
                self.device.queue.submit([enc.finish()])

    # read-backs -----------------------------------------------------------------
    def read(self, buf, nbytes=None, encoder=None, recycle=False, out=None):
        """The first ``nbytes`` of ``buf`` (all of it by default), as uint8 (into ``out``, a
        contiguous array of that many bytes, when given): :meth:`read_many` of one buffer."""
        return self.read_many([(buf, nbytes, out)], encoder, recycle)[0]

    def read_many(self, parts, encoder=None, recycle=False):
        """The first bytes of several buffers, ``parts`` of ``(buf, nbytes or None, out or
        None)``, as uint8 arrays (``out`` viewed as bytes where given, else new arrays).

        ``encoder`` (the dispatches that compute them, not yet submitted) and the copies into a
        staging buffer go in one submission, then the staging buffer is mapped once and each
        part copied out once: one submission and one wait per call. Read-backs larger than
        :data:`~.tuning.READ_PIECE` go in pieces through a ring of READ_RING staging buffers
        (a piece copied out while the next one crosses the link). ``recycle`` gives the buffers
        back to the pool once read."""
        segs, outs = [], []
        for buf, nbytes, out in parts:
            n = int(buf.size if nbytes is None else nbytes)
            dst = np.empty(n, np.uint8) if out is None else out.reshape(-1).view(np.uint8)
            if dst.size != n:
                raise ValueError(f"out: {dst.size} bytes, the read-back has {n}")
            outs.append(dst)
            for s in range(0, n, READ_PIECE):
                segs.append((buf, s, dst[s:s + READ_PIECE]))
        loads, cur, at, end = [], [], 0, 0  # each staging buffer's segments, offsets, bytes used
        for buf, s, dst in segs:
            if cur and at + dst.size > READ_PIECE:
                loads.append((cur, end))
                cur, at = [], 0
            cur.append((buf, s, dst, at))
            end = at + round4(dst.size)
            at = -(-end // _ALIGN) * _ALIGN
        if cur:
            loads.append((cur, end))
        self._read_loads(loads, encoder)
        if recycle:
            self.give(*{id(p[0]): p[0] for p in parts}.values())
        return outs

    def _read_loads(self, loads, encoder):
        enc = encoder or self.device.create_command_encoder()
        if not loads:
            self.device.queue.submit([enc.finish()])
            return
        ring = [self.take(max(LOAD_BYTES, loads[0][1]) if len(loads) == 1 else READ_PIECE, "read")
                for _ in range(min(READ_RING, len(loads)))]

        def submit(i, enc=None):
            enc = enc or self.device.create_command_encoder()
            stage = ring[i % len(ring)]
            for buf, s, dst, at in loads[i][0]:
                if dst.size:
                    enc.copy_buffer_to_buffer(buf, s, stage, at, round4(dst.size))
            self.device.queue.submit([enc.finish()])

        try:  # the ring is this call's: other threads read at the same time through theirs
            for i in range(len(ring)):
                submit(i, enc if i == 0 else None)
            for i, (segs, size) in enumerate(loads):
                stage = ring[i % len(ring)]
                map_read(stage, self.device, self.spin_s)
                try:
                    view = read_view(stage, max(LOAD_BYTES, size))
                    for _, _, dst, at in segs:
                        copy_into(dst, view[at:at + dst.size], self.copy_threads)
                    del view
                finally:
                    stage.unmap()
                if i + len(ring) < len(loads):
                    submit(i + len(ring))
        finally:
            self.give(*ring, kind="read")
