"""Prefix sums on the device, as :mod:`hotbin.core.scan_order` defines them, bit for bit.

Integers: 64-bit two's-complement words (scan.wgsl, reduce-then-scan: exact, wrapping
as NumPy); along an axis, the lanes are scanned end to end as one array and each lane
then loses the sum before it (:func:`hotbin.core.scan_order.int_lanes`). float32: the shared
block order (scan_lanes.wgsl sums and scans each block, the host chains the block
offsets with :func:`hotbin.core.scan_order.block_offsets`).
"""
from __future__ import annotations

import numpy as np

from ...core import scan_order
from .device import gpu, native
from .tuning import SCAN_ITEMS, SCAN_LANES_WG, WG

#: scan.wgsl's ELEM: input words as u32, as i32 (sign-extended), or 64-bit (lo, hi) pairs
ELEM_U32, ELEM_I32, ELEM_64 = 0, 1, 2


def int_cumsum(a, axis, od, exclusive):
    """Integer prefix sums of integer (or bool) ``a`` into the integer ``od``."""
    if axis is not None and a.ndim > 1:
        return scan_order.int_lanes(lambda x, wide: int_cumsum(x, None, wide, False), a, axis, od,
                                    exclusive)
    x = native(a).reshape(-1)
    if x.dtype.itemsize <= 4:
        elem = ELEM_I32 if x.dtype.kind == "i" else ELEM_U32
        x = x.astype(np.int32 if elem == ELEM_I32 else np.uint32, copy=False)
    else:
        elem = ELEM_64
    res = _scan(x, elem, np.dtype(np.int64 if od.kind == "i" else np.uint64), exclusive)
    return res if res.dtype == od else res.astype(od)


def float_cumsum(a, axis, exclusive):
    """float32 scans in the shared block order: whole lanes per chunk, or one long lane in
    chunks of whole blocks continued from the previous chunk's total (the same offsets).
    NotImplemented when one lane's blocks do not fit a binding."""
    g = gpu()
    block = scan_order.SCAN_BLOCK
    x = native(a).astype(np.float32, copy=False)
    res = np.empty(x.shape if axis is not None else (x.size,), np.float32)
    outer, m, inner = scan_order.scan_layout(x.shape, axis)
    src, dst = x.reshape(outer, m, inner), res.reshape(outer, m, inner)
    cap = g.binding // 4  # values per binding
    if m * inner <= cap:
        rows = cap // (m * inner)
        for o in range(0, outer, rows):
            _lanes(g, src[o:o + rows], dst[o:o + rows])
    elif outer == inner == 1 and block <= cap:
        step = cap // block * block
        carry = None
        for s in range(0, m, step):
            carry = _lanes(g, src[:, s:s + step], dst[:, s:s + step], carry, True)
    else:
        return NotImplemented
    return scan_order.shift_exclusive(res, 0 if axis is None else axis) if exclusive else res


def _scan(x: np.ndarray, elem: int, od: np.dtype, exclusive: bool) -> np.ndarray:
    """Prefix sums of flat integers ``x`` (words of kind ``elem``) in the 64-bit ``od``: per
    chunk of one binding, the upload, one submission of every pass and one read-back straight
    into the result; the buffers come from the pool."""
    g = gpu()
    n = x.size
    res = np.empty(n, od)
    if n == 0:
        return res
    block = WG * SCAN_ITEMS
    step = max(block, g.binding // max(x.itemsize, od.itemsize) // block * block)
    src = g.take(min(n, step) * x.itemsize)
    dst = g.take(min(n, step) * od.itemsize)
    held = [src, dst]
    carry = np.zeros(1, od)
    try:
        for s in range(0, n, step):
            chunk = x[s:s + step]
            g.upload(src, chunk)
            enc = g.device.create_command_encoder()
            _scan_device(g, enc, held, src, chunk.size, elem, exclusive, carry.view(np.uint32), dst)
            part = res[s:s + chunk.size]
            g.read(dst, chunk.size * od.itemsize, enc, out=part)
            carry = part[-1:] + chunk[-1:].astype(od) if exclusive else part[-1:].copy()
    finally:
        g.give(*held)
    return res


def _params(n, nblk, exclusive=False, carry=(0, 0)) -> bytes:
    """scan.wgsl's Params: n, nblk, exclusive, pad, carry (lo, hi), pad pair."""
    return np.array([n, nblk, int(exclusive), 0, carry[0], carry[1], 0, 0], np.uint32).tobytes()


def _scan_device(g, enc, held, src, n, elem, exclusive, carry, dst):
    """Record into ``enc`` the scan of ``n`` values of ``src`` into ``dst`` (reduce, scan the
    block totals, scan); the buffers it takes from the pool are appended to ``held``."""
    block = WG * SCAN_ITEMS
    nblk = -(-n // block)
    consts = dict(WG=WG, ITEMS=SCAN_ITEMS)
    groups = (max(1, min(nblk, g.workgroups, g.max_groups)),)
    offs = g.zeros(nblk * 8, enc)
    held.append(offs)
    if nblk > 1:
        sums = g.take(nblk * 8)
        held.append(sums)
        g.run("scan", g.pipeline("scan", "reduce_blocks", ELEM=elem, **consts), _params(n, nblk),
              {2: src, 3: offs, 4: sums}, groups, enc)
        _scan_device(g, enc, held, sums, nblk, ELEM_64, True, np.zeros(2, np.uint32), offs)
    g.run("scan", g.pipeline("scan", "scan_blocks", ELEM=elem, **consts),
          _params(n, nblk, exclusive, carry), {2: src, 3: offs, 4: dst}, groups, enc)


def _lanes(g, src, dst, carry=None, total=False):
    """Scan the lanes of ``src`` ``(outer, m, inner)`` float32 into ``dst`` from ``carry``
    (scan_lanes.wgsl); returns the lanes' totals (the next carry) when ``total``."""
    block = scan_order.SCAN_BLOCK
    outer, m, inner = src.shape
    nblk = -(-m // block)
    units = outer * nblk * inner
    wg = SCAN_LANES_WG[g.kind]
    consts = dict(WG=wg, BLOCK=block)
    head = np.array([m, inner, nblk, units], np.uint32).tobytes()
    groups = (max(1, min(-(-units // wg), g.max_groups)),)
    held = []
    try:
        buf, out = g.taken_with(src, held), g.take(src.size * 4)
        held.append(out)
        sums = np.full((outer, nblk, inner), -0.0, np.float32)
        if nblk > 1 or total:
            sbuf = g.take(units * 4)
            held.append(sbuf)
            enc = g.device.create_command_encoder()
            g.run("scan_lanes", g.pipeline("scan_lanes", "lane_sums", **consts), head,
                  {2: buf, 3: g.unused, 4: sbuf}, groups, enc)  # lane_sums reads no offsets
            g.read(sbuf, units * 4, enc, out=sums)
        offsets, after = scan_order.block_offsets(sums, carry)
        enc = g.device.create_command_encoder()
        g.run("scan_lanes", g.pipeline("scan_lanes", "lane_scan", **consts), head,
              {2: buf, 3: g.taken_with(np.ascontiguousarray(offsets), held), 4: out},
              groups, enc)
        if dst.flags.c_contiguous:
            g.read(out, src.size * 4, enc, out=dst)
        else:
            dst[...] = g.read(out, src.size * 4, enc).view(np.float32).reshape(src.shape)
    finally:
        g.give(*held)
    return after
