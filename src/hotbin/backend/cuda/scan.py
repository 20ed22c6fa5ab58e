"""Prefix sums on the device (kernels/scan.cu) in the association order of :mod:`hotbin.core.scan_order`.

Integers: one-pass decoupled look-back scans (exact in any order). float32 and
float64: the shared block order, one thread per lane block (``lane_sums`` /
``lane_scan``), block offsets chained in order on the device (``lane_chain``, no
host round trip): bitwise the cpu backend's.
"""
from __future__ import annotations

import numpy as np

from ...core import scan_order
from ...core.arrays import to_host
from .runtime import CTYPE, cupy, device_info, flat, kernel, kernel_dtype, launch
from .stage import stage_bytes, staged
from .tuning import Tuning, table

__all__ = ["SCAN_BLOCK", "LANE_THREADS", "cumsum", "tile", "ci_name_expressions"]

#: threads per block of the look-back scan
SCAN_BLOCK = 256
#: threads per block of the float scans' lane kernels (one thread per lane block); scan.cu
#: sizes its tiles for LANE_THREADS / 32 warps, passed as a template argument
LANE_THREADS = 128
#: 16-byte vectors of each lane block per stage of the lane kernels' shared tiles (scan.cu
#: LaneTile: a half-warp loads one block's 256 contiguous bytes per access). Chosen by
#: benchmarks/probes/scan_block_sweep.py --tiles (results/gpu-h200.md, scan.py)
LANE_VECS = 16
#: most blocks of one lane launch (one thread per lane block: larger inputs stride)
LANE_GRID = 1 << 16
#: warps per block of lane_chain (one warp chains one lane's block offsets)
CHAIN_WARPS = 4
#: one lane (a flat scan, a host slab): chain its offsets in the first block of the scan
#: kernel (lane_scan_chained) while the others start scanning, rather than in a launch of
#: its own between the two passes: faster for float32 and float64
#: (benchmarks/probes/scan_block_sweep.py --api; results/scan-h200.md)
CHAIN_IN_SCAN = True


def cumsum(a, axis, od, exclusive, tune: Tuning):
    """Prefix sums in the order of :mod:`hotbin.core.scan_order` (the same values).

    Integers: the look-back scan; along an axis of device data, one scan of the lanes
    laid end to end (:func:`hotbin.core.scan_order.int_lanes`). float32 and float64: the shared
    block order. Host input comes back on the host, slab by slab for one lane (slabs of
    whole blocks, each continued from the previous slab's total: bitwise the one-pass
    scan). bool/float16/complex results: :func:`hotbin.core.scan_order.scan_numpy` on the host.
    ``NotImplemented`` for host data along an axis that does not fit one slab and for
    integer results of non-integer input.
    """
    cp = cupy()
    od = np.dtype(od)
    kind = scan_order.scan_kind(od)
    lanes = axis is not None and a.ndim > 1
    if (lanes and not isinstance(a, cp.ndarray) and a.nbytes > stage_bytes()) \
            or (kind == "int" and a.dtype.kind not in "biu"):
        return NotImplemented
    shape = (a.size,) if axis is None else a.shape
    if a.size == 0:
        return np.empty(shape, od)
    if kind == "numpy":
        return scan_order.scan_numpy(to_host(a).reshape(shape), 0 if axis is None else axis, od, exclusive)
    if lanes:
        a = cp.asarray(a)
    if kind == "float":
        return _float_cumsum(a, axis, od, exclusive)
    if lanes:
        return scan_order.int_lanes(lambda x, wide: _int_cumsum(x, wide, False, tune), a, axis, od,
                                    exclusive, cp)
    res = _int_cumsum(a.reshape(-1), np.dtype(np.int64 if od.kind == "i" else np.uint64), exclusive, tune)
    return res if res.dtype == od else res.astype(od)


