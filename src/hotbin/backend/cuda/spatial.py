"""CUDA 2-D spatial binning (issue #4): ``hotbin/kernels/spatial.cu``.

:func:`histogram2d` takes CuPy arrays and returns CuPy arrays on the same device;
:mod:`hotbin.backend.cuda` stages host data through it.

2-D binning
-----------
Each axis uses the exact rule of :mod:`hotbin.binning` (``edges[i] <= v < edges[i+1]``
compared in the rule's comparison dtype, the last bin closed at ``kernel_cmp[-1]``;
:func:`hotbin.binning.cell_rule` makes that end open for heatmaps of a given range), so results
equal the cpu backend's bit for bit: counts always, int64 sums of integer
weights always, fixed-point words always (after :func:`hotbin.fixedpoint.fold`,
which this module applies), float64 sums up to the order of float additions.

The kernels compare in the data's type when that is exact: float32 data against
float64 edges compare against float32 edges rounded up (the closed end rounded
down), which gives the float64 answer for every float32 value, subnormals
included (the float32 comparisons are explicit PTX without flush). float16 data are widened to float64; other data are
converted on the device to the comparison dtype exactly as NumPy converts them. The bin is first guessed by a multiply; when the guess lies
farther than a bound ``eps`` (from the edges' measured deviation from an exact
linspace and the rounding of the guess) from a bin boundary it is the answer,
otherwise it is corrected against the edges array.

Strategy (:func:`hotbin.backend.cuda.tuning.spatial_plan`): ``private`` when the grid fits in shared memory (one
pass), ``tiled`` otherwise (tile regions sized from a strided sample, a
counting-sort scatter of 4-byte codes into them, per-tile shared-memory
accumulation with every block taking an equal slice, so a hot tile is split
over all blocks; runs that overflow a region go to the result by global
atomics, so a poor sample costs time, never exactness), ``direct``
(one global atomic per point) for grids with more tiles than the scatter
handles and for inputs too small to amortize four launches.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ... import fixedpoint, reductions
from ...binning import BinRule
from .rule import axis_args
from .runtime import aligned, cupy, device_info, kernel, launch, resident
from .tuning import Tuning, current, spatial_plan, table

__all__ = ["histogram2d", "ACC", "ci_name_expressions"]

#: points per launch sequence: bounds the sorted-code buffer (2 B + weight per point),
#: keeps 32-bit block counters and fixed-point low words (<= fixedpoint.LO_CHUNK) exact
CHUNK = 1 << 28
#: sorted-code buffer: points + points / BUFFER_EXTRA + ntiles * pad
BUFFER_EXTRA = 8
#: blocks per SM at most (capped by the occupancy the compiler allows)
SCATTER_BLOCKS_PER_SM = 8
SAMPLE_BLOCKS_PER_SM = 4
DIRECT_BLOCKS_PER_SM = 8
PRIVATE_BLOCKS_PER_SM = 4
#: threads per block, passed to the kernels as template arguments (their launch bounds):
#: the kernels that hold a tile / the grid, the one-block planners, the point walkers
ACC_THREADS = 1024
PLAN_THREADS = 1024
POINT_THREADS = 256
SCATTER_THREADS = 256
SCATTER_GROUPS = 4  #: groups of 16 bytes of points per thread per scatter batch
#: points per thread the direct and private grids are sized for (for_points<2>: 2 groups)
DIRECT_PER_THREAD, PRIVATE_PER_THREAD = 4, 4
FOLD_THREADS = 256  #: fold_words: one cell per thread
FOLD_BLOCKS_PER_SM = 8
#: scatter_codes' shared memory per tile: counts, offsets, positions, bases, capacities
SCATTER_TILE_WORDS = 5


class Acc(NamedTuple):
    """One accumulator of spatial.cu: its struct, shared bytes per cell, the result's
    dtype in the kernel, and the weights' dtype (None: counts)."""

    name: str
    cell_bytes: int
    out: np.dtype
    weights: np.dtype | None


#: spatial.cu's accumulator by :attr:`hotbin.reductions.Reduction.acc`
ACC = {"count": Acc("CountAcc", 4, np.dtype(np.uint64), None),
       "f64": Acc("SumF64", 8, np.dtype(np.float64), np.dtype(np.float64)),
       "i64": Acc("SumI64", 8, np.dtype(np.uint64), np.dtype(np.int64)),
       "fixed": Acc("FixedAcc", 16, np.dtype(np.uint64), np.dtype(np.float64))}
_KTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
          np.dtype(np.int64): "i64", np.dtype(np.uint64): "u64"}


