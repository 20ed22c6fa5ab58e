"""Memory the cpu kernels keep between calls: work buffers and partials.

Fresh buffers cost page faults on every call, in the thread that first writes them. On a VM
whose freed memory goes back to its host, re-touching memory another library had just freed
cost more system time in a pool thread than the call's own work (results/probes-cpu.md, kept.py).

:func:`scratch`: a thread's own uninitialized work buffers (the kernels write them before
reading). :func:`partials` / :func:`keep`: zeroed per-thread partials of counts and values,
kept for the next call of the same shape with the slot ranges their rows were written in;
each row is zeroed there by its own thread (:func:`zero`) before its next use.
"""
from __future__ import annotations

import threading

import numpy as np

__all__ = ["scratch", "partials", "keep", "zero"]

_SCRATCH = threading.local()

#: {(shape, dtype): (array, [(start, stop), ...] written in each row)}
_KEPT: dict = {}
_KEPT_LOCK = threading.Lock()
#: at most this many kept partials, each at most KEPT_BYTES (1024^2 values on 2 threads: 32 MiB)
KEPT_MAX, KEPT_BYTES = 4, 64 << 20


def scratch(name: str, size: int, dtype) -> np.ndarray:
    """An uninitialized buffer of ``size`` values of ``dtype``: the calling thread's own
    ``name``d one, kept (grown when too small) for its next call, and freed with the thread
    (the banded scatter's four hold up to ~50 MiB a thread: banded.BAND_POINTS points)."""
    bufs = getattr(_SCRATCH, "bufs", None)
    if bufs is None:
        bufs = _SCRATCH.bufs = {}
    dtype = np.dtype(dtype)
    buf = bufs.get((name, dtype))
    if buf is None or buf.size < size:
        buf = bufs[(name, dtype)] = np.empty(size, dtype)
    return buf[:size]


def partials(shape, dtype):
    """``(partials of shape, slot ranges each row must zero before use)``: kept ones or new zeros."""
    with _KEPT_LOCK:
        hit = _KEPT.pop((tuple(shape), np.dtype(dtype)), None)
    return hit if hit is not None else (np.zeros(shape, dtype), [])


def keep(out, written) -> None:
    """Keep ``out`` for a later call; ``written``: the ``(start, stop)`` slot ranges its rows
    hold. The KEPT_MAX kept last stay (the oldest kept goes first)."""
    if out.nbytes > KEPT_BYTES:
        return
    with _KEPT_LOCK:
        _KEPT[(out.shape, out.dtype)] = (out, written)
        while len(_KEPT) > KEPT_MAX:
            del _KEPT[next(iter(_KEPT))]


def zero(row, ranges) -> None:
    """``row`` zeroed over ``ranges`` (:func:`partials`)."""
    for a, b in ranges:
        row[a:b] = 0
