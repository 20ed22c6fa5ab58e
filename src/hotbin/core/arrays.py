"""The one owner of array types: NumPy, CuPy, torch and Dask.

Everything above the backends hands inputs here and gets back either a NumPy
array or the backend's own device array; results go back through
:func:`restore` as the caller's kind of array on the caller's device. Backends
never inspect input types: a backend declares ``DEVICE`` (``"host"`` or
``"cuda"``) and, optionally, ``prepare(host_array)`` (copy NumPy data to its
device, or leave it on the host to be staged); it receives NumPy arrays and, for
``DEVICE == "cuda"``, CuPy arrays.

A new input type (polars, Arrow) is one branch in :func:`adapt` and one in
:func:`restore`.
"""
from __future__ import annotations

import sys

import numpy as np

__all__ = ["adapt", "as_float64", "restore", "shared_copy", "to_host", "on_gpu", "is_dask", "xp", "cupy", "as_dask",
           "align_dask"]


def cupy():
    """The CuPy module (imported on first use; only device arrays need it)."""
    import cupy as cp

    return cp


def _is_torch(a) -> bool:
    return type(a).__module__.startswith("torch") and hasattr(a, "detach")


def on_gpu(a) -> bool:
    """True for CuPy arrays and torch CUDA tensors (anything on an NVIDIA device)."""
    if isinstance(a, getattr(sys.modules.get("cupy"), "ndarray", ())):
        return True  # without building CuPy's __cuda_array_interface__ (small calls)
    if hasattr(a, "__cuda_array_interface__"):
        return True
    is_cuda = getattr(a, "is_cuda", None)
    return bool(is_cuda) if isinstance(is_cuda, bool) else False


def to_host(a):
    """A NumPy array of any array (CuPy and torch are copied to the host); None stays None."""
    if a is None or isinstance(a, np.ndarray):
        return a
    if hasattr(a, "__cuda_array_interface__") and callable(getattr(a, "get", None)):  # CuPy
        return a.get()
    if _is_torch(a):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def xp(a):
    """The array namespace of ``a``: CuPy for device arrays, else NumPy."""
    return cupy() if on_gpu(a) else np


#: elements per piece of :func:`as_float64`
FLOAT_PIECE = 1 << 16


def as_float64(a):
    """``a`` as float64. A C-contiguous NumPy array is copied a piece at a time into fresh
    zeros, skipping pieces that are all 0: they stay the OS's untouched zero pages, so a
    sparse grid (9.4M cells by category, nearly all empty) costs its non-zero pieces, not
    a write of every cell (64 MB: 16 ms). Other arrays: ``astype``."""
    if not isinstance(a, np.ndarray) or not a.flags.c_contiguous or a.size < 4 * FLOAT_PIECE:
        return a.astype(np.float64)
    out = np.zeros(a.shape, np.float64)
    src, dst = a.reshape(-1), out.reshape(-1)
    whole = src.size - src.size % FLOAT_PIECE
    pieces = src[:whole].reshape(-1, FLOAT_PIECE)
    # integers: an OR of each piece (twice as fast as any(): 64 MB in 0.9 against 1.7 ms)
    used = np.bitwise_or.reduce(pieces, axis=1) != 0 if src.dtype.kind in "iu" else pieces.any(axis=1)
    for i in np.flatnonzero(used):
        dst[i * FLOAT_PIECE:(i + 1) * FLOAT_PIECE] = pieces[i]
    dst[whole:] = src[whole:]
    return out


def is_dask(*objs) -> bool:
    """True when any of ``objs`` is a dask array or a dask dataframe collection.

    Cheap when dask was never imported: then nothing can be a dask collection.
    """
    if "dask" not in sys.modules:
        return False
    from dask.base import is_dask_collection

    arrays = sys.modules.get("dask.array")
    return any(o is not None and is_dask_collection(o)
               and ((arrays is not None and isinstance(o, arrays.Array)) or hasattr(type(o), "to_dask_array"))
               for o in objs)


def adapt(be, a):
    """``a`` as an array backend ``be`` takes: its device array, or NumPy.

    Device arrays (CuPy, torch CUDA tensors: zero copy, strides kept) stay on the
    device for a ``"cuda"`` backend and are copied to the host for the others.
    Everything else becomes NumPy (torch CPU tensors without a copy), then goes
    through ``be.prepare`` when the backend has one (``None`` becomes an object
    array, which the callers' dtype checks refuse with the argument's name).
    """
    if type(a) is np.ndarray:  # the common input, told apart at once
        prepare = getattr(be, "prepare", None)
        return a if prepare is None else prepare(a)
    device = getattr(be, "DEVICE", "host")
    if on_gpu(a):
        if device == "cuda":
            if _is_torch(a):
                return cupy().asarray(a.detach())
            return a
        return to_host(a)
    if _is_torch(a):
        a = a.detach().numpy()
    a = np.asarray(a)  # None-like junk becomes an object array, refused by the dtype checks
    prepare = getattr(be, "prepare", None)
    return a if prepare is None else prepare(a)


