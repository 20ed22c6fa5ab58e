"""CUDA 2-D spatial binning (issue #4) and the fused luminance histogram (issue #5).

Kernels: ``hotbin/kernels/spatial.cu`` and ``hotbin/kernels/luma.cu``, loaded with
:mod:`importlib.resources`, specialized by C++ templates (``name_expressions``) and
compiled once per instantiation by :class:`cupy.RawModule` (cached here, and on
disk by CuPy). Both functions take CuPy arrays (or anything ``cupy.asarray``
takes without a copy, such as torch CUDA tensors) and return CuPy arrays on the
same device; :mod:`hotbin.backend.cuda` wraps them into the backend interface.

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
included (CuPy compiles with ``-ftz=true``; the float32 comparisons are explicit
PTX without flush). float16 data are widened to float64; other data are
converted on the device to the comparison dtype exactly as NumPy converts them. The bin is first guessed by a multiply; when the guess lies
farther than a bound ``eps`` (from the edges' measured deviation from an exact
linspace and the rounding of the guess) from a bin boundary it is the answer,
otherwise it is corrected against the edges array.

Strategy (``_plan``): ``private`` when the grid fits in shared memory (one
pass), ``tiled`` otherwise (tile regions sized from a strided sample, a
counting-sort scatter of 4-byte codes into them, per-tile shared-memory
accumulation with every block taking an equal slice, so a hot tile is split
over all blocks; runs that overflow a region go to the result by global
atomics, so a poor sample costs time, never exactness), ``direct``
(one global atomic per point) for grids with more tiles than the scatter
handles and for inputs too small to amortize four launches.
"""
from __future__ import annotations

import functools
import importlib.resources
import math

import numpy as np

from .. import fixedpoint
from ..binning import BinRule

__all__ = ["histogram2d", "luma_histogram", "ci_name_expressions"]

INSTALL = 'pip install "hotbin[cuda]"'

# --- tuning (benchmarks/gpu_spatial.py; results in benchmarks/results/gpu-spatial-2026-11-30-h200.md) ---
# Status of each entry: "measured" names the run that chose it; "unswept" means it
# was set from the design arithmetic and the benchmark prints the rows to sweep it.

#: log2 of the cells of one tile, per accumulator: 128 KiB of shared accumulators
#: per block (u32 counts 2^15, float64/int64 sums 2^14, fixed-point word pairs 2^13).
#: Fewer, larger tiles keep the scatter's runs long. Unswept (gpu_spatial run 1
#: used 2^15 for counts: 74-85 G points/s on 0-100 % hot, vs 1.4-94.5 global atomics).
TILE_SHIFT = {"count": 15, "f64": 14, "i64": 14, "fixed": 13}
#: most tiles the scatter ranks in shared memory; beyond, strategy "direct"
MAX_TILES = 4096
#: below this many points, one direct pass beats four launches (unswept)
DIRECT_BELOW = 1 << 16
#: points per launch sequence: bounds the sorted-code buffer (2 B + weight per point),
#: keeps 32-bit block counters and fixed-point low words (<= fixedpoint.LO_CHUNK) exact
CHUNK = 1 << 28
#: tile regions are sized from this many sampled points (a strided gather: 2^20 of
#: 2^28 points reads ~64 MB of sectors instead of run 1's counting pass over 2 GiB)
SAMPLE = 1 << 20
#: a region holds estimate * (1 + SLACK) + SIGMAS standard deviations + PAD points;
#: runs beyond it go to the result by global atomics (exact, only slower)
SLACK, SIGMAS, PAD = 0.02, 6.0, 4096
#: sorted-code buffer: points + points / BUFFER_EXTRA + ntiles * PAD
BUFFER_EXTRA = 8
#: scatter variant: load the next batch's points while ranking this one (108 vs 80
#: registers: 2 vs 3 resident blocks). Off: benchmarks/gpu_spatial.py on the H200,
#: 2026-11-30 (results/gpu-spatial-2026-11-30-h200.md), 2^28 points into 1024^2,
#: 0/50/90/100 % hot: 74.8/66.6/68.7/65.7 G points/s with it, 79.7/77.0/80.2/75.7 without.
SCATTER_PREFETCH = False
#: blocks per SM at most (capped by the occupancy the compiler allows)
SCATTER_BLOCKS_PER_SM = 8
SAMPLE_BLOCKS_PER_SM = 4
DIRECT_BLOCKS_PER_SM = 8
#: threads per block of the kernels that hold a tile / the grid (kernels/spatial.cu bounds)
ACC_THREADS = 1024
SCATTER_THREADS = 256  #: = SCATTER_THREADS in spatial.cu
SCATTER_GROUPS = 4  #: = SCATTER_GROUPS in spatial.cu
#: luma: threads per block (= LUMA_THREADS in luma.cu), blocks per SM, fewest pixels per
#: block. Measured (gpu_spatial run 1): 4156-4382 GB/s on 2^29 RGBA8 pixels, uniform,
#: narrow and dark, one image or a batch of 512: 95-100 % of the 4356 GB/s read floor.
LUMA_THREADS = 512
LUMA_BLOCKS_PER_SM = 4
LUMA_MIN_PIXELS = 1 << 16
LUMA_MAX_PIXELS = 1 << 31  #: 32-bit per-block counters