def _int_cumsum(x, wide, exclusive, tune):
    """Flat integer prefix sums in NumPy's 64-bit accumulator dtype ``wide`` (look-back scan)."""
    cp = cupy()
    kdt = kernel_dtype(x.dtype)
    acc = np.cumsum(np.empty(0, kdt)).dtype  # the instantiated accumulator: same words as wide
    nvec = tune.scan_nvec or table(device_info(cp.cuda.Device().id)).scan_nvec
    if isinstance(x, cp.ndarray) and x.flags.c_contiguous and x.dtype == kdt:
        return _scan(x, acc, exclusive, acc.type(0), nvec)[0].view(wide)
    out = (cp if isinstance(x, cp.ndarray) else np).empty(x.size, acc)
    carry = [acc.type(0)]

    def run(s):
        return _scan(flat(s, kdt), acc, exclusive, carry[0], nvec)

    def add(total, part, region):
        res, last = part
        out[region[0]] = res if isinstance(out, cp.ndarray) else res.get()
        carry[0] = _descriptor_value(last, acc)
        return out

    return staged([x], run, add, ready=lambda v: False, align=tile(kdt, nvec)).view(wide)


def _float_cumsum(a, axis, od, exclusive):
    """float32/float64 scans in the shared block order: device data in one pass, one host
    lane in slabs of whole blocks (each from the previous slab's total)."""
    cp = cupy()
    if axis is None:
        a, axis = a.reshape(-1), 0
    outer, m, inner = scan_order.scan_layout(a.shape, axis)
    if isinstance(a, cp.ndarray):
        res = _lane_scan(cp.ascontiguousarray(a, od).reshape(outer, m, inner))[0].reshape(a.shape)
        return scan_order.shift_exclusive(res, axis, cp) if exclusive else res
    out = np.empty(m, od)  # host data, one lane
    carry = [None]

    def run(x):
        return _lane_scan(cp.ascontiguousarray(x, od).reshape(1, -1, 1), carry[0], True)

    def add(total, part, region):
        out[region[0]] = part[0].reshape(-1).get()
        carry[0] = part[1]
        return out

    staged([a.reshape(-1)], run, add, ready=lambda v: False, align=scan_order.SCAN_BLOCK)
    return scan_order.shift_exclusive(out, 0) if exclusive else out


