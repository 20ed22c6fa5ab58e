"""Counting launches: 1-D and 2-D histograms, chunk by chunk, into 64-bit counters.

* uint8/int8/bool: the raw byte values counted (hist_u8.wgsl), folded into bins on the
  host by :func:`hotbin.kernel_rule.value_table`: exact for any edges.
* uint16/int16: one value -> bin table (the same reference rule) looked up on the
  device (hist.wgsl, key kind LUT16).
* int32/uint32/float32/float16: the rule on u32 keys (hist.wgsl, :mod:`.keys`), 1-D or
  2-D cells (8/16-bit 2-D axes widened to 32 bits).

Workgroups count in u32 (one dispatch reads at most one storage binding, < 2**31
values) and add their totals into 64-bit global counters (kernels/out_*.wgsl).
"""
from __future__ import annotations

import numpy as np

from ...kernel_rule import fold_values, value_table
from .device import LOAD_BYTES, gpu, pow2_floor, words64
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


def counts2d(x: np.ndarray, y: np.ndarray, rx, ry):
    """``(grid, kept)`` of the flat native ``x``, ``y``, or NotImplemented (64-bit data)."""
    nx, ny = rx.nbins, ry.nbins
    kx, ky = keyed(widen(x)), keyed(widen(y))
    if kx is None or ky is None:
        return NotImplemented
    ax = axis(rx, kx[1]) if nx else None
    ay = axis(ry, ky[1]) if ny else None
    if ax is None or ay is None:
        return np.zeros((nx, ny), np.int64), 0
    grid = cells(2, [kx[0], ky[0]], [kx[1], ky[1]], [ax, ay], nx * ny, ny)
    return grid.reshape(nx, ny), int(grid.sum())


def count_u8(x: np.ndarray) -> np.ndarray:
    """Counts of each byte value of a flat uint8 array (int64, 256)."""
    g = gpu()
    n16 = x.size // LOAD_BYTES
    out = g.storage(U8_VALUES * 8)
    if n16:
        step = g.binding
        buf = g.storage(min(n16 * LOAD_BYTES, step))
        for s in range(0, n16 * LOAD_BYTES, step):
            chunk = x[s:min(s + step, n16 * LOAD_BYTES)]
            g.upload(buf, chunk)
            launch_u8(g, buf, chunk.size // LOAD_BYTES, out)
    got = words64(g.read(out))
    tail = x[n16 * LOAD_BYTES:]  # the bytes that fill no whole load
    return got + np.bincount(tail, minlength=U8_VALUES) if tail.size else got


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


def cells(dims, data, kinds, axes, ncell, ny) -> np.ndarray:
    """Counts (int64, ncell) of the cells of 1-D or 2-D keyed data, chunk by chunk."""
    g = gpu()
    ths = [a[0] for a in axes]
    offs = np.cumsum([0] + [t.size for t in ths])
    th = g.with_data(np.concatenate(ths).astype(np.uint32))
    head = np.array([0, ny, ncell, 0], np.uint32)
    recs = b"".join(axis_bytes(a[1], int(o)) for a, o in zip(axes, offs))
    if dims == 1:
        recs += recs  # Params has both rx and ry
    slots = max(MIN_SLOTS, 1 << (ncell - 1).bit_length())
    if slots <= g.wg_words:
        entry = "hist_private"
    else:  # SLOTS words: half cache tags, half counts
        entry, slots = "hist_global", min(2 * CACHE_SLOTS, pow2_floor(g.wg_words))
    pipe = g.pipeline("hist", entry, WG=WG, SLOTS=slots, DIMS=dims, KIND_X=kinds[0],
                      KIND_Y=kinds[-1])
    out = g.storage(8 * ncell)
    n = data[0].size
    itemsize = 2 if kinds[0] == KEY_LUT16 else 4
    step = g.binding // itemsize
    bufs = [g.storage(min(n, step) * itemsize) for _ in data]
    for s in range(0, n, step):
        for buf, d in zip(bufs, data):
            g.upload(buf, d[s:s + step])
        head[0] = min(step, n - s)
        g.run("hist", pipe, head.tobytes() + recs,
              {1: th, 2: bufs[0], 3: bufs[-1], 4: out}, (g.groups(int(head[0])),))
    return words64(g.read(out, 8 * ncell))
