"""Tuning of the cuda backend: tables by device architecture, and the choices they make.

Pure functions from (workload, device facts, :class:`Tuning`) to a launch plan,
as CUB's dispatch layer: no CuPy here, so tests check the choices without a GPU.
A device is described by the dict of :func:`hotbin.backend.cuda.runtime.device_info`
(``sms``, ``smem_block``, ``smem_sm``, ``arch``). Each tuned entry names the
benchmark run that chose it. Benchmarks and tests force choices with
:func:`forced`; primitives read :func:`current` once and pass it down.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass, field, fields, replace

__all__ = ["Policy", "Regions", "Table", "TABLES", "table", "Tuning", "current", "forced",
           "count_policy", "count_slots", "shift_policy", "shift_smem", "sum_policy", "grid", "spatial_plan"]


@dataclass(frozen=True)
class Policy:
    """How one counting launch is laid out."""

    layout: str  #: lanes | copies | windows | global | shift16 | shift32 (see kernels/hist1d.cu)
    block: int = 512  #: threads per block
    blocks_per_sm: int = 4  #: resident blocks wanted per SM (capped by shared memory)
    unroll: int = 2  #: 16-byte loads in flight per thread
    copies: int = 8  #: most private copies per block (layout "copies")
    windows: int = 0  #: layout "windows": blocks sharing one part of the input (0: fewest that fit)


@dataclass(frozen=True)
class Regions:
    """Tiled 2-D binning: a tile's region holds ``estimate * (1 + slack) + sigmas``
    standard deviations ``+ pad`` points, estimated from ``sample`` points; runs beyond
    it go to the result by global atomics (exact, only slower)."""

    slack: float = 0.02
    sigmas: float = 6.0
    pad: int = 4096
    #: a strided gather: a few sectors of the input read instead of run 1's counting pass over
    #: all of it
    sample: int = 1 << 20


@dataclass(frozen=True)
class Table:
    """The tuned choices for one device architecture."""

    #: counting policies by number of slots: the first whose layout holds them wins
    count: tuple
    short_row: Policy  #: batches of rows of at most SHORT_ROW values
    #: 16-bit integers whose bins are a shift of the value (hist1d.cu hist_shift): layout
    #: "shift16" (16-bit counters) or "shift32", up to ``copies`` copies
    shift: Policy
    sum_shared: Policy  #: weighted sums, up to ``copies`` private copies per block
    sum_global: Policy  #: weighted sums, global atomics
    scan_nvec: int  #: look-back scan: 16-byte vectors per thread
    #: log2 of the cells of one tile of the 2-D kernels, by accumulator
    tile_shift: dict = field(default_factory=dict)
    scatter_prefetch: bool = False  #: scatter_codes variant
    regions: Regions = Regions()
    #: the tiled 2-D strategy's scatter where it applies (at most 32 tiles, nearest-edge rules):
    #: "warp" (spatial.cu scatter_warps) or "block" (scatter_codes, as for more tiles)
    scatter: str = "warp"


_H200 = Table(
    count=(
        # <= 256 slots: 32 lane-indexed copies, bank-conflict free on every input; unroll 4
        # runs at the read floor (benchmarks/gpu_suite.py G1, G2 --sweep; numbers:
        # results/gpu-h200.md)
        Policy("lanes", block=512, blocks_per_sm=4, unroll=4),
        # fits one block: private copies, up to `copies` of them (for u16 the value windows
        # below beat this layout: gpu_suite.py G3)
        Policy("copies", block=512, blocks_per_sm=4, unroll=2, copies=8),
        # up to MAX_WINDOWS blocks' worth: blocks share input parts, one window of slots
        # each (gpu_suite.py G3: ahead of more windows, of clusters sharing counters through
        # distributed shared memory and of global atomics)
        Policy("windows", block=1024, blocks_per_sm=2, unroll=4, windows=0),
        # beyond: 64-bit global atomics straight into the result.
        Policy("global", block=512, blocks_per_sm=4, unroll=2),
    ),
    # benchmarks/probes/gpu_batched.py --sweep: short rows run best in small blocks with few
    # copies (zeroing and flushing cost little); long rows take the table's lanes
    short_row=Policy("copies", block=128, blocks_per_sm=16, unroll=2, copies=2),
    # 32-bit counters, 8 copies (of 4096 slots: 128 KiB), one block of 1024 per SM; slots whose
    # 32-bit copy does not fit (65536) take 16-bit counters, slower (their wrap test bounds the
    # ALU pipe). benchmarks/device.sh suite, group G3 (numbers: results/gpu-h200.md)
    shift=Policy("shift32", block=1024, blocks_per_sm=1, unroll=4, copies=8),
    # Lane-interleaved copies, 16 (float64 sums of 256 bins: 33 KiB; fixed point: 49 KiB),
    # 4 blocks of 512 per SM wanted, 3 resident (registers): ahead of fewer copies, of 32 and
    # of global atomics for float64 and fixed point. benchmarks/device.sh suite, group W
    # (numbers: results/gpu-h200.md)
    sum_shared=Policy("copies", block=512, blocks_per_sm=4, copies=16),
    sum_global=Policy("global", block=512, blocks_per_sm=4),
    # gpu_suite "scan/sweep": more vectors a thread ran faster up to 16 (numbers: gpu-h200.md)
    scan_nvec=16,
    # 128 KiB of shared accumulators per block (u32 counts 2^15, float64/int64 sums 2^14,
    # fixed-point word pairs 2^13); fewer, larger tiles keep the scatter's runs long.
    # Unswept (benchmarks/gpu_spatial.py run 1 used 2^15 for counts).
    # The values' 12 bytes a cell (sum or key, u32 count): 2^14 cells, 192 KiB, 64 tiles of
    # 1024^2. Unswept: benchmarks/gpu_agg.py runs 2 and 3 compared 2^13 (16-byte cells) with
    # 2^14 (numbers: results/gpu-h200.md).
    tile_shift={"count": 15, "f64": 14, "i64": 14, "fixed": 13, "mean": 14, "min": 14, "max": 14},
    # the prefetching variant holds 108 vs 80 registers (2 vs 3 resident blocks) and ran
    # slower at every share of hot points (benchmarks/gpu_spatial.py; numbers: gpu-h200.md)
    scatter_prefetch=False,
    # scatter_warps for grids of at most 32 tiles: faster than scatter_codes the more points
    # are hot (benchmarks/device.sh heatmap; numbers: gpu-h200.md)
    scatter="warp",
)

#: tuned tables by compute capability; "default" for devices no benchmark has run on
TABLES = {"sm_90": _H200, "default": _H200}


def table(info: dict) -> Table:
    return TABLES.get(info.get("arch"), TABLES["default"])


# --- forced choices -------------------------------------------------------------------------

@dataclass(frozen=True)
class Tuning:
    """Choices that benchmarks and tests force; the default forces nothing.

    Policy fields (``layout``, ``block``, ``blocks_per_sm``, ``unroll``, ``copies``,
    ``windows``) replace the table's; ``lut=False`` counts 8/16-bit integers through
    the rule, not the value table; ``shortcut=False`` always checks the guess against
    the edges (for 2-D heatmaps too: the nearest-edge rule compares every value); ``scan_nvec``
    the look-back scan's vectors; ``strategy`` ("private", "tiled", "direct"), ``scatter``
    ("warp", "block"), ``prefetch`` and ``regions`` the 2-D kernels';
    ``stage_bytes`` the slab size of :mod:`hotbin.backend.cuda.stage`.
    """

    layout: str | None = None
    block: int | None = None
    blocks_per_sm: int | None = None
    unroll: int | None = None
    copies: int | None = None
    windows: int | None = None
    lut: bool = True
    shortcut: bool = True
    scan_nvec: int | None = None
    strategy: str | None = None
    scatter: str | None = None
    prefetch: bool | None = None
    regions: Regions | None = None
    stage_bytes: int | None = None

    def __hash__(self) -> int:  # the launch caches key on it every call: hashed once
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:  # the hash of strings differs between processes
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def policy_fields(self) -> dict:
        """The Policy fields forced (all but the layout)."""
        return {f.name: getattr(self, f.name) for f in fields(Policy)
                if f.name != "layout" and getattr(self, f.name) is not None}


_CURRENT = contextvars.ContextVar("hotbin_cuda_tuning", default=Tuning())


def current() -> Tuning:
    """The :class:`Tuning` in force (in this thread / task)."""
    return _CURRENT.get()


@contextlib.contextmanager
def forced(**choices):
    """``with forced(layout="global", strategy="direct", stage_bytes=1 << 16):`` runs its
    body with those choices (on top of any outer :func:`forced`)."""
    token = _CURRENT.set(replace(current(), **choices))
    try:
        yield current()
    finally:
        _CURRENT.reset(token)


# --- 1-D counting and sums -------------------------------------------------------------------

#: layout "lanes": 32 copies of at most this many 4-byte slots and of one spare slot for values in
#: none (33 KiB of shared memory)
LANES_MAX_SLOTS = 256
#: layout "windows": most blocks sharing one part of the input (4 ran slower than 2, G3)
MAX_WINDOWS = 8
#: rows of a batch up to this many values take the table's short_row policy
SHORT_ROW = 1 << 14
#: edges are staged in shared memory up to this size, else read through L1
EDGE_STAGE_BYTES = 16 << 10
#: shared memory the CUDA runtime reserves per resident block (sm_80 and later)
SMEM_RESERVED = 1024
#: hist_count stages the edges 16-byte aligned after its counters: up to 15 bytes of padding
COUNTER_SLACK = 16
#: most resident threads per SM (sm_80 to sm_90)
THREADS_PER_SM = 2048


def count_policy(nslots: int, info: dict, edge_bytes: int, tune: Tuning,
                 row_n: int | None = None) -> Policy:
    """The counting policy for ``nslots`` slots (``row_n``: values per row of a batch)."""
    tab = table(info)
    cap = (info["smem_block"] - edge_bytes - COUNTER_SLACK) // 4  # one-copy counters that fit
    bounds = {"lanes": LANES_MAX_SLOTS, "copies": cap - 1, "windows": MAX_WINDOWS * (cap - 1),
              "global": math.inf}
    forced_layout = tune.layout
    pol = next((p for p in tab.count if p.layout == forced_layout and nslots <= bounds[p.layout]), None)
    if pol is None and row_n is not None and row_n <= SHORT_ROW and nslots <= bounds["copies"] \
            and not forced_layout:
        pol = tab.short_row
    if pol is None:
        pol = next(p for p in tab.count if nslots <= bounds[p.layout])
    forced_fields = tune.policy_fields()
    if forced_fields:
        pol = replace(pol, **forced_fields)
    if pol.layout == "windows":
        w = max(2, pol.windows or 1)
        while -(-nslots // w) > cap - 1:
            w *= 2
        pol = replace(pol, windows=w)
    return pol


def count_slots(nslots: int, info: dict, tune: Tuning) -> int:
    """Length of the counting buffer for ``nslots`` slots (the windows layout pads)."""
    pol = count_policy(nslots, info, 0, tune)
    w = pol.windows if pol.layout == "windows" else 1
    return w * -(-nslots // w)


#: layouts of the 16-bit shift kernel (hist1d.cu hist_shift): 16- or 32-bit counters
SHIFT_LAYOUTS = {"shift16": 16, "shift32": 32}
#: hist_shift's interleaved copies (lane & (copies - 1)) and hist_sum's: a power of two up to
#: a warp
MAX_COPIES = 32


def _pow2_at_most(k: int) -> int:
    return 1 << (max(1, int(k)).bit_length() - 1)


def shift_policy(nslots: int, info: dict, tune: Tuning) -> Policy | None:
    """The policy of hist_shift for ``nslots`` slots (and its spare), or None when no forced
    choice lets it run (another layout forced) or its counters do not fit one block.
    ``copies`` is a power of two: the table's (or the forced) number, fewer if they do not
    fit; the table's counters (32-bit), else 16-bit ones when those do not fit."""
    if tune.layout is not None and tune.layout not in SHIFT_LAYOUTS:
        return None
    pol = replace(table(info).shift, **tune.policy_fields())
    budget = info["smem_block"] // 4 - 32  # words; the flush pads to whole warps
    for layout in ([tune.layout] if tune.layout else [pol.layout, "shift16"]):
        per = nslots + 1 if SHIFT_LAYOUTS[layout] == 32 else (nslots + 2) // 2  # words a copy, spare too
        if per <= budget:
            return replace(pol, layout=layout, copies=min(_pow2_at_most(pol.copies or 1), MAX_COPIES,
                                                          _pow2_at_most(budget // per)))
    return None


def shift_smem(nslots: int, pol: Policy) -> int:
    """Shared-memory bytes of hist_shift's counters under ``pol`` (hist1d.cu: words per copy
    times copies, padded to whole warps)."""
    per = nslots + 1 if SHIFT_LAYOUTS[pol.layout] == 32 else (nslots + 2) // 2
    return ((per * pol.copies + 31) & ~31) * 4


def sum_policy(copy_bytes: int, edge_bytes: int, info: dict, tune: Tuning) -> tuple[Policy, bool]:
    """``(policy, shared)`` of weighted sums whose private copy takes ``copy_bytes`` (the slots
    and their spare; hist1d.cu hist_sum): private copies per block when one fits shared
    memory, as many as the policy's ``copies`` (a power of two) and its resident blocks
    allow, else global atomics."""
    tab = table(info)
    shared = copy_bytes + edge_bytes + COUNTER_SLACK <= info["smem_block"] and tune.layout != "global"
    if not shared:
        return replace(tab.sum_global, **tune.policy_fields()), False
    pol = replace(tab.sum_shared, **tune.policy_fields())
    per_block = min(info["smem_block"], info["smem_sm"] // max(1, pol.blocks_per_sm) - SMEM_RESERVED) \
        - edge_bytes - COUNTER_SLACK
    fit = max(1, per_block // copy_bytes)
    return replace(pol, copies=max(1, min(_pow2_at_most(pol.copies or 1), MAX_COPIES, _pow2_at_most(fit)))), True


def grid(info: dict, policy: Policy, smem: int, n: int, per_thread: int, fit: int | None = None) -> int:
    """Blocks to launch: the resident blocks that fit, fewer for small inputs. ``fit``: the
    blocks per SM the kernel holds (:func:`runtime.resident`: registers and shared memory);
    None estimates it from shared memory alone."""
    if fit is None:
        fit = info["smem_sm"] // (smem + SMEM_RESERVED) if smem else policy.blocks_per_sm
    per_sm = max(1, min(policy.blocks_per_sm, THREADS_PER_SM // policy.block, fit))
    return min(info["sms"] * per_sm, max(1, -(-n // (policy.block * per_thread))))


# --- 2-D binning ----------------------------------------------------------------------------

#: most tiles the scatter ranks in shared memory; beyond, strategy "direct"
MAX_TILES = 4096
#: below this many points, one direct pass beats four launches (unswept)
DIRECT_BELOW = 1 << 16


def spatial_plan(n: int, ncell: int, acc: str, info: dict, tune: Tuning) -> str:
    """The 2-D strategy: "private" (the grid fits a block's shared memory), "tiled" or
    "direct" (too many tiles to sort, or too few points to amortize four launches)."""
    shift = table(info).tile_shift[acc]
    fits = ncell <= 1 << shift
    if tune.strategy:
        return "tiled" if tune.strategy == "private" and not fits else tune.strategy
    if fits:
        return "private"
    if n < DIRECT_BELOW or -(-ncell >> shift) > MAX_TILES:
        return "direct"
    return "tiled"


# --- host data: where the cuda backend is the faster choice ---------------------------------

#: Host (NumPy) inputs of at least this many bytes (all arrays of the call together) run on
#: the cuda backend when ``backend=None``, ``$HOTBIN_BACKEND`` is unset and a device is
#: usable (:func:`hotbin.backend.name_for`), for results whose bits are the same there.
#: The threshold is the smallest size from which cuda won by a clear margin at every larger
#: size in both runs of benchmarks/probes/gpu_offload.py (numbers: gpu-h200.md). Below it the
#: ratio swings: arrays under stage.PIN_MIN_BYTES go through a pageable cupy.asarray. Grids
#: under :data:`OFFLOAD_CELLS` were not measured and take the histogram's threshold;
#: histogram2d never won by a clear margin and stays on the cpu.
OFFLOAD_BYTES = {"histogram": 96 << 20, "heatmap": 64 << 20}
#: heatmaps of fewer cells than this (512 x 512, the smallest grid measured) use
#: OFFLOAD_BYTES["histogram"]
OFFLOAD_CELLS = 1 << 18


def offload_bytes(op: str, cells: int = 0) -> float:
    """Host bytes from which the front door ``op`` runs on the cuda backend (inf: never);
    ``cells``: a heatmap's grid size."""
    if op == "heatmap" and cells < OFFLOAD_CELLS:
        op = "histogram"
    return OFFLOAD_BYTES.get(op, math.inf)