def _exprs(tx: str, ty: str, acc: str) -> tuple:
    """The name expressions of spatial.cu compiled together for one (x, y, accumulator)."""
    a = ACC[acc].name
    return (f"private_grid<{tx}, {ty}, {a}, {ACC_THREADS}>", f"direct_grid<{tx}, {ty}, {a}, {POINT_THREADS}>",
            f"sample_tiles<{tx}, {ty}, {POINT_THREADS}>",
            f"scatter_codes<{tx}, {ty}, {a}, false, {SCATTER_THREADS}, {SCATTER_GROUPS}>",
            f"scatter_codes<{tx}, {ty}, {a}, true, {SCATTER_THREADS}, {SCATTER_GROUPS}>",
            f"accumulate_tiles<{a}, {ACC_THREADS}>", f"plan_tiles<{PLAN_THREADS}>",
            f"fill_offsets<{PLAN_THREADS}>", "fold_words")


def _kernels(tx: str, ty: str, acc: str, prefetch: bool):
    """``which -> kernel`` of one (x, y, accumulator); scatter_codes the ``prefetch`` variant."""
    exprs = _exprs(tx, ty, acc)

    def get(which: str):
        if which == "scatter_codes":
            expr = exprs[4 if prefetch else 3]
        else:
            expr = next(e for e in exprs if e.split("<")[0] == which)
        return kernel("spatial.cu", expr, exprs)
    return get


def ci_name_expressions() -> dict[str, list[str]]:
    """Every instantiation of spatial.cu this module can launch (for .ci/compile_kernels.py)."""
    out: dict = {}
    for tx in _KTYPE.values():
        for ty in _KTYPE.values():
            for acc in ACC:
                for e in _exprs(tx, ty, acc):
                    out.setdefault(e, None)
    return {"spatial.cu": list(out)}


def _axis(v, rule: BinRule):
    """``(ctype, data, args)``: the axis' data on the device and its kernel arguments."""
    cp = cupy()
    kdt, edges, g = axis_args(rule, v.dtype)
    args = (cp.asarray(edges), kdt.type(edges[0]), kdt.type(edges[-1]), g.lo, g.scale, g.eps,
            np.uint32(rule.nbins), np.int32(g.mode))
    return _KTYPE[kdt], aligned(v, kdt), args


def histogram2d(x, y, rx: BinRule, ry: BinRule, weights=None, red=reductions.COUNT, tune: Tuning | None = None):
    """``(grid, kept)``: the partial of ``red`` over the cells ``grid[ix, iy]`` of ``(x, y)``.

    Parameters
    ----------
    x, y : cupy.ndarray
        1-D, same length; bool, integer or real float values (NaN lands nowhere).
    rx, ry : hotbin.binning.BinRule
        The two axes' rules (``histogram2d_rules`` or ``cell_rule``).
    weights : cupy.ndarray, optional
        Same length; given unless ``red.acc`` is "count".
    red : hotbin.reductions.Reduction
        Its ``acc`` picks the accumulator (:data:`ACC`): counts; float64 sums (float
        atomics: the last bits may vary between runs); exact int64 sums; or fixed-point
        words at ``2**-red.scale``, folded (``0 <= lo < 2**32``), equal to the cpu
        backend's bit for bit and deterministic.
    tune : Tuning, optional
        Forced choices (default :func:`hotbin.backend.cuda.tuning.current`).

    Returns
    -------
    grid : cupy.ndarray
        ``red.lead + (nx, ny)`` of ``red.dtype``: int64 counts (never wrapping: 64-bit),
        float64 or int64 sums, or int64 words.
    kept : int
        Points that landed in a cell.
    """
    cp = cupy()
    tune = current() if tune is None else tune
    x, y = cp.asarray(x), cp.asarray(y)
    n = int(x.size)  # y and weights: the same length (checked by the caller)
    nx, ny = rx.nbins, ry.nbins
    ncell = nx * ny
    if ncell >= 0xFFFFFFFF:
        raise ValueError(f"bins: {nx} x {ny} cells is more than the cuda backend's 2**32 - 2")
    acc = ACC[red.acc]
    words = math.prod(red.lead)
    out = cp.zeros(words * ncell, acc.out)
    factor = fixedpoint.factors(red.scale) if red.acc == "fixed" else (0.0, 0.0)
    wdt = acc.weights or np.dtype(np.float64)
    w = aligned(cp.asarray(weights), wdt) if acc.weights is not None else cp.empty(1, wdt)
    kept = 0
    if n:
        with x.device:
            tx, xd, ax = _axis(x, rx)
            ty, yd, ay = _axis(y, ry)
            info = device_info(x.device.id)
            plan = spatial_plan(n, ncell, red.acc, info, tune)
            kept = _run(plan, tx, ty, red.acc, xd, yd, w, ax, ay, ncell, factor, out, info, tune)
    return out.view(red.dtype).reshape(red.lead + (nx, ny)), kept


