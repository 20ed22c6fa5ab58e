"""CUDA 2-D spatial binning: ``hotbin/kernels/spatial.cu``.

:func:`histogram2d` takes CuPy arrays and returns CuPy arrays on the same device;
:mod:`hotbin.backend.cuda` stages host data through it.

2-D binning
-----------
Each axis uses the exact rule of :mod:`hotbin.core.binning` (``edges[i] <= v < edges[i+1]``
compared in the rule's comparison dtype, the last bin closed at ``kernel_cmp[-1]``;
:func:`hotbin.core.binning.cell_rule` makes that end open for heatmaps of a given range), so results
equal the cpu backend's bit for bit: counts always, int64 sums of integer
weights always, fixed-point words always (after :func:`hotbin.core.fixedpoint.fold`,
which this module applies), float64 sums up to the order of float additions.

The kernels compare in the data's type when that is exact: float32 data against
float64 edges compare against float32 edges rounded up (the closed end rounded
down), which gives the float64 answer for every float32 value, subnormals
included (the float32 comparisons are explicit PTX without flush). float16 data are widened to float64; other data are
converted on the device to the comparison dtype exactly as NumPy converts them. The bin is first guessed by a multiply; when the guess lies
farther than a bound ``eps`` (from the edges' measured deviation from an exact
linspace and the rounding of the guess) from a bin boundary it is the answer,
otherwise it is corrected against the edges array. Rules whose guess is less
than half a bin off (every ``cell_rule``) take hist_common.cuh's nearest-edge rule
(spatial.cu ``Axis`` mode 3: one compare with the edge nearest the guess, no range
test, no walk), the 1-D kernels' rule on the same edge table layout.

Strategy (:func:`hotbin.backend.cuda.tuning.spatial_plan`): ``private`` when the grid fits in shared memory (one
pass), ``tiled`` otherwise (tile regions sized from a strided sample, a
counting-sort scatter of the codes into them (by each warp alone, ``scatter_warps``,
for grids of at most 32 tiles on nearest-edge rules; else by blocks), per-tile shared-memory
accumulation with every block taking an equal slice, so a hot tile is split
over all blocks; runs that overflow a region go to the result by global
atomics, so a poor sample costs time, never exactness), ``direct``
(global atomics, one per run of a thread's points in one cell) for grids with
more tiles than the scatter handles and for inputs too small to amortize four
launches. Every strategy adds a thread's consecutive points of one cell in
registers first, so a hot cell costs one atomic per run, not per point.

Accumulators (``kernels/spatial_acc.cuh``, by :attr:`Reduction.acc`): counts,
float64 and int64 sums, fixed-point words, and the values accumulators ``mean``
(``[sum w, n]``), ``min`` and ``max`` (``[extreme w, n]``, exact: atomicMax on
order-preserving 64-bit keys, minima as their complement) with one kernel per
weight type (float32, float64; other weights are converted to float64 exactly as
NumPy converts them; float16 widened to float32) and the operation a launch
argument; ``finish_values`` turns keys and counts into the float64 partial. NaN
weights change no partial of ``mean``, ``min``, ``max``, ``fixed``; with
``red.center`` those of ``mean`` and ``fixed`` take ``(w - center[cell])**2``.
Categories (``by=(codes, ncat)``, codes of any integer dtype read as they are) make
the code ``category * nx * ny + cell``, codes outside ``[0, ncat)`` in category
``ncat``: one grid of ``(ncat + 1) * nx * ny`` cells that the strategies tile.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...core import fixedpoint, reductions
from ...core.binning import BinRule
from .rule import MODE_NEAREST, axis_args, axis_mode, edge_table
from .runtime import aligned, cupy, device_info, device_table, flat, kernel, launch, resident
from .tuning import Tuning, current, spatial_plan, table

__all__ = ["histogram2d", "center", "ACC", "ci_name_expressions"]

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
#: scatter_warps (one warp ranks its own batch; grids of at most WARP_TILES tiles): threads
#: per block, groups of 16 bytes of points per lane per batch, resident blocks per SM wanted
#: (its launch bound: 4 x 256, 64 registers). Unswept: 4 groups (16 float32 points a lane)
#: is the most that holds 64 registers without spilling (nvcc -Xptxas -v; 8 spill 1 KB).
WARP_TILES = 32
WARP_SCATTER_THREADS = 256
WARP_SCATTER_GROUPS = 4
WARP_SCATTER_BLOCKS_PER_SM = 4
#: the scatters' fill counters lie this many words apart (spatial.cu FILL_STRIDE: one per
#: 128-byte line)
FILL_STRIDE = 32


class Acc(NamedTuple):
    """One accumulator of spatial_acc.cuh: its struct (``{w}``: the weights' kernel type),
    shared bytes per cell, the result's dtype in the kernel, the weights' dtype (None:
    counts; "values": float32 or float64, as :func:`_values`), the launch's ``op``."""

    name: str
    cell_bytes: int
    out: np.dtype
    weights: np.dtype | str | None
    op: int = 0


_U64, _F64 = np.dtype(np.uint64), np.dtype(np.float64)
#: spatial_acc.cuh's ValuesAcc operations (OP_SUM, OP_MIN, OP_MAX)
OP_SUM, OP_MIN, OP_MAX = 0, 1, 2
#: spatial_acc.cuh's accumulator by :attr:`hotbin.core.reductions.Reduction.acc`
ACC = {"count": Acc("CountAcc", 4, _U64, None),
       "f64": Acc("SumF64", 8, _F64, _F64),
       "i64": Acc("SumI64", 8, _U64, np.dtype(np.int64)),
       "fixed": Acc("FixedAcc", 16, _U64, _F64),
       "mean": Acc("ValuesAcc<{w}>", 12, _U64, "values", OP_SUM),
       "min": Acc("ValuesAcc<{w}>", 12, _U64, "values", OP_MIN),
       "max": Acc("ValuesAcc<{w}>", 12, _U64, "values", OP_MAX)}
_KTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
          np.dtype(np.int64): "i64", np.dtype(np.uint64): "u64"}
