"""Inputs as the cpu kernels read them: contiguous native-endian pieces, bounded memory.

Contiguous input of a kernel dtype is cut into views of at most CALL elements;
anything else (strides, byte order, other dtypes) is converted BUFFER elements at
a time, so memory stays bounded. Every piece is handed over read-only: numba compiles
a kernel once per array type, and writable and read-only arrays (pandas' copy-on-write
columns, memory maps, Arrow buffers) are different types, so mixing them would compile
every kernel twice (a heatmap aggregation's kernel takes seconds to compile).
"""
from __future__ import annotations

import numpy as np

__all__ = ["BUFFER", "CALL", "kernel_dtype", "chunks", "readonly"]

# --- tuning (benchmarks/cpu_suite.py) ------------------------------------------
#: elements per buffered chunk for inputs that need conversion (bounded memory)
BUFFER = 1 << 20
#: elements per kernel call on contiguous input (bounds the fixed-point low words)
CALL = 1 << 26

_KERNEL_DATA = {np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32,
                                      np.uint32, np.int64, np.uint64, np.float32, np.float64)}


def kernel_dtype(dt: np.dtype) -> np.dtype:
    """The dtype kernels read ``dt`` as: itself in native order, bool as uint8, float16 as float32."""
    dt = dt.newbyteorder("=")
    if dt in _KERNEL_DATA:
        return dt
    if dt == np.bool_:
        return np.dtype(np.uint8)
    if dt == np.float16:
        return np.dtype(np.float32)
    raise TypeError(f"cpu backend: no kernel for dtype {dt}")


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy): the one array type kernels are compiled for."""
    v = a.view()
    v.flags.writeable = False
    return v


def chunks(arrays, dtypes):
    """Yield tuples of read-only 1-D contiguous arrays of ``dtypes`` walking ``arrays`` in C order."""
    for c in _chunks(arrays, dtypes):
        yield tuple(readonly(a) for a in c)


def _chunks(arrays, dtypes):
    n = arrays[0].size
    if all(a.flags.c_contiguous and a.dtype == d for a, d in zip(arrays, dtypes)):
        flat = [a.reshape(-1) for a in arrays]
        for s in range(0, max(n, 1), CALL):
            yield tuple(f[s:s + CALL] for f in flat)
        return
    if n == 0:
        yield tuple(np.empty(0, d) for d in dtypes)
        return
    it = np.nditer(list(arrays), flags=["external_loop", "buffered", "zerosize_ok"],
                   op_flags=[["readonly"]] * len(arrays), op_dtypes=list(dtypes),
                   casting="unsafe", buffersize=BUFFER, order="C")
    for chunk in it:
        yield tuple(np.ascontiguousarray(c) for c in (chunk if len(arrays) > 1 else (chunk,)))
