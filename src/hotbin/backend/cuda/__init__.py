"""The cuda backend: CUDA C++ kernels (``hotbin/kernels/*.cu``) compiled with NVRTC.

The protocol of :mod:`hotbin.backend` and nothing else; the work is in the
package's modules, each with one job:

===============  ==========================================================================
``runtime``      CuPy, kernel sources, NVRTC options, compile cache, device facts, launches
``tuning``       tuned tables by architecture, forced choices, launch planning (no CuPy)
``rule``         the bin rule as kernel arguments (:mod:`hotbin.core.kernel_rule`'s tolerance)
``stage``        bounded device memory: inputs staged slab by slab, partials combined
``hist1d``       1-D counts (hist1d.cu)
``sums``         1-D weighted sums: float64, exact int64, fixed point; max |w| (hist1d.cu)
``quick``        the common count (a whole device array) planned once: one lookup, one launch
``spatial``      2-D binning, categories and the values accumulators (spatial.cu, spatial_acc.cuh)
``scan``         prefix sums (scan.cu)
``luma``         the fused luminance histogram (luma.cu)
``order``        the order statistics' cells and packed sorted words (order.cu)
``crossfilter``  the linked views' one pass: brush masks, every panel's counts (crossfilter.cu)
===============  ==========================================================================

Inputs are NumPy arrays (copied to the device by :func:`prepare`, or staged slab
by slab when large) or CuPy arrays (used as they are); :mod:`hotbin.core.arrays`
adapts everything else. Semantics are the cpu backend's, bit for bit: the exact
bin rule of :mod:`hotbin.core.binning` is fused into the kernels (multiply guess,
then correct against the edges array), 8/16-bit integers are counted by raw
value and folded into bins through a table built by :meth:`BinRule.index`,
counts are 32-bit per block and 64-bit in the result, and fixed-point words
equal the cpu backend's after :func:`hotbin.core.fixedpoint.fold`. Float64 weighted
sums use float64 atomics (not bitwise reproducible; ``deterministic=True`` is);
the 2-D extremes (acc ``min``, ``max``) are exact, as atomic maxima of
order-preserving integer keys.
Float comparisons keep subnormals (``-ftz=false`` and explicit PTX), and
float16 is widened by integer operations, so the neighbours of an edge at 0
land where NumPy puts them. Scans are one pass (decoupled look-back), exact for
integers and bitwise reproducible run to run for floats. Inputs no kernel takes
give ``NotImplemented`` (the registry runs the cpu backend's primitive).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core import fixedpoint, reductions
from ...core.arrays import on_gpu, to_host
from ...core.binning import BinRule
from . import hist1d, luma, quick, scan, spatial, sums
from .runtime import INSTALL, cupy, kernel_dtype
from .stage import device, out_of_memory, stage_bytes, staged, upload
from .tuning import current

NAME = "cuda"
DEVICE = "cuda"
CAPABILITIES = frozenset({"histogram_rows", "luma"})
__all__ = ["NAME", "INSTALL", "DEVICE", "CAPABILITIES", "claims", "require", "available", "devices",
           "prepare", "minmax", "max_abs", "histogram", "histogram_rows", "histogram2d", "cells2d", "sorted_pairs", "bincount",
           "cumsum", "luma_histogram", "ci_name_expressions"]


# --- availability ---------------------------------------------------------------

_FOUND: list = []  #: a device was found once (devices do not go away): every call checks this


def require() -> None:
    cp = cupy()
    if _FOUND:
        return
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, no device
        raise RuntimeError(f"cuda backend: no CUDA device ({exc})") from None
    if n < 1:
        raise RuntimeError("cuda backend: no CUDA device found")
    _FOUND.append(n)


def available() -> bool:
    try:
        require()
        return True
    except Exception:
        return False


def devices() -> list[str]:
    cp = cupy()
    out = []
    for i in range(cp.cuda.runtime.getDeviceCount()):
        p = cp.cuda.runtime.getDeviceProperties(i)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        out.append(f"{name} (cuda:{i}, {p['multiProcessorCount']} SMs, "
                   f"{p['totalGlobalMem'] / 2**30:.0f} GiB)")
    return out


def ci_name_expressions() -> dict[str, list[str]]:
    """Every template instantiation the package launches, by kernel file (.ci/compile_kernels.py)."""
    out: dict = {}
    from . import order

    for mod in (hist1d, scan, spatial, luma, order):
        for f, names in mod.ci_name_expressions().items():
            out.setdefault(f, []).extend(names)
    return out


# --- arrays ------------------------------------------------------------------------

def claims(a) -> bool:
    return on_gpu(a)  # CuPy arrays, torch CUDA tensors


def prepare(a: np.ndarray):
    """Host data copied to the device (through the pinned buffers of :func:`stage.pump`
    from :data:`stage.PIN_MIN_BYTES`: about one transfer over the link); over
    :func:`stage.stage_bytes` (or when the device is full) it stays on the host and every
    primitive sends it a region at a time, counting one region while the next is copied
    (:mod:`hotbin.backend.cuda.stage`), so device memory stays bounded."""
    cp = cupy()
    if a.dtype.kind not in "biufc" or a.nbytes > stage_bytes():
        return a  # the caller's dtype check names the argument; big data is staged
    try:
        return upload(a)
    except cp.cuda.memory.OutOfMemoryError:
        return a


def asarray(a):
    """A CuPy array as it is; NumPy data through :func:`prepare` (the primitives take both)."""
    return a if isinstance(a, cupy().ndarray) else prepare(np.asarray(a))


# --- primitives -------------------------------------------------------------------------------
# Each takes host or device arrays and runs through stage.staged: device arrays the kernels
# read in place go whole; anything else a slab at a time, partials combined exactly.

def minmax(a):
    cp = cupy()
    a = asarray(a)

    def run(x):
        v = x.view(cp.uint8) if x.dtype == np.bool_ else x
        return cp.stack([v.min(), v.max()])[None]

    def add(total, part, region):
        return part if total is None else cp.concatenate([total, part])

    with device(a):  # CuPy's reductions read any layout: device arrays go whole
        found = to_host(staged([a], run, add, ready=lambda x: True))
    lo, hi = np.min(found[:, 0]), np.max(found[:, 1])  # NaN when any slab had one
    return a.dtype.type(lo), a.dtype.type(hi)


def max_abs(w) -> float:
    if w.size == 0:
        return 0.0
    m = sums.max_abs(w)  # float weights on the device: one pass
    if m is not None:
        return m
    lo, hi = minmax(w)
    return fixedpoint.max_abs(np.array([lo, hi]))


def histogram(a, rule: BinRule, weights=None, red=reductions.COUNT):
    """The partial of ``red`` over the bins of ``rule`` (:mod:`hotbin.backend`)."""
    tune = current()
    if weights is None and red.acc == "count":
        with out_of_memory():  # a whole device array: one lookup, one launch
            out = quick.counts(a, rule, tune)
        if out is not None:
            return out
    a, weights = asarray(a), None if weights is None else asarray(weights)
    kdt = kernel_dtype(a.dtype)
    if kdt is None:
        return NotImplemented
    with device(a, weights), out_of_memory():
        if red.acc == "count":
            if kdt in hist1d.LUT_KINDS and tune.lut:
                return hist1d.histogram_lut(a, kdt, rule, tune)
            return hist1d.staged_counts(a, kdt, rule, rule.nbins, tune)
        factor = fixedpoint.factors(red.scale) if red.acc == "fixed" else (0.0, 0.0)
        if not red.check:
            return sums.staged_sums(a, weights, kdt, rule, rule.nbins, red.acc, tune, factor)
        seen = sums.seen_word(np.float32 if weights.dtype.itemsize <= 4 else np.float64)
        words = sums.staged_sums(a, weights, kdt, rule, rule.nbins, red.acc, tune, factor, seen)
        return reductions.with_seen(words, seen)


def deterministic_sums(a, rule: BinRule, w):
    """float64 fixed-point sums (``deterministic=True``) of large float CuPy weights ``w`` by the bins
    of ``rule`` over the C-contiguous CuPy array ``a`` of a kernel dtype, the scale guessed on the
    device and confirmed (:func:`sums.guessed_fixed`), or None: the general path answers."""
    if kernel_dtype(a.dtype) != a.dtype or not (a.flags.c_contiguous and w.flags.c_contiguous):
        return None
    with device(a, w), out_of_memory():
        return sums.guessed_fixed(a.reshape(-1), w, rule, current())


def sample_max_abs(w) -> float | None:
    """max |w| of a sample of large float device weights, or None (:func:`sums.sample_max_abs`)."""
    with device(w):
        return sums.sample_max_abs(w)


def histogram_rows(a, rule: BinRule):
    """``(N, nbins)`` int64 counts, one histogram per row of the 2-D ``a``, in one launch."""
    a = asarray(a)
    kdt = kernel_dtype(a.dtype)
    if kdt is None:
        return NotImplemented
    with device(a) as dev, out_of_memory():
        return hist1d.histogram_rows(a, kdt, rule, current(), dev.id)


def bincount(x, length, weights=None):
    x, weights = asarray(x), None if weights is None else asarray(weights)
    kdt = kernel_dtype(x.dtype)
    if kdt is None:
        return NotImplemented
    tune = current()
    with device(x, weights), out_of_memory():
        if weights is None:
            return hist1d.staged_counts(x, kdt, None, length, tune)
        return sums.staged_sums(x, weights, kdt, None, length, "f64", tune)


def cumsum(a, axis, od, exclusive=False):
    """Prefix sums in the order of :mod:`hotbin.core.scan_order` (:func:`scan.cumsum`)."""
    a = asarray(a)
    with device(a), out_of_memory():
        return scan.cumsum(a, axis, od, exclusive, current())


def histogram2d(x, y, rx: BinRule, ry: BinRule, weights=None, red=reductions.COUNT, by=None):
    """``(grid, kept)`` by the skew-proof tiled kernels (:mod:`hotbin.backend.cuda.spatial`);
    ``by=(codes, ncat)``: per category, ``red.lead + (ncat + 1, nx, ny)``."""
    arrays = [asarray(x), asarray(y)] + ([] if weights is None else [asarray(weights)])
    n = arrays[0].size
    if arrays[1].size != n:
        raise ValueError(f"y: has {arrays[1].size} points but x has {n}")
    if weights is not None and arrays[2].size != n:
        raise ValueError(f"weights: has {arrays[2].size} values but x has {n} points")
    if by is not None:
        ncat = int(by[1])
        arrays.append(asarray(by[0]))
        if arrays[-1].size != n:
            raise ValueError(f"by: has {arrays[-1].size} codes but x has {n} points")
    arrays = [a.reshape(-1) for a in arrays]
    codes = arrays[-1] if by is not None else None
    tune = current()
    if red.center is not None:  # converted once, not per slab
        with device(*arrays):
            red = replace(red, center=spatial.center(red))

    def run(xs, ys, *rest):
        ws = rest[0] if weights is not None else None
        return spatial.histogram2d(xs, ys, rx, ry, ws, red, tune, None if by is None else (rest[-1], ncat))

    def add(total, part, region):
        if total is None:
            return part
        if red.acc == "fixed":
            return sums.fold_sum(total[0], part[0]), total[1] + part[1]
        if red.acc in ("min", "max"):
            return red.combine(cupy().stack([total[0], part[0]])), total[1] + part[1]
        return total[0] + part[0], total[1] + part[1]

    def ready(a):  # read in place, or converted whole at no more than twice its size (codes: as stored)
        return a.flags.c_contiguous and (a is codes or a.dtype.itemsize >= 4)

    with device(*arrays), out_of_memory():
        return staged(arrays, run, add, ready=ready)


def cells2d(x, y, rx: BinRule, ry: BinRule):
    """The cell ``ix * ny + iy`` of each point, int64 on the device, -1 for none (:mod:`.order`)."""
    from .order import cells2d as on_device

    x, y = asarray(x), asarray(y)
    with device(x):
        return on_device(x, y, rx, ry)


def sorted_pairs(x, y, rx: BinRule, ry: BinRule, weights, by=None):
    """The order statistics' sorted partial of float32 ``weights`` from one kernel, or
    NotImplemented (:func:`.order.sorted_pairs`)."""
    from .order import sorted_pairs as on_device

    x = asarray(x)
    with device(x):
        return on_device(x, asarray(y), rx, ry, asarray(weights),
                         None if by is None else (asarray(by[0]), by[1]))


def luma_histogram(img):
    """``(N, 256)`` int64 luma counts of uint8 ``(N, H, W, C)`` images, C in {3, 4} (kernels/luma.cu)."""
    cp = cupy()
    a = luma.batch(asarray(img))

    def run(x):  # whole images (4-D), rows of one image (3-D) or pixels of one row (2-D)
        return luma.luma_histogram(x if x.ndim > 2 else x[None])

    def add(total, part, region):
        if isinstance(region[0], slice) and region[0] == slice(0, a.shape[0]):
            return part
        total = cp.zeros((a.shape[0], 256), cp.int64) if total is None else total
        total[region[0]] += part if isinstance(region[0], slice) else part[0]
        return total

    with device(a), out_of_memory():
        return staged([a], run, add, keep=1) if a.size else cp.zeros((a.shape[0], 256), cp.int64)