#: the coordinate types of scatter_warps (the nearest-edge rule compares floats)
FLOATS = ("float", "double")
#: the C++ accumulators the kernels are instantiated with
ACC_TYPES = ("CountAcc", "SumF64", "SumI64", "FixedAcc", "ValuesAcc<float>", "ValuesAcc<double>")


def _exprs(tx: str, ty: str, a: str) -> dict[str, tuple]:
    """The name expressions of spatial.cu for one (x, y, C++ accumulator), by the launch
    sequence that needs them: "private", "direct", and the tiled strategy with each scatter
    ("warp", "block", "block-prefetch"; the scatter first). Each sequence's kernels are
    compiled together, and only those (each unrolled point loop adds to NVRTC's time: nvcc
    takes a good part of a second for one scatter_warps; results/gpu-h200.md, spatial.py)."""
    finish = ("fold_words", "finish_values")
    tiled = (f"sample_tiles<{tx}, {ty}, {POINT_THREADS}>", f"plan_tiles<{PLAN_THREADS}>",
             f"fill_offsets<{PLAN_THREADS}>", f"accumulate_tiles<{a}, {ACC_THREADS}>") + finish
    return {"private": (f"private_grid<{tx}, {ty}, {a}, {ACC_THREADS}>",) + finish,
            "direct": (f"direct_grid<{tx}, {ty}, {a}, {POINT_THREADS}>",) + finish,
            "block": (f"scatter_codes<{tx}, {ty}, {a}, false, {SCATTER_THREADS}, {SCATTER_GROUPS}>",) + tiled,
            "block-prefetch": (f"scatter_codes<{tx}, {ty}, {a}, true, {SCATTER_THREADS}, {SCATTER_GROUPS}>",)
            + tiled} | ({"warp": (f"scatter_warps<{tx}, {ty}, {a}, {WARP_SCATTER_THREADS}, {WARP_SCATTER_GROUPS}>",)
                         + tiled} if tx in FLOATS and ty in FLOATS else {})


def _kernels(tx: str, ty: str, a: str, sequence: str):
    """``which -> kernel`` of one (x, y, C++ accumulator) in the launch sequence ``sequence``
    (:func:`_exprs`; the tiled strategy's is its scatter, :func:`_scatter`); "scatter" names
    the sequence's scatter. scatter_warps exists for floating coordinates only: the
    nearest-edge rule that it needs compares in float or double."""
    exprs = _exprs(tx, ty, a)[sequence]

    def get(which: str):
        expr = exprs[0] if which == "scatter" else next(e for e in exprs if e.split("<")[0] == which)
        return kernel("spatial.cu", expr, exprs)
    return get


def ci_name_expressions() -> dict[str, list[str]]:
    """Every instantiation of spatial.cu this module can launch (for .ci/compile_kernels.py)."""
    out: dict = {}
    for tx in _KTYPE.values():
        for ty in _KTYPE.values():
            for a in ACC_TYPES:
                for group in _exprs(tx, ty, a).values():
                    for e in group:
                        out.setdefault(e, None)
    return {"spatial.cu": list(out)}


