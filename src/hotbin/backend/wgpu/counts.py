"""Counting launches: 1-D and 2-D histograms, chunk by chunk, into 64-bit counters.

* uint8/int8/bool: the raw byte values counted (hist_u8.wgsl), folded into bins on the
  host by :func:`hotbin.core.kernel_rule.value_table`: exact for any edges.
* uint16/int16: one value -> bin table (the same reference rule) looked up on the
  device (hist.wgsl, key kind LUT16).
* int32/uint32/float32/float16: the rule on u32 keys (hist.wgsl, :mod:`.keys`), 1-D or
  2-D cells (8/16-bit 2-D axes widened to 32 bits), 2-D cells with categories: the cell of
  a point is cell.wgsl's (the rule, then ``cat * nx * ny + cell``), which
  extreme.wgsl shares; :func:`stream` launches both, chunk by chunk.

Workgroups count in u32 (one dispatch reads at most one storage binding, < 2**31
values) and add their totals into 64-bit global counters (kernels/out_*.wgsl).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core.kernel_rule import fold_values, value_table
from .device import BINDINGS, LOAD_BYTES, gpu, native, pow2_floor, words64
from .keys import KEY_LUT16, axis, axis_bytes, keyed, lut16_axis, widen
from .tuning import CACHE_SLOTS, MIN_SLOTS, U8, WG

#: byte values counted by hist_u8.wgsl
U8_VALUES = 256
#: u32 words of workgroup memory per invocation of count_bytes_private: 256 u16 counters
PRIV_WORDS = U8_VALUES // 2


def counts(x: np.ndarray, rule) -> np.ndarray:
    """int64 counts of the flat native ``x`` under ``rule``, or NotImplemented (64-bit data)."""
    dt = x.dtype
    if rule.nbins == 0:
        return np.zeros(0, np.int64)
    if dt.itemsize == 1 and dt.kind in "iu":
        return fold_values(count_u8(x.view(np.uint8)), value_table(rule, dt), rule.nbins)
    if dt.itemsize == 2 and dt.kind in "iu":
        ax = lut16_axis(value_table(rule, dt))
        return cells(1, [x.view(np.uint16)], [KEY_LUT16], [ax], rule.nbins, 1).reshape(-1)
    k = keyed(x)
    if k is None:
        return NotImplemented
    data, kind = k
    ax = axis(rule, kind)
    if ax is None:
        return np.zeros(rule.nbins, np.int64)
    return cells(1, [data], [kind], [ax], rule.nbins, 1).reshape(-1)


def counts2d(x: np.ndarray, y: np.ndarray, rx, ry, by=None):
    """``(grid, kept)`` of the flat native ``x``, ``y`` (``by``: with categories, as the
    protocol's ``histogram2d``), or NotImplemented (64-bit data, codes that are not integers)."""
    pts = points2d(x, y, rx, ry, by)
    if pts is NotImplemented:
        return NotImplemented
    if pts.axes is None:
        return np.zeros(pts.shape, np.int64), 0
    grid = cells(2, pts.data, pts.kinds, pts.axes, int(np.prod(pts.shape)), ry.nbins, pts.cats)
    return grid.reshape(pts.shape), int(grid.sum())


class Points(NamedTuple):
    """2-D points as cell.wgsl takes them."""

    data: list  #: raw u32 words of x and y
    kinds: list  #: their key kinds
    axes: list | None  #: (thresholds, Axis fields) of x and y; None: no point lands in a cell
    shape: tuple  #: the cells: ((ncat + 1,) with categories) + (nx, ny)
    cats: tuple | None  #: (codes as read, CAT_BITS, CAT_SIGNED, ncat)


def points2d(x, y, rx, ry, by=None):
    """The :class:`Points` of flat native ``x``, ``y`` and ``by=(codes, ncat)``, or
    NotImplemented (64-bit data, codes that are not integers)."""
    nx, ny = rx.nbins, ry.nbins
    kx, ky = keyed(widen(x)), keyed(widen(y))
    cats = None if by is None else categories(by[0], int(by[1]))
    if kx is None or ky is None or cats is NotImplemented:
        return NotImplemented
    ax = axis(rx, kx[1]) if nx else None
    ay = axis(ry, ky[1]) if ny else None
    shape = (nx, ny) if by is None else (int(by[1]) + 1, nx, ny)
    axes = None if ax is None or ay is None else [ax, ay]
    return Points([kx[0], ky[0]], [kx[1], ky[1]], axes, shape, cats)


def categories(codes, ncat: int):
    """``(codes as cell.wgsl reads them, CAT_BITS, CAT_SIGNED, ncat)``, or NotImplemented for
    codes that are not integers. 8/16/32-bit codes are read raw (the device clamps them);
    64-bit codes are clamped here (outside ``[0, ncat)``: ``ncat``) and narrowed to uint32."""
    c = native(codes).reshape(-1)
    if c.dtype.kind not in "iu":
        return NotImplemented
    if c.dtype.itemsize <= 4:
        return c, 8 * c.dtype.itemsize, c.dtype.kind == "i", ncat
    return np.where((c >= 0) & (c < ncat), c, ncat).astype(np.uint32), 32, False, ncat


def count_u8(x: np.ndarray) -> np.ndarray:
    """Counts of each byte value of a flat uint8 array (int64, 256)."""
    g = gpu()
    n16 = x.size // LOAD_BYTES
    tail = x[n16 * LOAD_BYTES:]  # the bytes that fill no whole load
    if not n16:
        return np.bincount(tail, minlength=U8_VALUES).astype(np.int64)
    step = g.binding
    buf = g.take(min(n16 * LOAD_BYTES, step))
    enc = g.device.create_command_encoder()
    out = g.zeros(U8_VALUES * 8, enc)
    try:
        for s in range(0, n16 * LOAD_BYTES, step):
            if s:  # the chunk before was counted from buf: submit it before buf is overwritten
                g.device.queue.submit([enc.finish()])
                enc = g.device.create_command_encoder()
            chunk = x[s:min(s + step, n16 * LOAD_BYTES)]
            g.upload(buf, chunk)
            launch_u8(g, buf, chunk.size // LOAD_BYTES, out, encoder=enc)
        got = read_counts(g, out, U8_VALUES, enc)
    finally:
        g.give(buf)
    return got + np.bincount(tail, minlength=U8_VALUES) if tail.size else got


def count_u8_resident(buf, n16: int, **config) -> np.ndarray:
    """Counts of each byte value (int64, 256) of the first ``n16`` 16-byte loads of the
    device buffer ``buf``: one submission (zero the counters, count, copy them out) and one
    read-back of 2 KiB. What :func:`count_u8` does per chunk, for data already on the device
    (benchmarks/wgpu_suite.py's "call"); ``config`` overrides the tuning as :func:`launch_u8`'s."""
    g = gpu()
    enc = g.device.create_command_encoder()
    out = g.zeros(U8_VALUES * 8, enc)
    launch_u8(g, buf, n16, out, encoder=enc, **config)
    return read_counts(g, out, U8_VALUES, enc)


def read_counts(g, out, ncell: int, encoder) -> np.ndarray:
    """The ``ncell`` 64-bit counters of ``out`` (from ``g.zeros``) as int64, read back in the
    submission of ``encoder``; ``out`` goes back to the pool."""
    return words64(g.read(out, 8 * ncell, encoder, recycle=True))


def launch_u8(g, buf, n16, out, copies=None, unroll=None, wg=None, groups=None, mode=None,
              encoder=None):
    """Count the first ``n16`` 16-byte loads of ``buf`` into ``out``.

    The keyword arguments override the tuning table (benchmarks/wgpu_suite.py sweeps them).
    ``mode`` "atomic": COPIES interleaved copies of workgroup atomic counters; "private":
    u16 counters per invocation, plain increments (WG * 512 bytes of workgroup memory).
    """
    tune = U8[g.kind]
    mode = mode or tune.get("mode", "atomic")
    wg = min(wg or tune["wg"], int(g.limits["max-compute-invocations-per-workgroup"]),
             int(g.limits["max-compute-workgroup-size-x"]))
    unroll = unroll or tune["unroll"]
    if mode == "private":  # each invocation's counters plus the workgroup's merged 256
        while wg > 1 and PRIV_WORDS * wg + U8_VALUES > g.wg_words:
            wg //= 2
        pipe = g.pipeline("hist_u8", "count_bytes_private", WG=wg, COPIES=1, UNROLL=unroll,
                          PRIV_WORDS=PRIV_WORDS * wg)
    else:  # as many copies of the 256 counters as the adapter's workgroup storage holds
        copies = min(copies or tune.get("copies", 8), pow2_floor(g.wg_words // U8_VALUES))
        pipe = g.pipeline("hist_u8", "count_bytes", WG=wg, COPIES=copies, UNROLL=unroll)
    params = np.array([n16, 0, 0, 0], np.uint32).tobytes()
    groups = groups or max(1, min(-(-n16 // wg), tune["groups"], g.max_groups))
    g.run("hist_u8", pipe, params, {2: buf, 4: out}, (groups,), encoder)


def cells(dims, data, kinds, axes, ncell, ny, cats=None) -> np.ndarray:
    """Counts (int64, ncell) of the cells of 1-D or 2-D keyed data (and categories)."""
    g = gpu()
    slots = max(MIN_SLOTS, 1 << (ncell - 1).bit_length())
    if slots <= g.wg_words:
        entry = "hist_private"
    else:  # SLOTS words: half cache tags, half counts
        entry, slots = "hist_global", min(2 * CACHE_SLOTS, pow2_floor(g.wg_words))
    enc = g.device.create_command_encoder()
    out = g.zeros(8 * ncell, enc)
    held = []
    try:
        enc = stream("hist", entry, {"SLOTS": slots}, dims, data, kinds, axes, ncell, ny, cats,
                     {4: out}, encoder=enc, held=held)
        return read_counts(g, out, ncell, enc)
    finally:
        g.give(*held)


def stream(name, entry, constants, dims, data, kinds, axes, ncell, ny, cats, outputs,
           weights=None, encoder=None, scale=0, held=None):
    """Dispatch ``entry`` of kernels/<name>.wgsl (cell.wgsl prepended) over the points,
    chunk by chunk (each input at most one binding): coordinates ``data`` (bindings 2, 3),
    category codes ``cats`` (5), ``weights`` (6) into the ``outputs`` ({binding: buffer});
    ``scale``: fixed.wgsl's fixed-point exponent (cell.wgsl's Params.scale).

    The first chunk is recorded into ``encoder`` (commands already in it run first), every
    chunk but the last is submitted (its inputs are overwritten by the next upload); the
    last chunk's commands come back unsubmitted, in the returned encoder, so that the
    read-back of the outputs joins their submission (:meth:`.memory.Memory.read_many`). The
    input buffers come from the pool and are appended to ``held``: the caller gives them back
    once that submission is made."""
    g = gpu()
    enc = encoder or g.device.create_command_encoder()
    ths = [a[0] for a in axes]
    offs = np.cumsum([0] + [t.size for t in ths])
    held = [] if held is None else held
    th = g.taken_with(np.concatenate(ths).astype(np.uint32), held)
    ncat = 0 if cats is None else cats[3]
    head = np.array([0, ny, ncell, ncat, ncell // (ncat + 1), np.int32(scale).view(np.uint32), 0, 0],
                    np.uint32)
    recs = b"".join(axis_bytes(a[1], int(o)) for a, o in zip(axes, offs))
    if dims == 1:
        recs += recs  # Params has both rx and ry
    pipe = g.pipeline(name, entry, WG=WG, DIMS=dims, KIND_X=kinds[0], KIND_Y=kinds[-1],
                      CAT_BITS=0 if cats is None else cats[1],
                      CAT_SIGNED=bool(cats is not None and cats[2]), **constants)
    ins = {2 + i: d for i, d in enumerate(data)}
    if cats is not None:
        ins[5] = cats[0]
    if weights is not None:
        ins[6] = weights
    n = data[0].size
    step = g.binding // max(a.itemsize for a in ins.values())
    bufs = {b: g.take(min(n, step) * a.itemsize) for b, a in ins.items()}
    held.extend(bufs.values())
    bound = {b: g.unused for b in BINDINGS[name][1:]} | {1: th} | bufs | outputs
    for s in range(0, n, step):
        if s:
            g.device.queue.submit([enc.finish()])
            enc = g.device.create_command_encoder()
        for b, a in ins.items():
            g.upload(bufs[b], a[s:s + step])
        head[0] = min(step, n - s)
        g.run(name, pipe, head.tobytes() + recs, bound, (g.groups(int(head[0])),), enc)
    return enc