#: benchmarks and tests may force a strategy ("private", "tiled", "direct"); empty in use
OVERRIDE: dict = {}

_ACC_NAME = {"count": "CountAcc", "f64": "SumF64", "i64": "SumI64", "fixed": "FixedAcc"}
_ACC_BYTES = {"count": 4, "f64": 8, "i64": 8, "fixed": 16}
_KTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
          np.dtype(np.int64): "i64", np.dtype(np.uint64): "u64"}


def _cupy():
    try:
        import cupy
    except ImportError as exc:
        raise ModuleNotFoundError(f"the cuda backend needs CuPy: {INSTALL}") from exc
    return cupy


@functools.lru_cache(maxsize=None)
def _source(name: str) -> str:
    return (importlib.resources.files("hotbin") / "kernels" / name).read_text()


@functools.lru_cache(maxsize=None)
def _module(name: str, exprs: tuple):
    cp = _cupy()
    return cp.RawModule(code=_source(name), options=("-std=c++17",), name_expressions=exprs)


def _spatial_exprs(tx: str, ty: str, acc: str) -> tuple:
    a = _ACC_NAME[acc]
    return (f"private_grid<{tx}, {ty}, {a}>", f"direct_grid<{tx}, {ty}, {a}>",
            f"sample_tiles<{tx}, {ty}>", f"scatter_codes<{tx}, {ty}, {a}, false>",
            f"scatter_codes<{tx}, {ty}, {a}, true>",
            f"accumulate_tiles<{a}>", "plan_tiles", "fill_offsets", "fold_words")


def _spatial_kernel(tx: str, ty: str, acc: str, which: str):
    """The kernel ``which`` ("scatter_codes" takes the variant SCATTER_PREFETCH names)."""
    if which == "scatter_codes":
        which = f"scatter_codes<{tx}, {ty}, {_ACC_NAME[acc]}, {'true' if _prefetch() else 'false'}>"
    return _spatial_function(tx, ty, acc, which)


@functools.lru_cache(maxsize=None)
def _spatial_function(tx: str, ty: str, acc: str, which: str):
    exprs = _spatial_exprs(tx, ty, acc)
    expr = next(e for e in exprs if e.split("<")[0] == which or e == which)
    return _module("spatial.cu", exprs).get_function(expr)


def ci_name_expressions() -> dict[str, list[str]]:
    """Every instantiation this module can launch, by file (for a compile-only CI check)."""
    types = ("float", "double", "i64", "u64")
    out = {"spatial.cu": [], "luma.cu": ["luma_histogram<3>", "luma_histogram<4>"]}
    seen = set()
    for tx in types:
        for ty in types:
            for acc in _ACC_NAME:
                for e in _spatial_exprs(tx, ty, acc):
                    if e not in seen:
                        seen.add(e)
                        out["spatial.cu"].append(e)
    return out


