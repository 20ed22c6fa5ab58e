"""The one owner of array types: NumPy, any DLPack array (CuPy, torch, JAX, array API
libraries) and Dask.

Everything above the backends hands inputs here and gets back either a NumPy
array or the backend's own device array; results go back through
:func:`restore` as the caller's kind of array on the caller's device. Backends
never inspect input types: a backend declares ``DEVICE`` (``"host"`` or
``"cuda"``) and, optionally, ``prepare(host_array)`` (copy NumPy data to its
device, or leave it on the host to be staged); it receives NumPy arrays and, for
``DEVICE == "cuda"``, CuPy arrays.

Arrays are told apart by the device they say they are on (``__dlpack_device__``),
not by their library: host memory becomes NumPy through :func:`numpy.from_dlpack`
and CUDA memory CuPy through ``cupy.from_dlpack``, both without a copy; other
devices are refused naming the device. Only torch is named, to drop its autograd
graph (``detach``) and to give its tensors back; dask collections are taken apart by
:mod:`hotbin.exec.dask`. Anything without DLPack goes through :func:`numpy.asarray`.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

__all__ = ["adapt", "as_float64", "restore", "shared_copy", "to_host", "on_gpu", "is_dask", "xp", "cupy", "as_dask",
           "align_dask", "dlpack_device"]

_CUDA_HINT = 'CUDA device arrays need CuPy: pip install "hotbin[cuda]"'

#: DLPack's device types (``DLDeviceType`` in dlpack.h) by number, for errors
DEVICE_TYPES = {1: "CPU", 2: "CUDA", 3: "CUDAHost", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI", 10: "ROCM",
                11: "ROCMHost", 12: "ExtDev", 13: "CUDAManaged", 14: "OneAPI", 15: "WebGPU", 16: "Hexagon",
                17: "MAIA"}
#: device types read through NumPy (host memory) and through CuPy (CUDA memory)
HOST_TYPES = frozenset({1})
CUDA_TYPES = frozenset({2, 13})


def cupy():
    """The CuPy module (imported on first use; only device arrays need it), or
    ModuleNotFoundError naming the extra."""
    try:
        import cupy as cp
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(_CUDA_HINT) from exc
    return cp


def _is_torch(a) -> bool:
    return type(a).__module__.startswith("torch") and hasattr(a, "detach")


def dlpack_device(a) -> tuple[int, int] | None:
    """``(device type, device id)`` of a DLPack array (``__dlpack_device__``), else None."""
    get = getattr(type(a), "__dlpack_device__", None)
    if get is None or not hasattr(type(a), "__dlpack__"):
        return None
    kind, index = get(a)
    return int(kind), int(index)


def _refuse(a, device, name) -> TypeError:
    kind = DEVICE_TYPES.get(device[0], f"device type {device[0]}")
    return TypeError(f"{name}: a {type(a).__name__} on a {kind} device (DLPack {device}); hotbin reads host "
                     f"(CPU) and CUDA memory: copy it to one of them first")


def on_gpu(a) -> bool:
    """True for arrays in CUDA memory: CuPy arrays, DLPack arrays on a CUDA device
    (torch, JAX, ...), anything with ``__cuda_array_interface__``."""
    if isinstance(a, getattr(sys.modules.get("cupy"), "ndarray", ())):
        return True  # without asking for the device (small calls)
    device = dlpack_device(a)
    if device is not None:
        return device[0] in CUDA_TYPES
    return hasattr(a, "__cuda_array_interface__")


def _numpy(a, name="a"):
    """A host array (DLPack or not) as NumPy, without a copy where the producer shares it."""
    device = dlpack_device(a)
    if device is None:
        return np.asarray(a)  # None-like junk becomes an object array, refused by the dtype checks
    if device[0] not in HOST_TYPES:
        raise _refuse(a, device, name)
    try:
        with warnings.catch_warnings():  # NumPy retries a refused versioned export unversioned,
            warnings.simplefilter("ignore", DeprecationWarning)  # which producers warn of
            return np.from_dlpack(a)
    except (BufferError, TypeError, ValueError, RuntimeError) as exc:  # what DLPack cannot carry:
        # byte order, nulls, bit-packed booleans; NumPy's own protocols may (pyarrow: NaN for nulls)
        if hasattr(type(a), "__array__") or hasattr(a, "__array_interface__"):
            return np.asarray(a)
        raise TypeError(f"{name}: a {type(a).__name__} that DLPack cannot share ({exc})") from None


def _cupy(a):
    """A CUDA array as CuPy, without a copy (DLPack, else ``__cuda_array_interface__``)."""
    cp = cupy()
    if isinstance(a, cp.ndarray):
        return a
    return cp.from_dlpack(a) if hasattr(type(a), "__dlpack__") else cp.asarray(a)


def to_host(a):
    """A NumPy array of any array (device arrays are copied to the host); None stays None."""
    if a is None or isinstance(a, np.ndarray):
        return a
    if isinstance(a, getattr(sys.modules.get("cupy"), "ndarray", ())):
        return a.get()
    if _is_torch(a):
        return a.detach().cpu().numpy()
    if on_gpu(a):
        return _cupy(a).get()
    return _numpy(a)


def xp(a):
    """The array namespace of ``a``: CuPy for device arrays, else NumPy."""
    return cupy() if on_gpu(a) else np


#: elements per piece of :func:`as_float64`
FLOAT_PIECE = 1 << 16


def as_float64(a):
    """``a`` as float64. A C-contiguous NumPy array is copied a piece at a time into fresh
    zeros, skipping pieces that are all 0: they stay the OS's untouched zero pages, so a
    sparse grid (9.4M cells by category, nearly all empty) costs its non-zero pieces, not
    a write of every cell (results/probes-cpu.md, arrays.py). Other arrays: ``astype``."""
    if not isinstance(a, np.ndarray) or not a.flags.c_contiguous or a.size < 4 * FLOAT_PIECE:
        return a.astype(np.float64)
    out = np.zeros(a.shape, np.float64)
    src, dst = a.reshape(-1), out.reshape(-1)
    whole = src.size - src.size % FLOAT_PIECE
    pieces = src[:whole].reshape(-1, FLOAT_PIECE)
    # integers: an OR of each piece (faster than any(): results/probes-cpu.md, arrays.py)
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


def adapt(be, a, name="a"):
    """``a`` as an array backend ``be`` takes: its device array, or NumPy.

    Arrays in CUDA memory (CuPy, torch, any DLPack array: zero copy, strides kept)
    stay on the device as CuPy for a ``"cuda"`` backend and are copied to the host
    for the others. Host arrays become NumPy (DLPack ones without a copy, the
    rest through :func:`numpy.asarray`), then go through ``be.prepare`` when the
    backend has one (``None`` becomes an object array, which the callers' dtype
    checks refuse with the argument's name). Other devices: TypeError naming
    ``name`` and the device.
    """
    if type(a) is np.ndarray:  # the common input, told apart at once
        prepare = getattr(be, "prepare", None)
        return a if prepare is None else prepare(a)
    on_cuda = getattr(be, "DEVICE", "host") == "cuda"
    if type(a) is getattr(sys.modules.get("cupy"), "ndarray", None):  # the common device input
        return a if on_cuda else a.get()
    if _is_torch(a):
        a = a.detach()  # DLPack refuses tensors that need a gradient
    if on_gpu(a):
        return _cupy(a) if on_cuda else to_host(a)
    a = _numpy(a, name)
    prepare = getattr(be, "prepare", None)
    return a if prepare is None else prepare(a)


def _device_id(like):
    device = dlpack_device(like)
    return device[1] if device is not None else getattr(getattr(like, "device", None), "id", None)


def restore(x, like):
    """``x`` as ``like``'s kind of array on ``like``'s device: CuPy and torch as they
    came; any other array in CUDA memory (JAX, ...) as CuPy on its device, anything
    else as NumPy. Other DLPack libraries get NumPy or CuPy rather than their own type
    (``__array_namespace__``): the front doors go on with NumPy methods after this
    (``reshape``, ``sum``) that the array API does not promise, and both hand back to
    the caller's library without a copy (``from_dlpack``)."""
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
        with cp.cuda.Device(_device_id(like)):
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