#: (device, value dtype, comparison edges, last edge, uniform, shortcut) -> (ctype, kdt, args):
#: heatmaps make new rules each call, so this keys on their contents. Cleared when full.
_AXES: dict = {}
AXES_MAX = 64


def _axis(v, rule: BinRule, shortcut: bool = True):
    """``(ctype, data, args)``: the axis' data on the device and its kernel arguments
    (``shortcut`` False: the nearest-edge rule compares every value with its edge)."""
    dev = v.device.id
    key = (dev, v.dtype.str, rule.cmp.dtype.str, rule.cmp.tobytes(), float(rule.edges[-1]), rule.uniform, shortcut)
    hit = _AXES.get(key)
    if hit is None:
        kdt, edges, g = axis_args(rule, v.dtype)
        e = device_table(dev, np.ascontiguousarray(edge_table(edges)).tobytes(), edges.dtype.str)  # uploaded once
        mode = axis_mode(g.mode, rule.nbins)
        eps = g.eps if shortcut or mode != MODE_NEAREST else type(g.eps)(0.5)  # 1/2: no value trusted
        args = (e, kdt.type(edges[0]), kdt.type(edges[-1]), g.lo, g.scale, eps, np.uint32(rule.nbins),
                np.int32(mode))
        if len(_AXES) >= AXES_MAX:
            _AXES.clear()
        hit = _AXES[key] = (_KTYPE[kdt], kdt, args)
    return hit[0], aligned(v, hit[1]), hit[2]


def _weights(weights, acc: Acc):
    """``(ctype, data)`` of the weights as the accumulator reads them (a dummy for counts); the
    values accumulators read float32 (float16 widened exactly) or float64 (every other dtype,
    converted as NumPy converts it)."""
    cp = cupy()
    if acc.weights is None:
        return "double", cp.empty(1, np.float64)
    w = cp.asarray(weights)
    if acc.weights != "values":
        w = aligned(w, acc.weights)
    else:
        w = aligned(flat(w), np.float32) if w.dtype in (np.float16, np.float32) else aligned(w, np.float64)
    return _KTYPE[w.dtype], w


def _cats(by):
    """``(codes, args)``: the category codes read as stored (bool as uint8) and spatial.cu's
    ``CATS_PARAMS`` (no categories: ``bytes`` 0)."""
    if by is None or int(by[1]) == 0:
        return None, (None, np.uint32(0), np.uint32(0), np.uint32(0))
    cp = cupy()
    codes = cp.ascontiguousarray(by[0]).reshape(-1)
    if codes.dtype == np.bool_:
        codes = codes.view(cp.uint8)
    if codes.dtype.kind not in "iu":
        raise TypeError(f"by: expected integer category codes, got dtype {codes.dtype}")
    return codes, (codes, np.uint32(by[1]), np.uint32(codes.dtype.itemsize), np.uint32(codes.dtype.kind == "i"))


def center(red):
    """spatial_acc.cuh's center: ``red.center`` as float64 on the device (None: not centered)."""
    if red.center is None:
        return None
    cp = cupy()
    return cp.ascontiguousarray(cp.asarray(red.center, np.float64)).reshape(-1)


