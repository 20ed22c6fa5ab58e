"""The CUDA runtime of the cuda backend: CuPy, kernel sources, NVRTC, device facts, launches.

Kernels are loaded from ``hotbin/kernels`` with :mod:`importlib.resources`,
specialized with C++ templates (``name_expressions``), compiled once per module
through :class:`cupy.RawModule` with :data:`OPTIONS` and cached (in memory here,
and on disk by CuPy). CuPy is imported on first use: this module, like every
module of the package, imports without it.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.resources

import numpy as np

__all__ = ["INSTALL", "CTYPE", "cupy", "kernel", "device_info", "launch", "resident", "device_table",
           "kernel_dtype", "flat", "aligned"]

INSTALL = 'pip install "hotbin[cuda]"'

#: dynamic shared memory above this needs the kernel's opt-in (cudaFuncAttributeMaxDynamic-
#: SharedMemorySize): the default limit is 48 KiB for static and dynamic shared memory
#: together. 40 KiB leaves 8 KiB for the static shared memory of the kernels that also take
#: dynamic shared memory (spatial.cu's scatter_codes and private_grid hold under 200 bytes;
#: the kernels with large static arrays, luma.cu and scan.cu's lane tiles, take none), so
#: every launch over the default opts in; opting in below it costs one driver call.
SMEM_OPT_IN = 40 << 10

CTYPE = {
    np.dtype(np.uint8): "unsigned char", np.dtype(np.int8): "signed char",
    np.dtype(np.uint16): "unsigned short", np.dtype(np.int16): "short",
    np.dtype(np.uint32): "unsigned int", np.dtype(np.int32): "int",
    np.dtype(np.uint64): "unsigned long long", np.dtype(np.int64): "long long",
    np.dtype(np.float32): "float", np.dtype(np.float64): "double",
}


def cupy():
    """The CuPy module, or a ``ModuleNotFoundError`` naming :data:`INSTALL`."""
    try:
        import cupy as cp
    except ImportError as exc:
        raise ModuleNotFoundError(f"the cuda backend needs CuPy: {INSTALL}") from exc
    return cp


# --- kernels: sources, compilation ---------------------------------------------------------

def _kernel_dir():
    return importlib.resources.files("hotbin") / "kernels"


@functools.lru_cache(maxsize=None)
def _source(name: str) -> str:
    return (_kernel_dir() / name).read_text()


@functools.lru_cache(maxsize=None)
def options() -> tuple:
    """The NVRTC options of every kernel file.

    IEEE semantics spelled out: ``-ftz=false`` keeps float32 subnormals (the
    neighbours of an edge at 0; the float scans of scan.cu add them as NumPy
    does), divisions and square roots correctly rounded. C++17 for ``if
    constexpr`` (spatial.cu). CuPy's disk cache keys on the source and the
    options: the headers' hash is an option, so editing a header recompiles.
    """
    h = hashlib.sha256()
    for f in sorted(_kernel_dir().iterdir(), key=lambda p: p.name):
        if f.name.endswith(".cuh"):
            h.update(f.read_bytes())
    with importlib.resources.as_file(_kernel_dir()) as d:
        inc = str(d)
    return (f"-I{inc}", "-std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true",
            f"-DHOTBIN_HEADERS={h.hexdigest()[:16]}")


@functools.lru_cache(maxsize=None)
def _module(file: str, exprs: tuple):
    return cupy().RawModule(code=_source(file), options=options(), name_expressions=exprs)


@functools.lru_cache(maxsize=None)
def kernel(file: str, expr: str, group: tuple | None = None):
    """The kernel ``expr`` of ``file``, compiled in one module with the name expressions
    ``group`` (default: alone). One :class:`cupy.RawKernel` per kernel (it loads itself
    on each device it runs on), made once."""
    return _module(file, group or (expr,)).get_function(expr)


# --- devices and launches ------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def device_info(dev_id: int) -> dict:
    """What planning needs of a device: ``sms``, ``smem_block`` (opt-in bytes per block),
    ``smem_sm`` (bytes per SM) and ``arch`` (``"sm_90"``)."""
    dev = cupy().cuda.Device(dev_id)
    a = dev.attributes
    return {"sms": a["MultiProcessorCount"], "smem_block": a["MaxSharedMemoryPerBlockOptin"],
            "smem_sm": a["MaxSharedMemoryPerMultiprocessor"], "arch": f"sm_{dev.compute_capability}"}


#: (id(kernel), device) -> (kernel, dynamic shared memory limit set so far). The kernel is
#: kept so its id is never reused by another kernel object; the limit is set per device.
_SMEM_SET: dict = {}


def _opt_in(kern, smem: int) -> None:
    if smem <= SMEM_OPT_IN:
        return
    key = (id(kern), cupy().cuda.runtime.getDevice())
    if _SMEM_SET.get(key, (None, 0))[1] < smem:
        kern.max_dynamic_shared_size_bytes = smem
        _SMEM_SET[key] = (kern, smem)


def launch(kern, grid, block: int, args, smem: int = 0) -> None:
    """``kern<<<grid, block, smem>>>(*args)``; ``grid`` an int or a tuple."""
    _opt_in(kern, smem)
    grid = (int(grid[0]), int(grid[1])) if isinstance(grid, tuple) and len(grid) == 2 \
        else tuple(int(g) for g in grid) if isinstance(grid, tuple) else (int(grid),)
    kern(grid, (int(block),), args, shared_mem=int(smem))


#: registers per SM and their allocation unit per warp, threads per SM (sm_70 to sm_90): the
#: occupancy estimate when CuPy has no occupancy query
REGS_PER_SM, REG_UNIT, THREADS_PER_SM = 65536, 256, 2048


def resident(kern, block: int, smem: int, want: int) -> int:
    """Blocks per SM: ``want``, capped by what registers and shared memory allow."""
    cp = cupy()
    _opt_in(kern, smem)
    try:
        fit = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kern.kernel.ptr, block, smem)
    except Exception:  # no occupancy query in this CuPy: count registers
        per_warp = -(-kern.num_regs * 32 // REG_UNIT) * REG_UNIT
        fit = min(REGS_PER_SM // max(1, per_warp * (block // 32)), THREADS_PER_SM // block)
    return max(1, min(want, int(fit)))


@functools.lru_cache(maxsize=64)
def device_table(dev_id: int, data: bytes, dtype: str):
    """A small host table (edges, value -> bin) uploaded once per device."""
    cp = cupy()
    with cp.cuda.Device(dev_id):
        return cp.asarray(np.frombuffer(data, dtype))


# --- arrays as kernels take them --------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def kernel_dtype(dt) -> np.dtype | None:
    """The dtype kernels read ``dt`` as (bool as uint8, float16 widened to float32), or
    None when no kernel takes it."""
    dt = np.dtype(dt).newbyteorder("=")
    if dt == np.bool_:
        return np.dtype(np.uint8)
    if dt == np.float16:
        return np.dtype(np.float32)
    return dt if dt in CTYPE else None


def flat(x, dtype=None):
    """1-D C-contiguous CuPy array of ``dtype`` (bool viewed as uint8, float16 widened)."""
    if x.ndim == 1 and (dtype is None or x.dtype == dtype) and x.flags.c_contiguous \
            and x.dtype != np.bool_ and x.dtype != np.float16:
        return x  # already what kernels read
    cp = cupy()
    if x.dtype == np.bool_:
        x = x.view(cp.uint8)
    if x.dtype == np.float16:
        x = _widen_f16(x)
    if dtype is None:
        dtype = x.dtype
    return cp.ascontiguousarray(x, dtype=dtype).reshape(-1)


def _widen_f16(x):
    """float16 -> float32 exactly, subnormals included, by integer operations.

    (A float conversion kernel compiled with flush-to-zero would lose the
    subnormals, which are the neighbours of an edge at 0.)
    """
    cp = cupy()
    h = cp.ascontiguousarray(x).view(cp.uint16).astype(cp.uint32)
    sign = (h & 0x8000) << 16
    exp = (h >> 10) & 0x1F
    man = h & 0x3FF
    bits = cp.where(exp == 31, 0x7F800000 | (man << 13), ((exp + 112) << 23) | (man << 13))
    sub = (man.astype(cp.float32) * np.float32(2.0 ** -24)).view(cp.uint32)  # normal results
    return (cp.where(exp == 0, sub, bits) | sign).view(cp.float32).reshape(x.shape)


def aligned(a, dtype):
    """``a`` as a contiguous 1-D array of ``dtype`` starting on a 16-byte boundary."""
    a = cupy().ascontiguousarray(a.reshape(-1)).astype(dtype, copy=False)
    if a.data.ptr % 16:
        a = a.copy()
    return a