def _lane_scan(x, carry=None, total=False):
    """``(inclusive scan, the lanes' totals after it (device, ``(outer, inner)``) or None)``
    of the lanes of the contiguous float ``x`` ``(outer, m, inner)`` from ``carry`` (a device
    or host value per lane, or one for all). scan.cu: lane_sums (one thread per lane block),
    the block offsets chained in order on the device (lane_chain; for one lane, by the
    first block of lane_scan_chained while the others scan), lane_scan. No host round trip."""
    cp = cupy()
    outer, m, inner = x.shape
    block = scan_order.SCAN_BLOCK  # read now: tests change it
    nblk = -(-m // block)
    units = outer * nblk * inner
    ct = CTYPE[x.dtype]
    grid = max(1, min(-(-units // LANE_THREADS), LANE_GRID))
    args = (x, np.int64(m), np.int64(inner), np.int64(nblk), np.int64(block), np.int64(units))
    out = cp.empty_like(x)
    if nblk == 1 and not total and carry is None:  # one block per lane, from -0.0
        launch(lane_kernel("scan", ct), grid, LANE_THREADS, args + (cp.full(units, -0.0, x.dtype), out))
        return out, None
    sums = cp.empty(units, x.dtype)
    launch(lane_kernel("sums", ct), grid, LANE_THREADS, args + (sums,))
    start = _carry(carry, outer, inner, x.dtype)
    if outer * inner == 1 and CHAIN_IN_SCAN:
        offs, totals, state = cp.empty_like(sums), cp.empty(1, x.dtype), cp.zeros(2, cp.uint64)
        launch(chained_kernel(ct), grid + 1, LANE_THREADS,
               (x, np.int64(m), np.int64(nblk), np.int64(block), sums, sums if start is None else start,
                np.int32(start is not None), offs, out, totals, state))
        return out, totals.reshape(1, 1)
    offs, after = _chain(sums, outer, nblk, inner, start)
    launch(lane_kernel("scan", ct), grid, LANE_THREADS, args + (offs, out))
    return out, after


def _carry(carry, outer, inner, dtype):
    """The lanes' first offsets as a contiguous device array of ``outer * inner``, or None."""
    if carry is None:
        return None
    cp = cupy()
    return cp.ascontiguousarray(cp.broadcast_to(cp.asarray(carry, dtype), (outer, inner))).reshape(-1)


def _chain(sums, outer, nblk, inner, start=None):
    """``(block offsets, lane totals (outer, inner))`` of the block ``sums`` laid out as the
    units ``(outer, nblk, inner)``, chained in order from ``start`` (one per lane, or None:
    -0.0) by scan.cu's lane_chain."""
    cp = cupy()
    lanes = outer * inner
    offs, totals = cp.empty_like(sums), cp.empty(lanes, sums.dtype)
    launch(chain_kernel(CTYPE[sums.dtype]), -(-lanes // CHAIN_WARPS), CHAIN_WARPS * 32,
           (sums, np.int64(nblk), np.int64(inner), np.int64(lanes), sums if start is None else start,
            np.int32(start is not None), offs, totals))
    return offs, totals.reshape(outer, inner)


def lane_kernel(which: str, ct: str, threads: int = LANE_THREADS, vecs: int = LANE_VECS):
    """scan.cu's ``lane_sums`` / ``lane_scan`` over the C++ type ``ct`` (``threads`` per block,
    ``vecs`` 16-byte vectors per tile stage: benchmarks/probes/scan_block_sweep.py sweeps them)."""
    return kernel("scan.cu", f"lane_{which}<{ct}, {threads // 32}, {vecs}>")


def chained_kernel(ct: str):
    """scan.cu's ``lane_scan_chained`` over the C++ type ``ct``."""
    return kernel("scan.cu", f"lane_scan_chained<{ct}, {LANE_THREADS // 32}, {LANE_VECS}>")


def chain_kernel(ct: str):
    """scan.cu's ``lane_chain`` over the C++ type ``ct``."""
    return kernel("scan.cu", f"lane_chain<{ct}, {CHAIN_WARPS}>")


def tile(kdt, nvec: int) -> int:
    """Elements per tile of the look-back scan over ``kdt`` with ``nvec`` vectors per thread."""
    return SCAN_BLOCK * nvec * (16 // np.dtype(kdt).itemsize)


def _scan(x, od, exclusive, init, nvec):
    """``(prefix sums of x starting from init, the inclusive total)``: one look-back pass."""
    cp = cupy()
    if x.data.ptr % 16:
        x = x.copy()  # vector loads need 16-byte alignment
    n = x.size
    out = cp.empty(n, od)
    if n == 0:
        return out, init
    ntiles = -(-n // tile(x.dtype, nvec))
    words = 2 if od.itemsize == 8 else 1  # a tile descriptor: value and status
    state = cp.zeros(2 * words * ntiles + 1, cp.uint64)  # aggregates, inclusives, counter
    kern = kernel("scan.cu", f"scan_lookback<{CTYPE[x.dtype]}, {CTYPE[od]}, {SCAN_BLOCK}, "
                             f"{nvec}, {'true' if exclusive else 'false'}>")
    inc = state[words * ntiles:2 * words * ntiles]
    launch(kern, ntiles, SCAN_BLOCK, (x, np.int64(n), out, state[:words * ntiles], inc,
                                      state[2 * words * ntiles:], od.type(init)))
    return out, inc[words * (ntiles - 1)]


def _descriptor_value(word, od):
    """The value in a tile descriptor's first word (kernels/scan.cu ``Desc``), on the host."""
    w = int(word.get())
    if od.itemsize == 8:
        return np.array([w], np.uint64).view(od)[0]
    return np.array([w & 0xFFFFFFFF], np.uint32).view(od)[0]


def ci_name_expressions() -> dict[str, list[str]]:
    """Every instantiation of scan.cu this module launches (for .ci/compile_kernels.py)."""
    out = []
    for t, a in (("int", "long long"), ("unsigned char", "long long"),
                 ("unsigned short", "unsigned long long"), ("long long", "long long")):
        for ex in ("false", "true"):
            for nvec in sorted({8, table({}).scan_nvec}):
                out.append(f"scan_lookback<{t}, {a}, {SCAN_BLOCK}, {nvec}, {ex}>")
    for t in ("float", "double"):
        out += [f"lane_{k}<{t}, {LANE_THREADS // 32}, {LANE_VECS}>" for k in ("sums", "scan")]
        out.append(f"lane_chain<{t}, {CHAIN_WARPS}>")
        out.append(f"lane_scan_chained<{t}, {LANE_THREADS // 32}, {LANE_VECS}>")
    return {"scan.cu": out}
