"""The one association order of prefix sums, shared by every backend.

Float scans are bitwise equal on every backend because they all add in this
order: each lane (a 1-D slice along the axis) is cut into blocks of
:data:`SCAN_BLOCK` values; block ``b``'s sum ``S_b`` adds its values left to
right from -0.0; the block offsets are ``O_0 = -0.0`` and ``O_{b+1} = O_b + S_b``
(added in order: :func:`block_offsets` on the host, scan.cu's lane_chain on the GPU); a value ``i`` of block
``b`` starting at ``lo`` gets ``(((O_b + x[lo]) + x[lo+1]) + ...) + x[i]``.
Integer scans are exact (any order); bool, float16 and complex results come from
:func:`scan_numpy` on the host in the same block order.
"""
from __future__ import annotations

import numpy as np

__all__ = ["SCAN_BLOCK", "scan_layout", "scan_kind", "scan_zero", "block_offsets", "shift_exclusive",
           "int_lanes", "scan_numpy"]

#: values per block of every scan's fixed association order (:func:`cumsum`), on every
#: backend: float results depend on neither the thread count nor the device; lanes up
#: to this long equal NumPy's sequential scan. A GPU adds each block in one thread: shorter
#: blocks cost chaining, longer ones threads (benchmarks/probes/scan_block_sweep.py; numbers:
#: results/gpu-h200.md, scan_order.py)
SCAN_BLOCK = 1 << 11


def scan_layout(shape, axis):
    """``(outer, m, inner)``: the scan along ``axis`` of a C-ordered array of ``shape`` as
    the lanes ``[o, :, k]`` of that 3-D shape (``axis=None``: one lane, the flattened array)."""
    if axis is None:
        return 1, int(np.prod(shape, dtype=np.int64)), 1
    return (int(np.prod(shape[:axis], dtype=np.int64)), int(shape[axis]),
            int(np.prod(shape[axis + 1:], dtype=np.int64)))


def scan_kind(od) -> str:
    """How every backend scans into ``od``.

    ``"int"``: exact two's-complement sums, wrapping as NumPy's (any order gives the same
    result, so device backends use their own). ``"float"`` (float32, float64): the block
    order of :func:`cumsum`, reproduced bit for bit by every backend. ``"numpy"`` (bool,
    float16, complex): the same block order through NumPy's ``add.accumulate`` on the
    host, which every backend delegates to.
    """
    od = np.dtype(od)
    if od.kind in "iu":
        return "int"
    return "float" if od in (np.dtype(np.float32), np.dtype(np.float64)) else "numpy"


def scan_zero(od):
    """What a block's sum starts from: 0, or -0.0 for floats (``-0.0 + x`` is ``x``, sign included)."""
    return od.type(0) if od.kind in "biu" else od.type(-0.0)


def block_offsets(sums, carry=None):
    """``(offsets, total)`` of blocks with sums ``(lanes..., nblk, inner...)`` on axis 1.

    ``O[:, 0] = carry`` (default :func:`scan_zero`) and ``O[:, b + 1] = O[:, b] + S[:, b]``,
    added in order on the host (NumPy's ``cumsum``): every backend's block offsets are
    these. ``total`` is ``O[:, nblk]``, the carry of a scan continued after these blocks.
    """
    zero = scan_zero(sums.dtype)
    run = np.empty((sums.shape[0], sums.shape[1] + 1) + sums.shape[2:], sums.dtype)
    run[:, 0] = zero if carry is None else carry
    run[:, 1:] = sums
    np.cumsum(run, axis=1, out=run)
    return run[:, :-1], run[:, -1]


def shift_exclusive(inc, axis, xp=np):
    """The exclusive scan from the inclusive ``inc``: shifted one place along ``axis``, 0 first."""
    out = xp.empty_like(inc)
    pre = (slice(None),) * axis
    out[pre + (slice(1, None),)] = inc[pre + (slice(None, -1),)]
    out[pre + (slice(0, 1),)] = 0
    return out


def int_lanes(flat_scan, a, axis, od, exclusive, xp=np):
    """Integer scans of ``a`` along ``axis`` from one scan of its lanes laid end to end.

    ``flat_scan(x, wide)`` is the inclusive scan of the 1-D integers ``x`` in the 64-bit
    ``wide``. Each lane then loses the sum of the lanes before it (and, exclusive, its own
    values): exact, since two's-complement words are modular. For device backends with a
    fast flat scan (``xp``: NumPy or CuPy).
    """
    lanes = xp.ascontiguousarray(xp.moveaxis(a, axis, -1))
    wide = np.dtype(np.int64 if od.kind == "i" else np.uint64)
    res = flat_scan(lanes.reshape(-1), wide).reshape(-1, a.shape[axis])
    xs = lanes.reshape(res.shape).astype(wide)
    res -= res[:, :1] - xs[:, :1]
    if exclusive:
        res -= xs
    out = xp.empty(a.shape, od)
    xp.moveaxis(out, axis, -1)[...] = res.reshape(lanes.shape)
    return out


def scan_numpy(a, axis, od, exclusive):
    """:func:`cumsum`'s block order through NumPy's ``add.accumulate`` (bool, float16, complex)."""
    out = np.empty(a.shape, od)
    pre = (slice(None),) * axis
    offset = None
    for lo in range(0, a.shape[axis], SCAN_BLOCK):
        src, dst = a[pre + (slice(lo, lo + SCAN_BLOCK),)], out[pre + (slice(lo, lo + SCAN_BLOCK),)]
        np.add.accumulate(src, axis=axis, dtype=od, out=dst)  # the block's sums, in order
        total = dst[pre + (slice(-1, None),)].copy()
        if offset is not None:  # again from the offset: O_b + x[lo] + ...
            dst[...] = src
            head = dst[pre + (slice(0, 1),)]
            np.add(offset, head, out=head)
            np.add.accumulate(dst, axis=axis, out=dst)
            total = np.add(offset, total)
        offset = total
    return shift_exclusive(out, axis) if exclusive else out