def histogram2d(x, y, rx: BinRule, ry: BinRule, weights=None, red=reductions.COUNT, tune: Tuning | None = None,
                by=None):
    """``(grid, kept)``: the partial of ``red`` over the cells ``grid[ix, iy]`` of ``(x, y)``.

    Parameters
    ----------
    x, y : cupy.ndarray
        1-D, same length; bool, integer or real float values (NaN lands nowhere).
    rx, ry : hotbin.core.binning.BinRule
        The two axes' rules (``histogram2d_rules`` or ``cell_rule``).
    weights : cupy.ndarray, optional
        Same length; given unless ``red.acc`` is "count".
    red : hotbin.core.reductions.Reduction
        Its ``acc`` picks the accumulator (:data:`ACC`): counts; float64 sums (float
        atomics: the last bits may vary between runs); exact int64 sums; fixed-point
        words at ``2**-red.scale``, folded (``0 <= lo < 2**32``), equal to the cpu
        backend's bit for bit and deterministic; or the values ``mean`` (``[sum, n]``,
        float atomics), ``min``, ``max`` (``[extreme, n]``, exact; ``red.identity``
        where a cell has no value). NaN weights change no partial of ``fixed`` and the
        values; ``red.center`` (cells' shape) centers ``mean`` and ``fixed``.
    tune : Tuning, optional
        Forced choices (default :func:`hotbin.backend.cuda.tuning.current`).
    by : (cupy.ndarray, int), optional
        ``(codes, ncat)``: integer category codes, one per point; a code outside
        ``[0, ncat)`` is category ``ncat``.

    Returns
    -------
    grid : cupy.ndarray
        ``red.lead + (nx, ny)`` (``red.lead + (ncat + 1, nx, ny)`` with ``by``) of
        ``red.dtype``: int64 counts (never wrapping: 64-bit), float64 or int64 sums,
        int64 words, or the float64 values' rows.
    kept : int
        Points that landed in a cell (whatever their weight or category).
    """
    cp = cupy()
    tune = current() if tune is None else tune
    x, y = cp.asarray(x), cp.asarray(y)
    n = int(x.size)  # y, weights and codes: the same length (checked by the caller)
    nx, ny = rx.nbins, ry.nbins
    layers = () if by is None else (int(by[1]) + 1,)
    ncell = nx * ny * math.prod(layers)
    if ncell >= 0xFFFFFFFF:
        raise ValueError(f"bins: {' x '.join(map(str, layers + (nx, ny)))} cells is more than the cuda "
                         "backend's 2**32 - 2")
    acc = ACC[red.acc]
    out = cp.zeros(math.prod(red.lead) * ncell, acc.out)
    kept = 0
    if n:
        with x.device:
            tw, w = _weights(weights, acc)
            codes, cats = _cats(by)
            tx, xd, ax = _axis(x, rx, tune.shortcut)
            ty, yd, ay = _axis(y, ry, tune.shortcut)
            factor = fixedpoint.factors(red.scale) if red.acc == "fixed" else (0.0, 0.0)
            ctx = (*(np.float64(v) for v in factor), center(red), np.int32(acc.op))
            info = device_info(x.device.id)
            plan = spatial_plan(n, ncell, red.acc, info, tune)
            kept = _run(plan, tx, ty, red.acc, acc.name.format(w=tw), xd, yd, w, codes, ax, ay, cats, ctx,
                        ncell, out, info, tune)
    elif acc.weights == "values":  # no point: the identity
        out.view(np.float64)[:ncell] = red.identity[0] if red.identity else 0.0
    return out.view(red.dtype).reshape(red.lead + layers + (nx, ny)), kept


def _scatter(tab, tune: Tuning, ntiles: int, ax: tuple, ay: tuple) -> str:
    """The tiled strategy's scatter: "warp" (scatter_warps: at most WARP_TILES tiles, both
    axes on the nearest-edge rule, the table's or the forced ``scatter``), else "block" or
    "block-prefetch" (scatter_codes, the table's or the forced ``prefetch``)."""
    which = tune.scatter or tab.scatter
    if which == "warp" and ntiles <= WARP_TILES and ax[-1] == ay[-1] == MODE_NEAREST:
        return "warp"
    prefetch = tab.scatter_prefetch if tune.prefetch is None else tune.prefetch
    return "block-prefetch" if prefetch else "block"