@functools.lru_cache(maxsize=None)
def _device_info(dev_id: int) -> dict:
    a = _cupy().cuda.Device(dev_id).attributes
    return {"sms": a["MultiProcessorCount"], "smem_block": a["MaxSharedMemoryPerBlockOptin"],
            "smem_sm": a["MaxSharedMemoryPerMultiprocessor"]}


def _launch(kern, grid, block, args, smem=0):
    if smem > 40 * 1024 and kern.max_dynamic_shared_size_bytes < smem:  # static shared counts too
        kern.max_dynamic_shared_size_bytes = smem
    kern((int(grid),), (int(block),), args, shared_mem=int(smem))


def _resident(kern, block, smem, want):
    """Blocks per SM: ``want``, capped by what registers and shared memory allow."""
    cp = _cupy()
    if smem > 40 * 1024 and kern.max_dynamic_shared_size_bytes < smem:
        kern.max_dynamic_shared_size_bytes = smem
    try:
        fit = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kern.kernel.ptr, block, smem)
    except Exception:  # no occupancy query in this CuPy: count registers (64K per SM, 256 per warp)
        warps = block // 32
        per_warp = -(-kern.num_regs * 32 // 256) * 256
        fit = min(65536 // max(1, per_warp * warps), 2048 // block)
    return max(1, min(want, int(fit)))


def _aligned(cp, a, dtype):
    """``a`` as a contiguous 1-D array of ``dtype`` starting on a 16-byte boundary."""
    a = cp.ascontiguousarray(a.reshape(-1)).astype(dtype, copy=False)
    if a.data.ptr % 16:
        a = a.copy()
    return a


# --- the bin rule's kernel arguments ----------------------------------------------------

def _edges_f32(e: np.ndarray) -> np.ndarray:
    """float32 edges giving the same comparisons for float32 values as float64 edges ``e``.

    ``v >= e[i]`` iff ``v >= up(e[i])`` (the smallest float32 not below ``e[i]``); the
    closed end ``v <= e[-1]`` iff ``v <= down(e[-1])`` (the largest not above it).
    """
    with np.errstate(over="ignore"):
        f = e.astype(np.float32)
    below = f.astype(np.float64) < e
    f[below] = np.nextafter(f[below], np.float32(np.inf))
    with np.errstate(over="ignore"):
        last = np.float32(e[-1])
    if np.float64(last) > e[-1]:
        last = np.nextafter(last, np.float32(-np.inf))
    f[-1] = last
    return f


def _guess(rule: BinRule, gdt: np.dtype):
    """``(mode, lo, scale, eps)`` of the multiply guess in the guess dtype ``gdt``.

    mode 0: binary search (edges not from linspace); 1: guess, then correct against
    the edges; 2: as 1, but a guess ``t`` farther than ``eps`` from an integer is the
    bin outright. ``eps`` bounds, in bins, the edges' deviation from the exact
    linspace (measured) plus the rounding of the guess (u * (|ends| / width + nbins)
    for the guess dtype's unit roundoff u, with margin).
    """
    zero = (0, gdt.type(0), gdt.type(0), gdt.type(0))
    if not rule.uniform or rule.scale == 0 or rule.cmp.dtype.kind != "f":
        return zero
    nb = rule.nbins
    e = rule.cmp.astype(np.float64)
    lo, hi = float(e[0]), float(rule.edges[-1])
    width = hi - lo
    if not (math.isfinite(width) and width > 0):
        return zero
    with np.errstate(over="ignore"):
        lo_g, scale_g = gdt.type(lo), gdt.type(nb / width)
    if not (np.isfinite(lo_g) and np.isfinite(scale_g) and scale_g > 0):
        return zero
    step = width / nb
    model = lo + np.arange(nb, dtype=np.float64) * step
    dev = float(np.max(np.abs(e[:nb] - model))) / step
    mag = max(abs(lo), abs(hi)) / step + nb
    u = float(np.finfo(gdt).eps) / 2
    eps = 2 * dev + 8 * (u + 2.0 ** -53) * mag
    if gdt == np.float32:  # CuPy compiles with -ftz=true: operands and v - lo below 2^-126 flush
        eps += 4 * 2.0 ** -126 * (float(scale_g) + 1)
    if not eps < 0.125:
        return (1, lo_g, scale_g, gdt.type(0))
    return (2, lo_g, scale_g, gdt.type(eps * 1.25))


def _axis(cp, v, rule: BinRule):
    """``(ctype, data, args)``: the axis' data on the device and its kernel arguments."""
    cmp = rule.kernel_cmp
    if v.dtype == np.float32 and cmp.dtype.kind == "f":
        kdt, edges = np.dtype(np.float32), _edges_f32(cmp.astype(np.float64))
    elif v.dtype == np.float16:
        # widened to float64, which CuPy's -ftz=true conversion kernels never flush
        kdt, edges = np.dtype(np.float64), cmp.astype(np.float64)
    else:
        kdt, edges = cmp.dtype, cmp
    gdt = np.dtype(np.float32) if kdt == np.float32 else np.dtype(np.float64)
    data = _aligned(cp, v, kdt)
    mode, lo, scale, eps = _guess(rule, gdt)
    e = cp.asarray(edges.astype(kdt, copy=False))
    args = (e, kdt.type(edges[0]), kdt.type(edges[-1]), lo, scale, eps,
            np.uint32(rule.nbins), np.int32(mode))
    return _KTYPE[kdt], data, args


# --- 2-D binning --------------------------------------------------------------------------

def _prefetch() -> bool:
    return bool(OVERRIDE.get("prefetch", SCATTER_PREFETCH))


def _plan(n: int, ncell: int, acc: str) -> str:
    shift = TILE_SHIFT[acc]
    fits = ncell <= 1 << shift
    forced = OVERRIDE.get("strategy")
    if forced:
        return "tiled" if forced == "private" and not fits else forced
    if fits:
        return "private"
    if n < DIRECT_BELOW or -(-ncell >> shift) > MAX_TILES:
        return "direct"
    return "tiled"


def histogram2d(x, y, rx: BinRule, ry: BinRule, weights=None, scale=None):
    """``(grid, kept)``: points of ``(x, y)`` per cell ``grid[ix, iy]`` under rules ``rx``, ``ry``.

    Parameters
    ----------
    x, y : cupy.ndarray
        1-D, same length; bool, integer or real float values (NaN lands nowhere).
    rx, ry : hotbin.binning.BinRule
        The two axes' rules (``histogram2d_rules`` or ``cell_rule``).
    weights : cupy.ndarray, optional
        Same length. Float weights give float64 sums (float atomics: the last bits
        may vary between runs); integer weights give exact int64 sums.
    scale : int, optional
        Fixed-point exponent from :func:`hotbin.fixedpoint.scale_for`: the result
        is the words ``(2, nx, ny)`` int64, folded (``0 <= lo < 2**32``), equal to
        the cpu backend's bit for bit and deterministic.

    Returns
    -------
    grid : cupy.ndarray
        ``(nx, ny)`` int64 counts (never wrapping: 64-bit), float64 or int64 sums,
        or ``(2, nx, ny)`` int64 words.
    kept : int
        Points that landed in a cell.
    """
    cp = _cupy()
    x, y = cp.asarray(x), cp.asarray(y)
    n = int(x.size)  # y and weights: the same length (checked by the caller)
    nx, ny = rx.nbins, ry.nbins
    ncell = nx * ny
    if ncell >= 0xFFFFFFFF:
        raise ValueError(f"bins: {nx} x {ny} cells is more than the cuda backend's 2**32 - 2")
    factor = (0.0, 0.0)
    if weights is None:
        acc, out = "count", cp.zeros(ncell, cp.uint64)
    elif scale is not None:
        acc, out = "fixed", cp.zeros(2 * ncell, cp.uint64)
        factor = fixedpoint.factors(scale)
    elif cp.asarray(weights).dtype.kind == "f":
        acc, out = "f64", cp.zeros(ncell, cp.float64)
    else:
        acc, out = "i64", cp.zeros(ncell, cp.uint64)
    wdt = np.dtype(np.int64) if acc == "i64" else np.dtype(np.float64)
    if weights is not None:
        w = _aligned(cp, cp.asarray(weights), wdt)
    else:
        w = cp.empty(1, wdt)
    kept = 0
    if n:
        with x.device:
            tx, xd, ax = _axis(cp, x, rx)
            ty, yd, ay = _axis(cp, y, ry)
            kept = _run(cp, _plan(n, ncell, acc), tx, ty, acc, xd, yd, w, ax, ay, ncell, factor, out)
    if acc == "count":
        grid = out.view(cp.int64).reshape(nx, ny)
    elif acc == "fixed":
        grid = out.view(cp.int64).reshape(2, nx, ny)
    elif acc == "i64":
        grid = out.view(cp.int64).reshape(nx, ny)
    else:
        grid = out.reshape(nx, ny)
    return grid, kept


def _run(cp, strategy, tx, ty, acc, x, y, w, ax, ay, ncell, factor, out) -> int:
    n = x.size
    info = _device_info(x.device.id)
    sms = info["sms"]
    kern = functools.partial(_spatial_kernel, tx, ty, acc)
    weighted = acc != "count"
    f = tuple(np.float64(v) for v in factor)  # fixedpoint.factors: two powers of two
    fold = kern("fold_words") if acc == "fixed" else None
    counter = cp.zeros(1, cp.uint64)  # dropped points (private, direct) or kept points (tiled)
    shift = TILE_SHIFT[acc]
    if strategy == "tiled":
        ntiles = -(-ncell >> shift)
        counts = cp.zeros(ntiles + 1, cp.uint32)
        base, cap, fill = (cp.empty(ntiles, cp.uint32) for _ in range(3))
        start = cp.empty(ntiles + 1, cp.uint32)
        m = min(n, CHUNK)
        capacity = m + m // BUFFER_EXTRA + ntiles * PAD
        codes = cp.empty(capacity, cp.uint16)  # a code within its tile (TILE_SHIFT <= 16)
        wsorted = cp.empty(capacity if weighted else 1, w.dtype)
        k = 16 // max(x.dtype.itemsize, y.dtype.itemsize)
        batch = SCATTER_THREADS * SCATTER_GROUPS * k
        scatter_smem = batch * 4 + (batch * w.dtype.itemsize if weighted else 0) + 5 * ntiles * 4
        scatter = kern("scatter_codes")
        scatter_grid = sms * _resident(scatter, SCATTER_THREADS, scatter_smem, SCATTER_BLOCKS_PER_SM)
        acc_smem = (1 << shift) * _ACC_BYTES[acc]
    for s in range(0, n, CHUNK):
        xs, ys = x[s:s + CHUNK], y[s:s + CHUNK]
        ws = w[s:s + CHUNK] if weighted else w
        m = xs.size
        if strategy == "private":
            smem = ncell * _ACC_BYTES[acc]
            kp = kern("private_grid")
            grid = max(1, min(sms * _resident(kp, ACC_THREADS, smem, 4), -(-m // (ACC_THREADS * 4))))
            _launch(kp, grid, ACC_THREADS, (xs, ys, ws, np.uint64(m), *ax, *ay, *f, out, counter), smem)
        elif strategy == "direct":
            grid = max(1, min(sms * DIRECT_BLOCKS_PER_SM, -(-m // 1024)))
            _launch(kern("direct_grid"), grid, 256, (xs, ys, ws, np.uint64(m), *ax, *ay, *f, out, counter))
        else:
            nsample = min(m, SAMPLE)
            grid = max(1, min(sms * SAMPLE_BLOCKS_PER_SM, -(-nsample // 256)))
            _launch(kern("sample_tiles"), grid, 256,
                    (xs, ys, np.uint64(m), *ax, *ay, np.uint32(shift), np.uint32(ntiles), np.uint64(nsample),
                     counts), (ntiles + 1) * 4)
            _launch(kern("plan_tiles"), 1, 1024,
                    (counts, np.uint32(ntiles), np.uint32(nsample), np.uint32(m), np.uint32(capacity),
                     np.float64(SLACK), np.float64(SIGMAS), np.uint32(PAD), base, cap, fill))
            grid = max(1, min(scatter_grid, -(-m // batch)))
            _launch(scatter, grid, SCATTER_THREADS,
                    (xs, ys, ws, np.uint64(m), *ax, *ay, np.uint32(shift), np.uint32(ntiles), base, cap, fill,
                     codes, wsorted, *f, out, counter), scatter_smem)
            _launch(kern("fill_offsets"), 1, 1024, (counts, fill, cap, np.uint32(ntiles), start))
            _launch(kern("accumulate_tiles"), sms, ACC_THREADS,
                    (codes, wsorted, start, base, np.uint32(ntiles), np.uint32(shift), np.uint32(ncell), *f, out),
                    acc_smem)
        if fold is not None:
            _launch(fold, min(sms * 8, -(-ncell // 256)), 256, (out, np.uint32(ncell)))
    c = int(counter.get()[0])
    return c if strategy == "tiled" else n - c


# --- luminance histogram ------------------------------------------------------------------

def luma_batch(a):
    """``a`` as a batch ``(N, H, W, C)`` of uint8 RGB(A) images (one ``(H, W, C)`` image: N = 1)."""
    if a.dtype != np.uint8:
        raise TypeError(f"img: expected uint8 pixels, got dtype {a.dtype}")
    if a.ndim == 3:
        a = a[None]
    if a.ndim != 4 or a.shape[-1] not in (3, 4):
        raise ValueError(f"img: expected (N, H, W, C) with C 3 or 4, got shape {tuple(a.shape)}")
    return a


def luma_histogram(img):
    """``(N, 256)`` int64 counts of the Rec. 709 luma levels of uint8 RGB(A) images.

    ``img`` is ``(N, H, W, C)`` (or one ``(H, W, C)`` image, giving ``(1, 256)``),
    uint8, ``C`` 3 or 4; any layout (copied to C order when needed). The level of a
    pixel is ``(2126*R + 7152*G + 722*B) // 10000`` in exact integers: a gray pixel
    ``(v, v, v)`` has level ``v``, white 255; alpha is ignored. Counts are exact
    (64-bit) and reproducible. One launch reads every pixel once.
    """
    cp = _cupy()
    a = luma_batch(cp.asarray(img))
    nimg, c = a.shape[0], a.shape[-1]
    npix = a.shape[1] * a.shape[2]
    out = cp.zeros((nimg, 256), cp.uint64)
    if nimg and npix:
        a = cp.ascontiguousarray(a)
        if a.data.ptr % 16:
            a = a.copy()
        sms = _device_info(a.device.id)["sms"]
        parts = -(-sms * LUMA_BLOCKS_PER_SM // nimg)
        parts = max(1, min(parts, -(-npix // LUMA_MIN_PIXELS)))
        parts = max(parts, -(-npix // LUMA_MAX_PIXELS))
        kern = _module("luma.cu", ("luma_histogram<3>", "luma_histogram<4>")).get_function(
            f"luma_histogram<{c}>")
        with a.device:
            _launch(kern, nimg * parts, LUMA_THREADS, (a, np.uint64(npix), np.uint32(parts), out))
    return out.view(cp.int64)
