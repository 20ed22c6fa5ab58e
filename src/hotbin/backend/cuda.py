"""The cuda backend: CUDA C++ kernels (``hotbin/kernels/*.cu``) compiled with NVRTC.

Kernels are loaded with :mod:`importlib.resources`, specialized with C++ templates
(``name_expressions``), compiled once per instantiation through
:class:`cupy.RawModule` and cached (in memory, and on disk by CuPy). Inputs may be
NumPy arrays (copied to the device), CuPy arrays (used as they are) or torch CUDA
tensors (zero-copy through ``__cuda_array_interface__``); results come back as
the input's array type on the input's device (:func:`to_output`).

Semantics are the cpu backend's, bit for bit: the exact bin rule of
:mod:`hotbin.binning` is fused into the kernels (multiply guess, then correct
against the edges array), 8/16-bit integers are counted by raw value and folded
into bins through a table built by :meth:`BinRule.index`, counts are 32-bit per
block and 64-bit in the result, and fixed-point words equal the cpu backend's
after :func:`hotbin.fixedpoint.fold`. Float64 weighted sums use float64 atomics
(not bitwise reproducible; ``deterministic=True`` is). Float comparisons keep
subnormals whatever the compiler's flush-to-zero setting (explicit PTX), and
float16 is widened by integer operations, so the neighbours of an edge at 0 land
where NumPy puts them. Scans are one pass (decoupled look-back), exact for
integers and bitwise reproducible run to run for floats.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.resources
import math
from dataclasses import dataclass, replace

import numpy as np

from .. import fixedpoint
from ..binning import BinRule
from . import cuda_stage as stage
from . import on_gpu, to_host

NAME = "cuda"
INSTALL = 'pip install "hotbin[cuda]"'


# --- tuning (benchmarks/gpu_suite.py; results in benchmarks/results/gpu-2026-11-30-h200.md) ---

@dataclass(frozen=True)
class Policy:
    """How one counting launch is laid out."""

    layout: str  #: lanes | copies | windows | global (see kernels/hist1d.cu)
    block: int = 512  #: threads per block
    blocks_per_sm: int = 4  #: resident blocks wanted per SM (capped by shared memory)
    unroll: int = 2  #: 16-byte loads in flight per thread
    copies: int = 8  #: most private copies per block (layout "copies")
    windows: int = 0  #: layout "windows": blocks sharing one part of the input (0: fewest that fit)


#: Counting strategy, by number of slots (bins, or raw values for 8/16-bit ints):
#: the first policy whose layout can hold the slots wins (bounds in _count_policy).
LANES_MAX_SLOTS = 256
MAX_WINDOWS = 8
COUNT_TABLE = (
    # <= 256 slots: 32 lane-indexed copies, bank-conflict free on every input.
    # gpu_suite run 3 (2026-11-30, H200), G1 u8 2^31 uniform/narrow/constant GB/s:
    # lanes unroll 4: 3410/3424/3454; unroll 2: 3201/3211/3242; one copy: 2151/2941/3618;
    # 8 copies: 2198/3049/3602. G2 f32 2^28: unroll 4: 2787/2744/2824; unroll 2: 2642/2636/2691.
    Policy("lanes", block=512, blocks_per_sm=4, unroll=4),
    # fits one block: private copies, up to `copies` of them (G3 "rule" rows: the u16
    # rule path through this layout ran 582-1343 GB/s, below the value windows below).
    Policy("copies", block=512, blocks_per_sm=4, unroll=2, copies=8),
    # up to MAX_WINDOWS blocks' worth: blocks share input parts, one window of slots
    # each. G3 u16 2^28, 65536 values: 2 windows unroll 4: 1293/1377/1401;
    # unroll 2: 1173/1282/1293; 4 windows: 800/816/893. A cluster of 2 or 4 blocks
    # sharing counters through distributed shared memory ran 65-316 GB/s (run 1),
    # global atomics 3-169 GB/s.
    Policy("windows", block=1024, blocks_per_sm=2, unroll=4, windows=0),
    # beyond: 64-bit global atomics straight into the result.
    Policy("global", block=512, blocks_per_sm=4, unroll=2),
)

#: Batches of short rows (<= SHORT_ROW values each, one block per row): small blocks with
#: few copies, so zeroing and flushing the counters costs little next to the row.
#: gpu_batched.py --sweep (2026-11-30, H200; results/gpu-batched-2026-11-30-h200.md), u8 rows
#: 65536 x 4 KiB, uniform / dark GB/s: copies x2 128 threads 974 / 1057; copies x1 256: 885 / 916;
#: lanes 512 (the table): 491 / 499. At 64 KiB rows the table's lanes were as good (1239 / 1302).
SHORT_ROW = 1 << 14
SHORT_ROW_POLICY = Policy("copies", block=128, blocks_per_sm=16, unroll=2, copies=2)

#: Weighted sums: one private copy per block when it fits, else global atomics
#: (not benchmarked: weighted sums have no target yet).
SUM_POLICY = Policy("copies", block=512, blocks_per_sm=4)
SUM_GLOBAL = Policy("global", block=512, blocks_per_sm=4)
#: edges are staged in shared memory up to this size, else read through L1
EDGE_STAGE_BYTES = 16 << 10
#: scan: threads per block and 16-byte vectors per thread (gpu_suite "scan")
SCAN_BLOCK = 256
#: float32 2^28, input GB/s (gpu_suite "scan/sweep", runs 2-3): 2 / 4 / 8 / 16 vectors:
#: 300 / 911 / 1421 / 1494; int32 -> int64: 707 / 866 / 997 / 1010
SCAN_NVEC = 16
#: threads per block of the float scans' lane kernels (one thread per lane block; scan.cu
#: sizes its tiles for LANE_THREADS / 32 = LANE_WARPS warps)
LANE_THREADS = 128

#: benchmarks and tests may force choices: Policy fields ({"layout": "windows",
#: "unroll": 4, ...}), "lut": False (8/16-bit ints through the rule, not the value
#: table), "shortcut": False (always check the guess against the edges). Empty in use.
OVERRIDE: dict = {}

LUT_KINDS = {np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16)}
_CTYPE = {
    np.dtype(np.uint8): "unsigned char", np.dtype(np.int8): "signed char",
    np.dtype(np.uint16): "unsigned short", np.dtype(np.int16): "short",
    np.dtype(np.uint32): "unsigned int", np.dtype(np.int32): "int",
    np.dtype(np.uint64): "unsigned long long", np.dtype(np.int64): "long long",
    np.dtype(np.float32): "float", np.dtype(np.float64): "double",
}
_BIN_RULE, _BIN_RAW, _BIN_RAW_FULL, _BIN_SEARCH = 0, 1, 2, 3
_ACC = {"f64": 0, "i64": 1, "fixed": 2}
_LAYOUT = {"lanes": 0, "copies": 1, "windows": 1, "global": 2}
_U32_SHARE = 1 << 31  #: most samples one block counts in one launch (32-bit counters)


# --- availability ---------------------------------------------------------------

def _cupy():
    try:
        import cupy
    except ImportError as exc:
        raise ModuleNotFoundError(f"the cuda backend needs CuPy: {INSTALL}") from exc
    return cupy


def require() -> None:
    cp = _cupy()
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, no device
        raise RuntimeError(f"cuda backend: no CUDA device ({exc})") from None
    if n < 1:
        raise RuntimeError("cuda backend: no CUDA device found")


def available() -> bool:
    try:
        require()
        return True
    except Exception:
        return False


def devices() -> list[str]:
    cp = _cupy()
    out = []
    for i in range(cp.cuda.runtime.getDeviceCount()):
        p = cp.cuda.runtime.getDeviceProperties(i)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        out.append(f"{name} (cuda:{i}, {p['multiProcessorCount']} SMs, "
                   f"{p['totalGlobalMem'] / 2**30:.0f} GiB)")
    return out


# --- arrays ------------------------------------------------------------------------

def _is_torch(a) -> bool:
    return type(a).__module__.startswith("torch") and hasattr(a, "detach")


def asarray(a):
    """A CuPy array: CuPy as is, torch CUDA tensors without a copy, host data copied.

    Host data over :data:`cuda_stage.STAGE_BYTES` stays a NumPy array: every
    primitive here takes host arrays too and stages them a slab at a time
    (:mod:`hotbin.backend.cuda_stage`), so device memory stays bounded.
    """
    cp = _cupy()
    if isinstance(a, cp.ndarray):
        return a
    if _is_torch(a):
        t = a.detach()
        if t.is_cuda:
            return cp.asarray(t)  # __cuda_array_interface__: zero-copy, strides kept
        a = t.numpy()
    a = np.asarray(a)
    if a.dtype.kind not in "biufc" or a.nbytes > stage.stage_bytes():
        return a  # the caller's dtype check names the argument; big data is staged
    try:
        return stage.upload(a)
    except cp.cuda.memory.OutOfMemoryError:
        return a  # no room for it whole: staged a slab at a time


def to_output(x, like=None):
    """``x`` as ``like``'s array type on ``like``'s device (NumPy for anything else)."""
    if _is_torch(like):
        import torch
        if like.is_cuda:
            if isinstance(x, np.ndarray):
                return torch.from_numpy(np.ascontiguousarray(x)).to(like.device)
            return torch.from_dlpack(_cupy().asarray(x))
        return torch.from_numpy(np.ascontiguousarray(to_host(x)))
    if like is not None and on_gpu(like):
        cp = _cupy()
        with cp.cuda.Device(getattr(getattr(like, "device", None), "id", None)):
            return cp.asarray(x)
    return to_host(x)


def _flat(x, dtype=None):
    """1-D C-contiguous CuPy array of ``dtype`` (bool viewed as uint8, float16 widened)."""
    cp = _cupy()
    if x.dtype == np.bool_:
        x = x.view(cp.uint8)
    if x.dtype == np.float16:
        x = _widen_f16(x)
    if dtype is None:
        dtype = x.dtype
    return cp.ascontiguousarray(x, dtype=dtype).reshape(-1)


def _widen_f16(x):
    """float16 -> float32 exactly, subnormals included, by integer operations.

    (A float conversion kernel compiled with flush-to-zero would lose the
    subnormals, which are the neighbours of an edge at 0.)
    """
    cp = _cupy()
    h = cp.ascontiguousarray(x).view(cp.uint16).astype(cp.uint32)
    sign = (h & 0x8000) << 16
    exp = (h >> 10) & 0x1F
    man = h & 0x3FF
    bits = cp.where(exp == 31, 0x7F800000 | (man << 13), ((exp + 112) << 23) | (man << 13))
    sub = (man.astype(cp.float32) * np.float32(2.0 ** -24)).view(cp.uint32)  # normal results
    return (cp.where(exp == 0, sub, bits) | sign).view(cp.float32).reshape(x.shape)


def _kernel_dtype(dt) -> np.dtype:
    dt = np.dtype(dt).newbyteorder("=")
    if dt == np.bool_:
        return np.dtype(np.uint8)
    if dt == np.float16:
        return np.dtype(np.float32)
    if dt not in _CTYPE:
        raise TypeError(f"cuda backend: no kernel for dtype {dt}")
    return dt


# --- kernels: sources, compilation, launch -------------------------------------------

def _kernel_dir():
    return importlib.resources.files("hotbin") / "kernels"


@functools.lru_cache(maxsize=None)
def _source(name: str) -> str:
    return (_kernel_dir() / name).read_text()


@functools.lru_cache(maxsize=None)
def _options() -> tuple:
    # CuPy's disk cache keys on the source and the options: the headers' hash is an
    # option, so editing a header recompiles.
    h = hashlib.sha256()
    for f in sorted(_kernel_dir().iterdir(), key=lambda p: p.name):
        if f.name.endswith(".cuh"):
            h.update(f.read_bytes())
    with importlib.resources.as_file(_kernel_dir()) as d:
        inc = str(d)
    # IEEE semantics spelled out: subnormals compare exactly (edges at 0 have them as neighbours)
    return (f"-I{inc}", "-ftz=false", "-prec-div=true", "-prec-sqrt=true",
            f"-DHOTBIN_HEADERS={h.hexdigest()[:16]}")


@functools.lru_cache(maxsize=None)
def _kernel(file: str, expr: str):
    cp = _cupy()
    mod = cp.RawModule(code=_source(file), options=_options(), name_expressions=(expr,))
    return mod.get_function(expr)


#: every template instantiation this module launches, by file (for .ci/compile_kernels.py)
def ci_name_expressions() -> dict[str, list[str]]:
    f, d, u8, u16, i64 = "float", "double", "unsigned char", "unsigned short", "long long"
    out = {"hist1d.cu": [], "scan.cu": []}
    h = out["hist1d.cu"]
    for t, c in ((f, f), (d, d), (f, d), ("int", d), (i64, i64), (u8, d)):
        for b in (_BIN_RULE, _BIN_SEARCH):
            for lay in (0, 1, 2):
                h.append(f"hist_count<{t}, {c}, {b}, {lay}, 2>")
            for acc, w in ((0, f), (0, d), (1, i64), (2, f), (2, d)):
                h.append(f"hist_sum<{t}, {c}, {b}, {acc}, {w}, false>")
                h.append(f"hist_sum<{t}, {c}, {b}, {acc}, {w}, true>")
    for t in (u8, u16, "unsigned int", i64):
        for lay in (0, 1, 2):
            h.append(f"hist_count<{t}, {t}, {_BIN_RAW}, {lay}, 2>")
        h.append(f"hist_sum<{t}, {t}, {_BIN_RAW}, 0, {d}, false>")
    for t in (u8, u16):
        h.append(f"hist_count<{t}, {t}, {_BIN_RAW_FULL}, 0, 2>")
    h.append("fold_lut")
    for t, a in (("int", i64), (u8, i64), (u16, "unsigned long long"), (i64, i64)):
        for ex in ("false", "true"):
            for nvec in (8, SCAN_NVEC):
                out["scan.cu"].append(f"scan_lookback<{t}, {a}, {SCAN_BLOCK}, {nvec}, {ex}>")
    out["scan.cu"] += [f"lane_{k}<{t}>" for k in ("sums", "scan") for t in (f, d)]
    return out


@functools.lru_cache(maxsize=None)
def _device_info(dev_id: int) -> dict:
    cp = _cupy()
    a = cp.cuda.Device(dev_id).attributes
    return {"sms": a["MultiProcessorCount"],
            "smem_block": a["MaxSharedMemoryPerBlockOptin"],
            "smem_sm": a["MaxSharedMemoryPerMultiprocessor"]}


_SMEM_SET: dict = {}  #: id(kernel) -> dynamic shared memory limit set so far


def _launch(kern, grid, block, args, smem=0):
    if smem > 48 * 1024 and _SMEM_SET.get(id(kern), 0) < smem:
        kern.max_dynamic_shared_size_bytes = smem
        _SMEM_SET[id(kern)] = smem
    kern(grid if isinstance(grid, tuple) else (grid,), (block,), args, shared_mem=smem)


def _grid(info, policy, smem, n, per_thread):
    """Blocks to launch: resident blocks that fit, fewer for small inputs."""
    fit = info["smem_sm"] // (smem + 1024) if smem else policy.blocks_per_sm
    per_sm = max(1, min(policy.blocks_per_sm, 2048 // policy.block, fit))
    g = min(info["sms"] * per_sm, max(1, -(-n // (policy.block * per_thread))))
    return g


# --- the bin rule's kernel arguments ---------------------------------------------------

def _guess_margin(rule: BinRule) -> float:
    """Fraction of a bin within which a multiply guess must be checked against the edges.

    A guess ``x = (v - lo) * scale`` whose fractional part lies in
    ``(tau, 1 - tau)`` is the exact bin: ``tau`` bounds, in bins, the distance of
    each real edge from ``lo + i * width`` plus the rounding of the guess (float32
    or float64, as the kernel computes it). 2.0 disables the shortcut.
    """
    e = rule.kernel_cmp
    if not rule.uniform or rule.scale == 0 or e.dtype.kind != "f" or not 1 <= rule.nbins < 1 << 21:
        return 2.0  # the magic-number floor in the kernel needs x < 2^22
    nb = rule.nbins
    ld = e.astype(np.longdouble)
    ideal = ld[0] + np.arange(nb + 1, dtype=np.longdouble) * ((ld[-1] - ld[0]) / nb)
    mag = max(abs(rule.lo), abs(rule.hi))
    dev = float(np.max(np.abs(ld - ideal))) + 16 * float(np.finfo(np.longdouble).eps) * 2 * mag
    eps = 2.0 ** -24 if e.dtype == np.float32 else 2.0 ** -53
    tau = 2 * (dev * rule.scale + 8 * eps * (nb + 1))
    return tau if tau < 0.25 else 2.0


@functools.lru_cache(maxsize=64)
def _device_table(dev_id: int, data: bytes, dtype: str):
    """A small host table (edges, value->bin) uploaded once per device."""
    cp = _cupy()
    with cp.cuda.Device(dev_id):
        return cp.asarray(np.frombuffer(data, dtype))


@functools.lru_cache(maxsize=64)
def _margin(data: bytes, dtype: str, nbins: int, uniform: bool) -> float:
    e = np.frombuffer(data, dtype)
    return _guess_margin(BinRule(edges=e, cmp=e, uniform=uniform))


def _rule_args(rule: BinRule, cp, stage: bool):
    k = rule.kernel_cmp
    key = (np.ascontiguousarray(k).tobytes(), k.dtype.str)
    e = _device_table(cp.cuda.Device().id, *key)
    tau = _margin(*key, rule.nbins, rule.uniform) if OVERRIDE.get("shortcut", True) else 2.0
    return (e, np.uint32(rule.nbins), np.float64(rule.lo), np.float64(rule.scale),
            np.float64(tau), np.int32(rule.uniform), np.int32(stage))


def _rule_binner(rule: BinRule) -> int:
    """Guess-and-correct (BIN_RULE) or bisection (BIN_SEARCH).

    The guess is computed in float32 for float32 edges: its floor trick
    (``round_down_guess``) holds below 2**22 bins only, and a float32 scale must
    not overflow; beyond, a guess could be millions of bins off and the
    correction O(bins), so those rules are searched (O(log bins)).
    """
    f32 = rule.kernel_cmp.dtype == np.float32
    with np.errstate(over="ignore"):
        ok = not f32 or (rule.nbins < 1 << 22 and np.isfinite(np.float32(rule.scale)))
    return _BIN_RULE if rule.uniform and rule.nbins >= 1 and ok else _BIN_SEARCH


def _raw_args(dtype, cp):
    return (cp.zeros(1, dtype), np.uint32(0), np.float64(0), np.float64(0), np.float64(2),
            np.int32(0), np.int32(0))


def _edge_bytes(rule):
    if rule is None:
        return 0
    b = (rule.nbins + 1) * rule.kernel_cmp.dtype.itemsize
    return b if b <= EDGE_STAGE_BYTES else 0


# --- counting ------------------------------------------------------------------------------

def _count_policy(nslots: int, info: dict, edge_bytes: int, row_n: int | None = None) -> Policy:
    """The counting policy for ``nslots`` slots (``row_n``: values per row of a batch)."""
    cap = (info["smem_block"] - edge_bytes - 16) // 4  # one-copy counters that fit a block
    bounds = {"lanes": LANES_MAX_SLOTS, "copies": cap - 1, "windows": MAX_WINDOWS * (cap - 1),
              "global": math.inf}
    forced = OVERRIDE.get("layout")
    fields = {k: v for k, v in OVERRIDE.items() if k in Policy.__dataclass_fields__ and k != "layout"}
    pol = next((p for p in COUNT_TABLE if p.layout == forced and nslots <= bounds[p.layout]), None)
    if pol is None and row_n is not None and row_n <= SHORT_ROW and nslots <= bounds["copies"] and not forced:
        pol = SHORT_ROW_POLICY
    if pol is None:
        pol = next(p for p in COUNT_TABLE if nslots <= bounds[p.layout])
    pol = replace(pol, **fields)
    if pol.layout == "windows":
        w = max(2, pol.windows or 1)
        while -(-nslots // w) > cap - 1:
            w *= 2
        pol = replace(pol, windows=w)
    return pol


def _count(x, rule: BinRule | None, nslots: int, out, rows: int = 1, fold=None):
    """out[s] += number of values of x whose bin (rule) or value (rule None) is s.

    ``out`` (uint64) has at least nslots entries; the "windows" layout needs
    ``windows * ceil(nslots / windows)`` of them (see :func:`_count_slots`). With
    ``rows`` > 1, ``x`` is C-contiguous ``(rows, n)`` and ``out`` ``(rows, slots)``:
    one histogram per row, in one launch per 65535 rows (grid dimension y).
    ``fold`` (a device value table, one window): slot s goes to ``out[fold[s]]`` instead.
    """
    cp = _cupy()
    n = x.size // max(rows, 1)
    if n == 0 or nslots == 0:
        return
    info = _device_info(x.device.id)
    t = _CTYPE[x.dtype]
    eb = _edge_bytes(rule)
    pol = _count_policy(nslots, info, eb, n if rows > 1 else None)
    wins = pol.windows if pol.layout == "windows" else 1
    if fold is not None and wins > 1:
        raise ValueError("a value table needs the slots in one window")
    per = -(-nslots // wins)  # slots per block
    if rule is not None:
        c, binner, args = _CTYPE[rule.kernel_cmp.dtype], _rule_binner(rule), _rule_args(rule, cp, eb > 0)
    else:
        full = wins == 1 and x.dtype.itemsize <= 2 and nslots == 1 << (8 * x.dtype.itemsize)
        c, binner, args = t, (_BIN_RAW_FULL if full else _BIN_RAW), _raw_args(x.dtype, cp)
    if pol.layout == "lanes":
        smem, copies = per * 32 * 4, 32
    elif pol.layout in ("copies", "windows"):
        stride = per | 1
        budget = info["smem_sm"] // pol.blocks_per_sm - 1024 - eb
        copies = max(1, min(pol.copies if pol.layout == "copies" else 1, budget // (stride * 4),
                            (info["smem_block"] - eb) // (stride * 4)))
        smem = stride * copies * 4
    else:
        smem, copies = 0, 0
    smem = ((smem + 15) & ~15) + eb if (smem or eb) else 0
    kern = _kernel("hist1d.cu", f"hist_count<{t}, {c}, {binner}, {_LAYOUT[pol.layout]}, {pol.unroll}>")
    per_thread = (16 // x.dtype.itemsize) * pol.unroll
    grid = _grid(info, pol, smem, n * rows * wins, per_thread)
    grid = max(wins, -(-grid // rows) // wins * wins)  # blocks per row
    step = grid // wins * _U32_SHARE
    x2 = x.reshape(rows, n)
    o2 = out.reshape(rows, -1)
    for r in range(0, rows, 65535):
        nr = min(rows, r + 65535) - r
        for s in range(0, n, step):
            xs = x2[r:r + nr, s:s + step]
            _launch(kern, (grid, nr), pol.block,
                    (xs, np.int64(xs.shape[1]), *args, np.uint64(0), np.uint32(per),
                     np.uint32(copies), np.uint32(wins), o2[r:r + nr], np.int64(n),
                     np.uint64(o2.shape[1]), np.uint64(0) if fold is None else fold), smem)


def _count_slots(nslots: int, dev_id: int) -> int:
    """Length of the counting buffer that _count needs for nslots (windows pad)."""
    pol = _count_policy(nslots, _device_info(dev_id), 0)
    w = pol.windows if pol.layout == "windows" else 1
    return w * -(-nslots // w)


def _sum(x, w, rule: BinRule | None, nslots: int, acc: str, out, factor=(0.0, 0.0)):
    """Weighted sums of w by bin (rule) or value (rule None) into out (see hist_sum).

    ``factor``: the fixed-point factor as two powers of two (:func:`hotbin.fixedpoint.factors`).
    """
    cp = _cupy()
    n = x.size
    if n == 0 or nslots == 0:
        return
    info = _device_info(x.device.id)
    t = _CTYPE[x.dtype]
    eb = _edge_bytes(rule)
    words = nslots * (2 if acc == "fixed" else 1)
    fits = words * 8 + eb <= info["smem_block"] and OVERRIDE.get("layout") != "global"
    pol = SUM_POLICY if fits else SUM_GLOBAL
    smem = (words * 8 if fits else 0) + eb
    if rule is None:
        c, binner, args = t, _BIN_RAW, _raw_args(x.dtype, cp)
    else:
        c, binner, args = _CTYPE[rule.kernel_cmp.dtype], _rule_binner(rule), _rule_args(rule, cp, eb > 0)
    kern = _kernel("hist1d.cu", f"hist_sum<{t}, {c}, {binner}, {_ACC[acc]}, {_CTYPE[w.dtype]}, "
                                f"{'false' if fits else 'true'}>")
    grid = _grid(info, pol, smem, n, 4)
    # fixed point: a launch takes at most LO_CHUNK weights, then the low words are folded
    step = fixedpoint.LO_CHUNK if acc == "fixed" else grid * _U32_SHARE
    for s in range(0, n, step):
        xs, ws = x[s:s + step], w[s:s + step]
        _launch(kern, grid, pol.block,
                (xs, ws, np.int64(xs.size), *args, np.uint64(0), np.uint32(nslots),
                 np.float64(factor[0]), np.float64(factor[1]), out), smem)
        if acc == "fixed":
            _fold_words(out, nslots)


def _fold_words(out, nslots):
    """In place: hi += lo >> 32, lo &= 2^32 - 1 on flat words [hi..., lo...] (int64 view)."""
    v = out.view(np.int64)
    hi, lo = v[:nslots], v[nslots:]
    hi += lo >> fixedpoint.SPLIT
    lo &= (1 << fixedpoint.SPLIT) - 1


# --- primitives -------------------------------------------------------------------------------
# Each takes host or device arrays and runs through cuda_stage.staged: device arrays the
# kernels read in place go whole; anything else a slab at a time, partials combined exactly.

def _in_place(a) -> bool:
    return True


def minmax(a):
    cp = _cupy()
    a = asarray(a)

    def run(x):
        v = x.view(cp.uint8) if x.dtype == np.bool_ else x
        return cp.stack([v.min(), v.max()])[None]

    def add(total, part, region):
        return part if total is None else cp.concatenate([total, part])

    with stage.device(a):
        found = to_host(stage.staged([a], run, add, ready=_in_place))
    lo, hi = np.min(found[:, 0]), np.max(found[:, 1])  # NaN when any slab had one
    return a.dtype.type(lo), a.dtype.type(hi)


def max_abs(w) -> float:
    if w.size == 0:
        return 0.0
    lo, hi = minmax(w)
    return fixedpoint.max_abs(np.array([lo, hi]))


def _weights(w, kind):
    """Weights as a kernel dtype: float32/float64 (widened in the kernel) or int64."""
    if kind == "f":
        return _flat(w, None if w.dtype in (np.float32, np.float16) else np.dtype(np.float64))
    return _flat(w, np.dtype(np.int64))


def _fold_sum(total, part, region):
    """Fixed-point words of two slabs: added, then folded (0 <= lo < 2^32 again)."""
    if total is None:
        return part
    total += part
    _fold_words(total.reshape(-1), total.size // 2)
    return total


def _staged_counts(a, kdt, rule: BinRule | None, nslots: int):
    """int64 counts of ``a`` by bin (rule) or value (rule None), a slab at a time."""
    cp = _cupy()

    def count(x):
        out = cp.zeros(_count_slots(nslots, cp.cuda.Device().id), cp.uint64)
        _count(_flat(x, kdt), rule, nslots, out)
        return out[:nslots].view(cp.int64)
    return stage.staged([a], count)


def _staged_sums(a, w, kdt, rule: BinRule | None, nslots: int, acc: str, factor=(0.0, 0.0)):
    """Sums of the weights ``w`` by bin or value (see :func:`_sum`), a slab at a time:
    float64 (acc "f64"), int64 ("i64") or fixed-point words ``(2, nslots)`` ("fixed")."""
    cp = _cupy()

    def sums(x, ws):
        out = cp.zeros((2 if acc == "fixed" else 1) * nslots, cp.float64 if acc == "f64" else cp.uint64)
        _sum(_flat(x, kdt), _weights(ws, "i" if acc == "i64" else "f"), rule, nslots, acc, out, factor)
        if acc == "f64":
            return out
        return out.view(cp.int64).reshape(2, nslots) if acc == "fixed" else out.view(cp.int64)
    return stage.staged([a, w], sums, _fold_sum if acc == "fixed" else stage.add)


def histogram(a, rule: BinRule, weights=None, scale=None):
    a, weights = asarray(a), None if weights is None else asarray(weights)
    kdt = _kernel_dtype(a.dtype)
    nb = rule.nbins
    with stage.device(a, weights), stage.out_of_memory():
        if weights is None and kdt in LUT_KINDS and OVERRIDE.get("lut", True):
            return _histogram_lut(a, kdt, rule)
        if weights is None:
            return _staged_counts(a, kdt, rule, nb)
        if scale is not None:
            return _staged_sums(a, weights, kdt, rule, nb, "fixed", fixedpoint.factors(scale))
        return _staged_sums(a, weights, kdt, rule, nb, "f64" if weights.dtype.kind == "f" else "i64")


def histogram_rows(a, rule: BinRule):
    """``(N, nbins)`` int64 counts, one histogram per row of the 2-D ``a``, in one launch.

    8-bit integers are counted by raw value, and the value table of :func:`histogram`'s
    path folds them into bins as each block flushes its counters.
    """
    cp = _cupy()
    a = asarray(a)
    rows, n = a.shape
    kdt = _kernel_dtype(a.dtype)
    raw = kdt.itemsize == 1 and OVERRIDE.get("lut", True)
    with stage.device(a) as dev, stage.out_of_memory():
        width = rule.nbins if raw else _count_slots(rule.nbins, dev.id)
        fold = _value_table(dev.id, kdt.str, rule.cmp.tobytes(), rule.cmp.dtype.str) if raw else None

        def count(x):  # a slab of whole rows, or a piece of one row
            part = cp.zeros((x.shape[0] if x.ndim == 2 else 1, width), cp.uint64)
            if x.size:
                x = _flat(x, kdt)
                if raw:
                    _count(x.view(cp.uint8), None, 256, part, part.shape[0], fold)
                else:
                    _count(x, rule, rule.nbins, part, part.shape[0])
            return part

        def add(total, part, region):
            if region[0] == slice(0, rows):
                return part
            total = cp.zeros((rows, width), cp.uint64) if total is None else total
            total[region[0]] += part if isinstance(region[0], slice) else part[0]
            return total

        out = stage.staged([a], count, add) if rows and n else cp.zeros((rows, width), cp.uint64)
        return out[:, :rule.nbins].view(cp.int64)


def _histogram_lut(a, kdt, rule: BinRule):
    """8/16-bit integers: count each raw value, then fold values into bins exactly."""
    cp = _cupy()
    u = np.dtype(f"u{kdt.itemsize}")
    nvals = 1 << (8 * kdt.itemsize)
    dev = cp.cuda.Device().id

    def count(x):
        counts = cp.zeros(_count_slots(nvals, dev), cp.uint64)
        _count(_flat(x, kdt).view(u), None, nvals, counts)
        return counts

    counts = stage.staged([a], count)
    idx = _value_table(dev, kdt.str, rule.cmp.tobytes(), rule.cmp.dtype.str)
    out = cp.zeros(rule.nbins, cp.uint64)
    _launch(_kernel("hist1d.cu", "fold_lut"), -(-nvals // 256), 256,
            (counts, idx, np.uint32(nvals), out))
    return out.view(cp.int64)


@functools.lru_cache(maxsize=64)
def _value_table(dev_id: int, dtype: str, cmp: bytes, cmp_dtype: str):
    """Device table value -> bin (-1: none) of every 8/16-bit value, by BinRule.index."""
    dt = np.dtype(dtype)
    e = np.frombuffer(cmp, cmp_dtype)
    rule = BinRule(edges=e, cmp=e, uniform=False)
    values = np.arange(1 << (8 * dt.itemsize), dtype=f"u{dt.itemsize}").view(dt)
    idx = rule.index(values).astype(np.int32)
    return _device_table(dev_id, idx.tobytes(), idx.dtype.str)


def bincount(x, length, weights=None):
    x, weights = asarray(x), None if weights is None else asarray(weights)
    kdt = _kernel_dtype(x.dtype)
    with stage.device(x, weights), stage.out_of_memory():
        if weights is None:
            return _staged_counts(x, kdt, None, length)
        return _staged_sums(x, weights, kdt, None, length, "f64")


def cumsum(a, axis, od, exclusive=False):
    """Prefix sums as :func:`hotbin.backend.cpu.cumsum` computes them (the same values).

    Integers: the look-back scan (exact in any order); along an axis of device data, one
    scan of the lanes laid end to end (:func:`hotbin.backend.cpu.int_lanes`). float32 and
    float64: the shared block order (scan.cu ``lane_sums``/``lane_scan``). Host input
    comes back on the host, slab by slab for one lane (slabs of whole blocks, each
    continued from the previous slab's total: bitwise the one-pass scan). Host data along
    an axis that does not fit one slab, and bool/float16/complex results, are the cpu
    backend's.
    """
    from . import cpu
    cp = _cupy()
    a = asarray(a)
    od = np.dtype(od)
    kind = cpu.scan_kind(od)
    lanes = axis is not None and a.ndim > 1
    if lanes and not isinstance(a, cp.ndarray) and a.nbytes > stage.stage_bytes():
        kind = "host"
    if a.size == 0 or kind in ("numpy", "host") or (kind == "int" and a.dtype.kind not in "biu"):
        return cpu.cumsum(to_host(a), axis, od, exclusive)
    if lanes:
        a = cp.asarray(a)
    with stage.device(a), stage.out_of_memory():
        if kind == "float":
            return _float_cumsum(a, axis, od, exclusive)
        if lanes:
            return cpu.int_lanes(lambda x, wide: _int_cumsum(x, wide, False), a, axis, od, exclusive, cp)
        res = _int_cumsum(a.reshape(-1), np.dtype(np.int64 if od.kind == "i" else np.uint64), exclusive)
        return res if res.dtype == od else res.astype(od)


def _int_cumsum(flat, wide, exclusive):
    """Flat integer prefix sums in NumPy's 64-bit accumulator dtype ``wide`` (look-back scan)."""
    cp = _cupy()
    kdt = _kernel_dtype(flat.dtype)
    acc = np.cumsum(np.empty(0, kdt)).dtype  # the instantiated accumulator: same words as wide
    if isinstance(flat, cp.ndarray) and flat.flags.c_contiguous and flat.dtype == kdt:
        return _scan(flat, acc, exclusive, acc.type(0))[0].view(wide)
    out = (cp if isinstance(flat, cp.ndarray) else np).empty(flat.size, acc)
    carry = [acc.type(0)]

    def scan(x):
        return _scan(_flat(x, kdt), acc, exclusive, carry[0])

    def add(total, part, region):
        res, last = part
        out[region[0]] = res if isinstance(out, cp.ndarray) else res.get()
        carry[0] = _descriptor_value(last, acc)
        return out

    return stage.staged([flat], scan, add, ready=lambda x: False, align=_scan_tile(kdt)[1]).view(wide)


def _float_cumsum(a, axis, od, exclusive):
    """float32/float64 scans in the shared block order: device data in one pass, one host
    lane in slabs of whole blocks (each from the previous slab's total)."""
    from . import cpu
    cp = _cupy()
    if axis is None:
        a, axis = a.reshape(-1), 0
    outer, m, inner = cpu.scan_layout(a.shape, axis)
    if isinstance(a, cp.ndarray):
        res = _lane_scan(cp.ascontiguousarray(a, od).reshape(outer, m, inner))[0].reshape(a.shape)
        return cpu.shift_exclusive(res, axis, cp) if exclusive else res
    out = np.empty(m, od)  # host data, one lane
    carry = [None]

    def scan(x):
        return _lane_scan(cp.ascontiguousarray(x, od).reshape(1, -1, 1), carry[0], True)

    def add(total, part, region):
        out[region[0]] = part[0].reshape(-1).get()
        carry[0] = part[1]
        return out

    stage.staged([a.reshape(-1)], scan, add, ready=lambda x: False, align=cpu.SCAN_BLOCK)
    return cpu.shift_exclusive(out, 0) if exclusive else out


def _lane_scan(x, carry=None, total=False):
    """``(inclusive scan, the lanes' totals after it when total)`` of the lanes of the
    contiguous float ``x`` ``(outer, m, inner)`` from ``carry`` (scan.cu lane_sums/lane_scan:
    one thread per lane block; the offsets are chained on the host)."""
    from . import cpu
    cp = _cupy()
    outer, m, inner = x.shape
    block = cpu.SCAN_BLOCK
    nblk = -(-m // block)
    units = outer * nblk * inner
    ct = _CTYPE[x.dtype]
    grid = max(1, min(-(-units // LANE_THREADS), 1 << 16))
    args = (np.int64(m), np.int64(inner), np.int64(nblk), np.int64(block), np.int64(units))
    sums = np.full((outer, nblk, inner), -0.0, x.dtype)
    if nblk > 1 or total:
        d = cp.empty(units, x.dtype)
        _launch(_kernel("scan.cu", f"lane_sums<{ct}>"), grid, LANE_THREADS, (x,) + args + (d,))
        sums = d.get().reshape(sums.shape)
    offsets, after = cpu.block_offsets(sums, carry)
    out = cp.empty_like(x)
    _launch(_kernel("scan.cu", f"lane_scan<{ct}>"), grid, LANE_THREADS,
            (x,) + args + (cp.asarray(np.ascontiguousarray(offsets)), out))
    return out, after


def _scan_tile(kdt):
    """``(16-byte vectors per thread, elements per tile)`` of the look-back scan over ``kdt``."""
    nvec = OVERRIDE.get("scan_nvec", SCAN_NVEC)
    return nvec, SCAN_BLOCK * nvec * (16 // np.dtype(kdt).itemsize)


def _scan(x, od, exclusive, init):
    """``(prefix sums of x starting from init, the inclusive total)``: one look-back pass."""
    cp = _cupy()
    if x.data.ptr % 16:
        x = x.copy()  # vector loads need 16-byte alignment
    n = x.size
    out = cp.empty(n, od)
    if n == 0:
        return out, init
    nvec, tile = _scan_tile(x.dtype)
    ntiles = -(-n // tile)
    words = 2 if od.itemsize == 8 else 1  # a tile descriptor: value and status
    state = cp.zeros(2 * words * ntiles + 1, cp.uint64)  # aggregates, inclusives, counter
    kern = _kernel("scan.cu", f"scan_lookback<{_CTYPE[x.dtype]}, {_CTYPE[od]}, {SCAN_BLOCK}, "
                              f"{nvec}, {'true' if exclusive else 'false'}>")
    inc = state[words * ntiles:2 * words * ntiles]
    _launch(kern, ntiles, SCAN_BLOCK, (x, np.int64(n), out, state[:words * ntiles], inc,
                                       state[2 * words * ntiles:], od.type(init)))
    return out, inc[words * (ntiles - 1)]


def _descriptor_value(word, od):
    """The value in a tile descriptor's first word (kernels/scan.cu ``Desc``), on the host."""
    w = int(word.get())
    if od.itemsize == 8:
        return np.array([w], np.uint64).view(od)[0]
    return np.array([w & 0xFFFFFFFF], np.uint32).view(od)[0]


def _wide(a) -> bool:
    """Read in place by the 2-D kernels, or converted whole at no more than twice its size."""
    return a.flags.c_contiguous and a.dtype.itemsize >= 4


def histogram2d(x, y, rx: BinRule, ry: BinRule, weights=None, scale=None):
    """``(grid[ix, iy], kept)`` by the skew-proof tiled kernels (backend/cuda_spatial.py)."""
    from . import cuda_spatial  # imported here: it imports this module's helpers

    arrays = [asarray(x), asarray(y)] + ([] if weights is None else [asarray(weights)])
    n = arrays[0].size
    if arrays[1].size != n:
        raise ValueError(f"y: has {arrays[1].size} points but x has {n}")
    if weights is not None and arrays[2].size != n:
        raise ValueError(f"weights: has {arrays[2].size} values but x has {n} points")
    arrays = [a.reshape(-1) for a in arrays]

    def run(xs, ys, ws=None):
        return cuda_spatial.histogram2d(xs, ys, rx, ry, ws, scale)

    def add(total, part, region):
        if total is None:
            return part
        grid = _fold_sum(total[0], part[0], region) if scale is not None else total[0] + part[0]
        return grid, total[1] + part[1]

    with stage.device(*arrays), stage.out_of_memory():
        return stage.staged(arrays, run, add, ready=_wide)


def luma_histogram(img):
    """``(N, 256)`` int64 luma counts of uint8 ``(N, H, W, C)`` images, C in {3, 4} (fused, kernels/luma.cu)."""
    from . import cuda_spatial

    cp = _cupy()
    a = cuda_spatial.luma_batch(asarray(img))

    def run(x):  # whole images (4-D), rows of one image (3-D) or pixels of one row (2-D)
        return cuda_spatial.luma_histogram(x if x.ndim > 2 else x[None])

    def add(total, part, region):
        if isinstance(region[0], slice) and region[0] == slice(0, a.shape[0]):
            return part
        total = cp.zeros((a.shape[0], 256), cp.int64) if total is None else total
        total[region[0]] += part if isinstance(region[0], slice) else part[0]
        return total

    with stage.device(a), stage.out_of_memory():
        return stage.staged([a], run, add, keep=1) if a.size else cp.zeros((a.shape[0], 256), cp.int64)