def restore(x, like):
    """``x`` as ``like``'s kind of array on ``like``'s device (NumPy for anything else)."""
    cp = sys.modules.get("cupy")
    if cp is not None and type(x) is cp.ndarray and type(like) is cp.ndarray \
            and x.data.device_id == like.data.device_id:
        return x  # a device result for a device input (small calls: told apart at once)
    if _is_torch(like):
        import torch

        if like.is_cuda:
            if isinstance(x, np.ndarray):
                return torch.from_numpy(np.ascontiguousarray(x)).to(like.device)
            return torch.from_dlpack(cupy().asarray(x))
        return torch.from_numpy(np.ascontiguousarray(to_host(x)))
    if like is not None and on_gpu(like):
        cp = cupy()
        if isinstance(x, cp.ndarray) and isinstance(like, cp.ndarray) and x.data.device_id == like.data.device_id:
            return x
        with cp.cuda.Device(getattr(getattr(like, "device", None), "id", None)):
            return cp.asarray(x)
    return to_host(x)


#: (id(host array), device) -> (host array, its device copy), or (dtype, shape, bytes, device)
#: -> (None, the device copy): see :func:`shared_copy`
_SHARED: dict = {}
SHARED_MAX = 64
#: host arrays up to this size are found by their contents: hashing 64 KiB costs less than
#: one upload
SHARED_BYTES = 1 << 16


def shared_copy(x: np.ndarray, like):
    """A copy of the host array ``x`` as ``like``'s kind of array (:func:`restore`), cheap for
    CuPy: the device copy of ``x`` is kept and copied on the device, with no host-to-device
    copy per call. A read-only array that owns its data (a cached rule's edges, which never
    change) is found by its identity; other arrays up to :data:`SHARED_BYTES` by their
    contents (a cached rule's edges that are a read-only view, edges the caller passed);
    larger ones are uploaded."""
    cp = sys.modules.get("cupy")
    if cp is None or not isinstance(like, cp.ndarray):
        return restore(x.copy(), like)
    dev = like.data.device_id
    if cp.cuda.runtime.getDevice() != dev:
        with cp.cuda.Device(dev):
            return shared_copy(x, like)
    if not x.flags.writeable and x.flags.owndata:
        key, owner = (id(x), dev), x
    elif x.nbytes <= SHARED_BYTES:
        key, owner = (x.dtype.str, x.shape, x.tobytes(), dev), None
    else:
        return restore(x.copy(), like)
    hit = _SHARED.get(key)
    if hit is None or hit[0] is not owner:
        if len(_SHARED) >= SHARED_MAX:
            _SHARED.clear()
        hit = _SHARED[key] = (owner, cp.asarray(x if x.flags.c_contiguous else x.copy()))
    src = hit[1]
    out = cp.empty(src.shape, src.dtype)
    out.data.copy_from_device_async(src.data, src.nbytes)
    return out


# --- dask collections -------------------------------------------------------------------------

_DASK_HINT = 'dask input needs dask: pip install "hotbin[dask]"'


def dask_array():
    """The ``dask.array`` module, or ModuleNotFoundError naming the extra."""
    try:
        import dask.array as da
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(_DASK_HINT) from exc
    return da


def as_dask(obj, name):
    """A dask array of ``obj``: dask arrays as they are, dask Series/DataFrames by partition,
    anything else as one chunk."""
    da = dask_array()
    if isinstance(obj, da.Array):
        return obj
    if is_dask(obj):
        to_array = getattr(obj, "to_dask_array", None)
        if to_array is None:
            raise TypeError(f"{name}: expected a dask array or a dask dataframe column, "
                            f"got {type(obj).__name__}")
        return to_array()
    return da.asarray(to_host(obj))


def align_dask(x, other, name):
    """``other`` chunked like the dask array ``x`` (same shape required), so blocks pair up."""
    known = not any(np.isnan(c) for cs in x.chunks + other.chunks for c in cs)
    if known:
        if x.shape != other.shape:
            raise ValueError(f"{name}: shape {other.shape} does not match {x.shape}")
        return other if other.chunks == x.chunks else other.rechunk(x.chunks)
    if other.numblocks != x.numblocks:
        raise ValueError(f"{name}: {other.numblocks} partitions do not match {x.numblocks}; "
                         "take both columns from one dataframe")
    return other