def _run(strategy, tx, ty, acc, x, y, w, ax, ay, ncell, factor, out, info, tune) -> int:
    cp = cupy()
    n = x.size
    sms = info["sms"]
    tab = table(info)
    regions = tune.regions or tab.regions
    prefetch = tab.scatter_prefetch if tune.prefetch is None else tune.prefetch
    kern = _kernels(tx, ty, acc, prefetch)
    weighted = ACC[acc].weights is not None
    f = tuple(np.float64(v) for v in factor)  # fixedpoint.factors: two powers of two
    fold = kern("fold_words") if acc == "fixed" else None
    counter = cp.zeros(1, cp.uint64)  # dropped points (private, direct) or kept points (tiled)
    shift = tab.tile_shift[acc]
    if strategy == "tiled":
        ntiles = -(-ncell >> shift)
        counts = cp.zeros(ntiles + 1, cp.uint32)
        base, cap, fill = (cp.empty(ntiles, cp.uint32) for _ in range(3))
        start = cp.empty(ntiles + 1, cp.uint32)
        m = min(n, CHUNK)
        capacity = m + m // BUFFER_EXTRA + ntiles * regions.pad
        codes = cp.empty(capacity, cp.uint16)  # a code within its tile (tile_shift <= 16)
        wsorted = cp.empty(capacity if weighted else 1, w.dtype)
        k = 16 // max(x.dtype.itemsize, y.dtype.itemsize)  # points per 16-byte load
        batch = SCATTER_THREADS * SCATTER_GROUPS * k
        scatter_smem = (batch * 4 + (batch * w.dtype.itemsize if weighted else 0)
                        + SCATTER_TILE_WORDS * ntiles * 4)
        scatter = kern("scatter_codes")
        scatter_grid = sms * resident(scatter, SCATTER_THREADS, scatter_smem, SCATTER_BLOCKS_PER_SM)
        acc_smem = (1 << shift) * ACC[acc].cell_bytes
    for s in range(0, n, CHUNK):
        xs, ys = x[s:s + CHUNK], y[s:s + CHUNK]
        ws = w[s:s + CHUNK] if weighted else w
        m = xs.size
        if strategy == "private":
            smem = ncell * ACC[acc].cell_bytes
            kp = kern("private_grid")
            g = max(1, min(sms * resident(kp, ACC_THREADS, smem, PRIVATE_BLOCKS_PER_SM),
                           -(-m // (ACC_THREADS * PRIVATE_PER_THREAD))))
            launch(kp, g, ACC_THREADS, (xs, ys, ws, np.uint64(m), *ax, *ay, *f, out, counter), smem)
        elif strategy == "direct":
            g = max(1, min(sms * DIRECT_BLOCKS_PER_SM, -(-m // (POINT_THREADS * DIRECT_PER_THREAD))))
            launch(kern("direct_grid"), g, POINT_THREADS, (xs, ys, ws, np.uint64(m), *ax, *ay, *f, out, counter))
        else:
            nsample = min(m, regions.sample)
            g = max(1, min(sms * SAMPLE_BLOCKS_PER_SM, -(-nsample // POINT_THREADS)))
            launch(kern("sample_tiles"), g, POINT_THREADS,
                   (xs, ys, np.uint64(m), *ax, *ay, np.uint32(shift), np.uint32(ntiles), np.uint64(nsample),
                    counts), (ntiles + 1) * 4)
            launch(kern("plan_tiles"), 1, PLAN_THREADS,
                   (counts, np.uint32(ntiles), np.uint32(nsample), np.uint32(m), np.uint32(capacity),
                    np.float64(regions.slack), np.float64(regions.sigmas), np.uint32(regions.pad), base, cap,
                    fill))
            g = max(1, min(scatter_grid, -(-m // batch)))
            launch(scatter, g, SCATTER_THREADS,
                   (xs, ys, ws, np.uint64(m), *ax, *ay, np.uint32(shift), np.uint32(ntiles), base, cap, fill,
                    codes, wsorted, *f, out, counter), scatter_smem)
            launch(kern("fill_offsets"), 1, PLAN_THREADS, (counts, fill, cap, np.uint32(ntiles), start))
            launch(kern("accumulate_tiles"), sms, ACC_THREADS,
                   (codes, wsorted, start, base, np.uint32(ntiles), np.uint32(shift), np.uint32(ncell), *f, out),
                   acc_smem)
        if fold is not None:
            launch(fold, min(sms * FOLD_BLOCKS_PER_SM, -(-ncell // FOLD_THREADS)), FOLD_THREADS,
                   (out, np.uint32(ncell)))
    c = int(counter.get()[0])
    return c if strategy == "tiled" else n - c