def _run(strategy, tx, ty, acc, name, x, y, w, codes, ax, ay, cats, ctx, ncell, out, info, tune) -> int:
    """Launch ``strategy`` over chunks of at most :data:`CHUNK` points: the points kept."""
    cp = cupy()
    n = x.size
    sms = info["sms"]
    tab = table(info)
    regions = tune.regions or tab.regions
    shift = tab.tile_shift[acc]
    scatter = _scatter(tab, tune, -(-ncell >> shift), ax, ay)
    kern = _kernels(tx, ty, name, scatter if strategy == "tiled" else strategy)
    weighted = ACC[acc].weights is not None
    cell_bytes = ACC[acc].cell_bytes
    fold = kern("fold_words") if acc == "fixed" else None
    values = ACC[acc].weights == "values"
    if strategy == "tiled":
        ntiles = -(-ncell >> shift)
        # one zeroed allocation: the kept points (u64), the sampled counts by tile, the
        # regions' bases and capacities, their fill counters (FILL_STRIDE apart), the offsets
        sizes = (2, ntiles + 1, ntiles, ntiles, ntiles * FILL_STRIDE, ntiles + 1)
        ws = cp.zeros(sum(sizes), cp.uint32)
        ends = np.cumsum(sizes)
        counter, counts, base, cap, fill, start = (ws[e - k:e] for e, k in zip(ends, sizes))
        counter = counter.view(cp.uint64)
        m = min(n, CHUNK)
        capacity = m + m // BUFFER_EXTRA + ntiles * regions.pad
        sorted_codes = cp.empty(capacity, cp.uint16)  # a code within its tile (tile_shift <= 16)
        wsorted = cp.empty(capacity if weighted else 1, w.dtype)
        k = 16 // max(x.dtype.itemsize, y.dtype.itemsize)  # points per 16-byte load
        point_bytes = 4 + (w.dtype.itemsize if weighted else 0)  # a code (and its weight) staged
        if scatter == "warp":  # a batch per warp: its points staged, then its codes sorted, in shared memory
            threads, batch = WARP_SCATTER_THREADS, 32 * WARP_SCATTER_GROUPS * k
            scatter_smem = WARP_SCATTER_THREADS * WARP_SCATTER_GROUPS * k * (x.dtype.itemsize + y.dtype.itemsize
                                                                             + point_bytes)
            want = WARP_SCATTER_BLOCKS_PER_SM
        else:
            threads = SCATTER_THREADS
            batch = SCATTER_THREADS * SCATTER_GROUPS * k
            scatter_smem = batch * point_bytes + SCATTER_TILE_WORDS * ntiles * 4
            want = SCATTER_BLOCKS_PER_SM
        per_block = batch * (threads // 32 if scatter == "warp" else 1)  # points a block takes per round
        scatter_kern = kern("scatter")
        scatter_grid = sms * resident(scatter_kern, threads, scatter_smem, want)
        acc_smem = (1 << shift) * cell_bytes
    else:
        counter = cp.zeros(1, cp.uint64)  # dropped points
    for s in range(0, n, CHUNK):
        xs, ys = x[s:s + CHUNK], y[s:s + CHUNK]
        ws = w[s:s + CHUNK] if weighted else w
        cs = cats if codes is None else (codes[s:s + CHUNK], *cats[1:])
        m = xs.size
        if strategy == "private":
            smem = ncell * cell_bytes
            kp = kern("private_grid")
            g = max(1, min(sms * resident(kp, ACC_THREADS, smem, PRIVATE_BLOCKS_PER_SM),
                           -(-m // (ACC_THREADS * PRIVATE_PER_THREAD))))
            launch(kp, g, ACC_THREADS, (xs, ys, ws, np.uint64(m), *ax, *ay, *cs, *ctx, out, counter), smem)
        elif strategy == "direct":
            g = max(1, min(sms * DIRECT_BLOCKS_PER_SM, -(-m // (POINT_THREADS * DIRECT_PER_THREAD))))
            launch(kern("direct_grid"), g, POINT_THREADS, (xs, ys, ws, np.uint64(m), *ax, *ay, *cs, *ctx, out,
                                                           counter))
        else:
            nsample = min(m, regions.sample)
            g = max(1, min(sms * SAMPLE_BLOCKS_PER_SM, -(-nsample // POINT_THREADS)))
            launch(kern("sample_tiles"), g, POINT_THREADS,
                   (xs, ys, np.uint64(m), *ax, *ay, *cs, np.uint32(shift), np.uint32(ntiles), np.uint64(nsample),
                    counts), (ntiles + 1) * 4)
            launch(kern("plan_tiles"), 1, PLAN_THREADS,
                   (counts, np.uint32(ntiles), np.uint32(nsample), np.uint32(m), np.uint32(capacity),
                    np.float64(regions.slack), np.float64(regions.sigmas), np.uint32(regions.pad), base, cap,
                    fill))
            g = max(1, min(scatter_grid, -(-m // per_block)))
            launch(scatter_kern, g, threads,
                   (xs, ys, ws, np.uint64(m), *ax, *ay, *cs, np.uint32(shift), np.uint32(ntiles), base, cap, fill,
                    sorted_codes, wsorted, *ctx, out, counter), scatter_smem)
            launch(kern("fill_offsets"), 1, PLAN_THREADS, (counts, fill, cap, np.uint32(ntiles), start))
            launch(kern("accumulate_tiles"), sms, ACC_THREADS,
                   (sorted_codes, wsorted, start, base, np.uint32(ntiles), np.uint32(shift), np.uint32(ncell),
                    *ctx, out), acc_smem)
        if fold is not None:
            launch(fold, min(sms * FOLD_BLOCKS_PER_SM, -(-ncell // FOLD_THREADS)), FOLD_THREADS,
                   (out, np.uint32(ncell)))
    if values:  # once, after every chunk: keys and counts into float64 [value, n]
        launch(kern("finish_values"), min(sms * FOLD_BLOCKS_PER_SM, -(-ncell // FOLD_THREADS)), FOLD_THREADS,
               (out, np.uint32(ncell), ctx[-1]))
    c = int(counter.get()[0])
    return c if strategy == "tiled" else n - c
