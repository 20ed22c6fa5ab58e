"""The crossfilter pass on the device (kernels/crossfilter.cu): masks, state bytes, every panel.

:func:`crossfilter_pass` launches one kernel over every row: each row's brush mask, its state
byte and its count in every histogram panel whose other brushes it passes, the panels' counts
in block-private shared memory (merged with 64-bit atomics), or in global memory when their
bins do not fit. The columns stay in their own dtype; the semantics are those of the host pass
(:func:`hotbin.serve.crossfilter._pass`), bit for bit. Every array here is a CuPy array.
"""
from __future__ import annotations

import numpy as np

from .runtime import cupy, device_info, kernel, launch, resident

__all__ = ["DTYPE_CODES", "crossfilter_pass", "copies_for", "ci_name_expressions"]

#: crossfilter.cu's dtype codes (T_*) of the columns a brush reads
DTYPE_CODES = {np.dtype(t): k for k, t in enumerate(
    (np.float64, np.float32, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
     np.uint64))}
#: threads per block, and blocks per SM asked for (fewer when shared memory or registers cap
#: them): a first choice, to be measured (benchmarks/serve_bench.py --gpu --case explore)
THREADS = 256
BLOCKS_PER_SM = 8
#: most shared memory the private copies of a block take, and most copies (one per lane)
PRIVATE_BYTES = 48 << 10
MAX_COPIES = 32
#: most rows one block counts (32-bit shared counters)
BLOCK_ROWS = 1 << 30
_FILE, _NAME = "crossfilter.cu", "crossfilter_pass"


def ci_name_expressions() -> dict[str, list[str]]:
    """crossfilter.cu has no templates (its kernel is ``extern "C"``)."""
    return {}


def copies_for(slots: int, smem_block: int) -> int:
    """Private copies of ``slots`` 32-bit counters per block: the most (a power of two up to
    :data:`MAX_COPIES`) within :data:`PRIVATE_BYTES`; one when even that is over but the
    device's shared memory per block holds it; 0 (global atomics) otherwise."""
    if slots <= 0:
        return 0
    copies = MAX_COPIES
    while copies > 1 and slots * copies * 4 > PRIVATE_BYTES:
        copies //= 2
    if slots * copies * 4 <= min(PRIVATE_BYTES, smem_block):
        return copies
    return 1 if slots * 4 <= smem_block else 0


def crossfilter_pass(n: int, brushes, cats, box_bit: int, panels):
    """``(state, counts)`` of one pass over ``n`` rows.

    ``brushes``: ``(column, lo, hi, bit)``, a row fails it unless ``lo <= column < hi``
    compared in float64 (NaN fails); ``cats``: ``(codes, keep, bit)`` (int32 codes, uint8
    ``keep`` per category) or None; ``box_bit``: the bit of the box's brushes. ``panels``:
    ``(binned, own, bins)``, the rows' bins (uint16, ``bins`` for none) and the panel's own
    brush bits. ``state`` is a uint8 per row (bit 0: it fails no brush but the box; bit 1:
    none); ``counts`` int64, each panel's bins one after the other. Exact and reproducible.
    """
    cp = cupy()
    state = cp.empty(n, cp.uint8)
    base = np.cumsum([0] + [int(b) for _, _, b in panels]).astype(np.uint32)
    out = cp.zeros(max(int(base[-1]), 1), cp.uint64)
    if n == 0:
        return state, out[:int(base[-1])].view(cp.int64)
    cols = [_column(c) for c, *_ in brushes]
    bcol = _table([c.data.ptr for c in cols], np.uint64)
    btype = _table([DTYPE_CODES[c.dtype] for c in cols], np.int32)
    blo = _table([lo for _, lo, _, _ in brushes], np.float64)
    bhi = _table([hi for _, _, hi, _ in brushes], np.float64)
    bbit = _table([bit for *_, bit in brushes], np.uint64)
    if cats is None:
        codes, keep, cat_bit = cp.zeros(1, cp.int32), cp.zeros(1, cp.uint8), 0
    else:
        codes, keep, cat_bit = cats
        codes, keep = cp.asarray(codes, cp.int32), cp.asarray(keep, cp.uint8)
        if keep.size == 0:
            keep = cp.zeros(1, cp.uint8)  # no category: every code fails (nkeep 0)
    binned = [cp.ascontiguousarray(b, cp.uint16) for b, _, _ in panels]
    for b in binned:
        if b.size != n:
            raise ValueError(f"panels: {b.size:,} binned rows for {n:,}")
    pbin = _table([b.data.ptr for b in binned], np.uint64)
    pown = _table([own for _, own, _ in panels], np.uint64)
    pbase = cp.asarray(base)
    dev = state.device.id
    info = device_info(dev)
    copies = copies_for(int(base[-1]), info["smem_block"])
    smem = int(base[-1]) * copies * 4
    kern = kernel(_FILE, _NAME)
    fit = resident(kern, THREADS, smem, BLOCKS_PER_SM)
    grid = max(1, min(info["sms"] * fit, -(-n // THREADS)))
    grid = max(grid, -(-n // BLOCK_ROWS))
    nkeep = int(cats[1].size) if cats is not None else 0
    with state.device:
        launch(kern, grid, THREADS, (bcol, btype, blo, bhi, bbit, np.int32(len(brushes)), codes, keep,
                                     np.int64(nkeep), np.uint64(cat_bit), np.uint64(box_bit), pbin, pown,
                                     pbase, np.int32(len(panels)), np.uint32(copies), np.uint64(n), state,
                                     out), smem)
    return state, out[:int(base[-1])].view(cp.int64)


def _column(a):
    """A column as the kernel reads it: a 1-D contiguous CuPy array of a :data:`DTYPE_CODES`
    dtype (made so once, when the crossfilter takes its columns)."""
    if a.dtype not in DTYPE_CODES or a.ndim != 1 or not a.flags.c_contiguous:
        raise TypeError(f"crossfilter: a column of dtype {a.dtype}, shape {a.shape} (expected a "
                        "contiguous 1-D column of a real dtype)")
    return a


def _table(values, dtype):
    """A small host table on the current device (at least one entry: the kernel reads none
    when the count is 0)."""
    return cupy().asarray(np.array(list(values) or [0], dtype))
