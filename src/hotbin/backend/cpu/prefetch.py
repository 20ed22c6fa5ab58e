"""A software prefetch for the cpu kernels: :func:`prefetch` (LLVM's ``llvm.prefetch``).

The 1-D counts read their values a block at a time: a vectorized pass of bin codes, then the
adds, which read no values. The hardware prefetcher follows the reads, so memory idled while
a core added and the next block's first reads waited on it; with both cores streaming, a
count took about the read time plus the add time instead of the larger of the two. Fetching
the values PREFETCH_BYTES ahead during the adds overlaps them (:mod:`.count1d`).
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ...core._jit import njit

__all__ = ["PREFETCH_BYTES", "prefetch", "ahead"]

#: how far ahead of the block being added its values are fetched (nearer, or into L1 instead
#: of L2, was slower; benchmarks/probes/cpu_tally.py; results/probes-cpu.md, prefetch.py)
PREFETCH_BYTES = 32 << 10

_I8P = ir.IntType(8).as_pointer()
_I32 = ir.IntType(32)


@intrinsic
def prefetch(typingctx, arr, idx):
    """Fetch the cache line of ``arr[idx]`` into L2 for reading (a hint: never faults, a no-op
    where the target has no prefetch); ``arr`` is a 1-D array, ``0 <= idx < arr.size``."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(idx, types.Integer)):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        a, i = args
        aty = signature.args[0]
        ary = context.make_array(aty)(context, builder, a)
        ptr = builder.bitcast(cgutils.get_item_pointer(context, builder, aty, ary, [i]), _I8P)
        fn = builder.module.declare_intrinsic("llvm.prefetch", [_I8P],
                                              ir.FunctionType(ir.VoidType(), [_I8P, _I32, _I32, _I32]))
        # read (0), locality 2 (L2: into L1 it evicted the block and the counters), data (1)
        builder.call(fn, [ptr, ir.Constant(_I32, 0), ir.Constant(_I32, 2), ir.Constant(_I32, 1)])
        return context.get_dummy_value()
    return sig, codegen


@njit(inline="always")
def ahead(src, at, k):
    """Prefetch ``src[at + k]`` when ``k`` (a step's first point: a multiple of the step)
    starts a cache line's worth of ``src``'s values; a step of 8 float64 prefetches every
    line once, of 8 float32 every other step (clamped to the last value)."""
    if (k & (max(1, 64 // src.itemsize) - 1)) == 0:
        prefetch(src, min(at + k, src.size - 1))
