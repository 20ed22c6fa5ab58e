"""The stream compaction of the 2-D count's hot blocks: :func:`others`.

A block with a hot cell counts its other points' cells, copied aside first
(:func:`.scatter._count`). Copied one at a time, branch-free, each copy waits on the
previous one's index (a good part of the count with a hot cell). With AVX-512, sixteen int32
cells are compared and packed at once (``vpcompressd`` into a register, then one unaligned
store; results/probes-cpu.md, compact.py).
Elsewhere (other CPUs, int64 cells) the scalar copy runs.
"""
from __future__ import annotations

import platform

import llvmlite.binding as llvm
import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ...core._jit import njit

__all__ = ["others", "COMPRESS"]


def _compress() -> bool:
    """Whether numba compiles for this x86-64 CPU and it has AVX-512F (not for a target named
    by NUMBA_CPU_NAME / NUMBA_CPU_FEATURES, as portable caches are built)."""
    if (platform.machine().lower() not in ("x86_64", "amd64") or numba.config.CPU_NAME
            or numba.config.CPU_FEATURES):
        return False
    try:
        return bool(llvm.get_host_cpu_features().get("avx512f"))
    except RuntimeError:
        return False


#: sixteen cells a step by vpcompressd (see the module's note)
COMPRESS = _compress()

_V16 = ir.VectorType(ir.IntType(32), 16)
_M16 = ir.VectorType(ir.IntType(1), 16)


def _declare(module, name, fnty):
    """The LLVM intrinsic ``name`` of type ``fnty``, declared once in ``module``."""
    return module.globals.get(name) or ir.Function(module, fnty, name)


@intrinsic
def _pack16(typingctx, src, k, hot, dst, j):
    """dst[j:] = the int32 values of src[k:k + 16] other than ``hot``, packed in order (all 16
    lanes stored: dst needs 16 slots from j); returns j + how many."""
    sig = types.int64(src, k, hot, dst, j)

    def codegen(context, builder, signature, args):
        s, kk, hh, d, jj = args
        sty, dty = signature.args[0], signature.args[3]
        src = context.make_array(sty)(context, builder, s)
        dst = context.make_array(dty)(context, builder, d)
        src_ptr = cgutils.get_item_pointer(context, builder, sty, src, [kk])
        dst_ptr = cgutils.get_item_pointer(context, builder, dty, dst, [jj])
        v = builder.load(builder.bitcast(src_ptr, _V16.as_pointer()), align=4)
        h = builder.insert_element(ir.Constant(_V16, ir.Undefined), builder.trunc(hh, ir.IntType(32)),
                                   ir.Constant(ir.IntType(32), 0))
        h = builder.shuffle_vector(h, ir.Constant(_V16, ir.Undefined), ir.Constant(_V16, [0] * 16))
        keep = builder.icmp_signed("!=", v, h)
        fn = _declare(builder.module, "llvm.x86.avx512.mask.compress.v16i32",
                      ir.FunctionType(_V16, [_V16, _V16, _M16]))
        packed = builder.call(fn, [v, ir.Constant(_V16, ir.Undefined), keep])
        builder.store(packed, builder.bitcast(dst_ptr, _V16.as_pointer()), align=4)
        pop = _declare(builder.module, "llvm.ctpop.i16", ir.FunctionType(ir.IntType(16), [ir.IntType(16)]))
        n = builder.call(pop, [builder.bitcast(keep, ir.IntType(16))])
        return builder.add(jj, builder.zext(n, ir.IntType(64)))
    return sig, codegen


def others(cx, m, hot, tmp):
    """tmp[:j] = the cells of cx[:m] other than ``hot``, in order; returns j (numba only)."""
    raise NotImplementedError("hotbin.backend.cpu.compact.others runs in numba kernels")


@njit(inline="always")
def _copy(cx, k, m, hot, tmp, j):
    """tmp[j:] = the cells of cx[k:m] other than ``hot``, one at a time, branch-free; the new j."""
    for i in range(k, m):
        c = cx[i]
        tmp[j] = c
        j += c != hot
    return j


def _scalar(cx, m, hot, tmp):
    return _copy(cx, 0, m, hot, tmp, 0)


def _vector(cx, m, hot, tmp):
    j = 0
    k = 0
    while k + 16 <= m:
        j = _pack16(cx, k, hot, tmp, j)
        k += 16
    return _copy(cx, k, m, hot, tmp, j)


@overload(others, inline="always")
def _others(cx, m, hot, tmp):
    if COMPRESS and cx.dtype == types.int32 and tmp.dtype == types.int32:
        return _vector
    return _scalar
