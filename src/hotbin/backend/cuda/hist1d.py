"""1-D counts and weighted sums on the device (kernels/hist1d.cu).

Counts are 32-bit per block and 64-bit in the result; 8/16-bit integers are
counted by raw value and folded into bins through the value table of
:meth:`BinRule.index`. Weighted sums take the accumulator of the reduction
(:data:`SUM_ACC`): float64 atomics (not bitwise reproducible), exact int64, or
fixed-point words equal to the cpu backend's after :func:`hotbin.fixedpoint.fold`.
Every function here takes device arrays; :mod:`.stage` feeds them slab by slab.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ... import fixedpoint
from ...binning import BinRule
from .rule import BIN_NEAREST, BIN_NEAREST_ALL, BIN_RAW, BIN_RAW_FULL, BIN_RULE, BIN_SEARCH, binner
from .rule import count_binner, edge_bytes, raw_args, rule_args
from .rule import value_table
from .runtime import CTYPE, cupy, device_info, flat, kernel, launch, resident
from .stage import add as add_parts
from .stage import staged
from .tuning import EDGE_STAGE_BYTES, SHORT_ROW, SMEM_RESERVED, THREADS_PER_SM, Policy, Tuning, count_policy
from .tuning import count_slots, grid
from .tuning import sum_policy

__all__ = ["SUM_ACC", "LUT_KINDS", "count", "blocks", "foldable", "sums", "staged_counts", "staged_sums",
           "histogram_lut", "histogram_rows", "fold_words", "fold_sum", "ci_name_expressions"]


class _Acc:
    """One accumulator of hist_sum: its ACC template argument, words per slot, the
    result's dtype and the dtype kind the weights are read as."""

    def __init__(self, code: int, words: int, out, weights: str):
        self.code, self.words, self.out, self.weights = code, words, np.dtype(out), weights


#: hist_sum's accumulator by :attr:`hotbin.reductions.Reduction.acc` (hist1d.cu ACC_*)
SUM_ACC = {"f64": _Acc(0, 1, np.float64, "f"), "i64": _Acc(1, 1, np.uint64, "i"),
           "fixed": _Acc(2, 2, np.uint64, "f")}
#: 8/16-bit integers: counted by raw value, then folded into bins
LUT_KINDS = {np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16)}
_LAYOUT = {"lanes": 0, "copies": 1, "windows": 1, "global": 2}  #: hist1d.cu LAYOUT_*
_U32_SHARE = 1 << 31  #: most samples one block counts in one launch (32-bit counters)
MAX_GRID_Y = 65535  #: most rows of a batch in one launch (CUDA's grid dimension y)
FOLD_THREADS = 256  #: fold_lut: threads per block, one value each
#: hist_sum reads one value per thread per grid stride: size the grid for 4 per thread
SUM_PER_THREAD = 4
VECTOR_BYTES = 16  #: hist_count reads 16-byte vectors


def _rule_kernel_args(dtype, rule: BinRule | None, dev_id: int, eb: int, tune: Tuning, full: bool,
                      counts: bool = False):
    """``(comparison ctype, binner, rule arguments)`` of a launch over values of ``dtype``
    (``counts``: hist_count's binner, :func:`rule.count_binner`)."""
    if rule is None:
        return CTYPE[dtype], (BIN_RAW_FULL if full else BIN_RAW), raw_args(dtype, dev_id)
    how = count_binner(rule, eb > 0, tune.shortcut) if counts else binner(rule)
    return CTYPE[rule.kernel_cmp.dtype], how, rule_args(rule, dev_id, eb > 0, tune.shortcut)


class _CountPlan(NamedTuple):
    """What :func:`count` launches for one (dtype, rule, slots, device, tuning): the same for
    every call, so planned once (a small call then costs a lookup and one launch)."""

    kern: object
    pol: Policy
    smem: int  #: dynamic shared memory bytes
    copies: int
    wins: int  #: windows (blocks sharing one part of the input)
    per: int  #: slots per block
    per_thread: int  #: values per thread per grid stride
    fit: int  #: blocks per SM the kernel holds (its registers and shared memory, the policy's cap)
    args: tuple  #: the rule's kernel arguments (:func:`rule.rule_args`) and the slot base (0)
    tail: tuple  #: slots per block, copies, windows


#: (id(rule), dtype, slots, device, tuning, short rows) -> (rule, plan); the rule is held so
#: its id is not reused while its entry lives. Cleared when full.
_PLANS: dict = {}
PLANS_MAX = 64
_NO_FOLD = np.uint64(0)  #: hist_count's null value table


def _count_plan(dtype, rule: BinRule | None, nslots: int, dev: int, tune: Tuning, row_n) -> _CountPlan:
    """The plan of counting values of ``dtype`` (the kernel's)."""
    key = (None if rule is None else id(rule), dtype, nslots, dev, tune, row_n is not None)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is rule:
        return hit[1]
    info = device_info(dev)
    eb = edge_bytes(rule, EDGE_STAGE_BYTES)
    pol = count_policy(nslots, info, eb, tune, row_n)
    wins = pol.windows if pol.layout == "windows" else 1
    per = -(-nslots // wins)  # slots per block
    full = wins == 1 and dtype.itemsize <= 2 and nslots == 1 << (8 * dtype.itemsize)
    c, how, args = _rule_kernel_args(dtype, rule, dev, eb, tune, full, counts=True)
    if pol.layout == "lanes":  # 32 copies of the slots and of one spare slot (hist1d.cu)
        smem, copies = (per + 1) * 32 * 4, 32
    elif pol.layout in ("copies", "windows"):
        stride = per | 1
        budget = info["smem_sm"] // pol.blocks_per_sm - SMEM_RESERVED - eb
        copies = max(1, min(pol.copies if pol.layout == "copies" else 1, budget // (stride * 4),
                            (info["smem_block"] - eb) // (stride * 4)))
        smem = stride * copies * 4
    else:
        smem, copies = 0, 0
    smem = ((smem + 15) & ~15) + eb if (smem or eb) else 0
    kern = kernel("hist1d.cu", f"hist_count<{CTYPE[dtype]}, {c}, {how}, {_LAYOUT[pol.layout]}, {pol.unroll}>")
    # one wave of resident blocks: the shared-memory estimate alone missed the registers (the
    # walk's 52-56 per thread hold 2 blocks of 512, not the table's 4)
    fit = resident(kern, pol.block, smem, min(pol.blocks_per_sm, THREADS_PER_SM // pol.block))
    plan = _CountPlan(kern, pol, smem, copies, wins, per, (VECTOR_BYTES // dtype.itemsize) * pol.unroll,
                      fit, (*args, np.uint64(0)), (np.uint32(per), np.uint32(copies), np.uint32(wins)))
    if len(_PLANS) >= PLANS_MAX:
        _PLANS.clear()
    _PLANS[key] = (rule, plan)
    return plan


def count(x, rule: BinRule | None, nslots: int, out, tune: Tuning, rows: int = 1, fold=None):
    """out[s] += number of values of x whose bin (rule) or value (rule None) is s.

    ``out`` (64-bit integers) has at least nslots entries; the "windows" layout needs
    ``windows * ceil(nslots / windows)`` of them (:func:`tuning.count_slots`). With
    ``rows`` > 1, ``x`` is C-contiguous ``(rows, n)`` and ``out`` ``(rows, slots)``:
    one histogram per row, in one launch per :data:`MAX_GRID_Y` rows.
    ``fold`` (a device value table, one window): slot s goes to ``out[fold[s]]`` instead.
    """
    n = x.size // max(rows, 1)
    if n == 0 or nslots == 0:
        return
    dev = x.data.device_id
    p = _count_plan(x.dtype, rule, nslots, dev, tune, n if rows > 1 and n <= SHORT_ROW else None)
    wins = p.wins
    if fold is not None and not foldable(p):
        raise ValueError("a value table needs private counters in one window")
    g = blocks(p, dev, n, rows)
    step = g // wins * _U32_SHARE
    last = _NO_FOLD if fold is None else fold
    if rows == 1 and n <= step:  # one launch over the whole (small calls: no views made)
        launch(p.kern, (g, 1), p.pol.block,
               (x, np.int64(n), *p.args, *p.tail, out, np.int64(n), np.uint64(out.size), last), p.smem)
        return
    x2 = x.reshape(rows, n)
    o2 = out.reshape(rows, -1)
    for r in range(0, rows, MAX_GRID_Y):
        nr = min(rows, r + MAX_GRID_Y) - r
        for s in range(0, n, step):
            xs = x2[r:r + nr, s:s + step]
            launch(p.kern, (g, nr), p.pol.block,
                   (xs, np.int64(xs.shape[1]), *p.args, *p.tail, o2[r:r + nr], np.int64(n),
                    np.uint64(o2.shape[1]), last), p.smem)


def blocks(p: _CountPlan, dev: int, n: int, rows: int = 1) -> int:
    """Blocks per row of a launch of ``p`` over ``rows`` rows of ``n`` values (a multiple of
    the windows); a launch takes at most ``blocks // windows * 2**31`` values of a row."""
    g = grid(device_info(dev), p.pol, p.smem, n * rows * p.wins, p.per_thread, p.fit)
    return max(p.wins, -(-g // rows) // p.wins * p.wins)


def foldable(p: _CountPlan) -> bool:
    """Whether the plan's counters go through the flush that applies a value table: private
    counters in one window ("global" adds straight into the result)."""
    return p.wins == 1 and p.pol.layout in ("lanes", "copies")


def sums(x, w, rule: BinRule | None, nslots: int, acc: str, out, tune: Tuning, factor=(0.0, 0.0)):
    """Weighted sums of w by bin (rule) or value (rule None) into out (hist_sum), with the
    accumulator ``SUM_ACC[acc]``. ``factor``: the fixed-point factor as two powers of two
    (:func:`hotbin.fixedpoint.factors`)."""
    n = x.size
    if n == 0 or nslots == 0:
        return
    a = SUM_ACC[acc]
    dev = x.device.id
    info = device_info(dev)
    eb = edge_bytes(rule, EDGE_STAGE_BYTES)
    pol, shared = sum_policy(nslots * a.words, eb, info, tune)
    smem = (nslots * a.words * 8 if shared else 0) + eb
    c, how, args = _rule_kernel_args(x.dtype, rule, dev, eb, tune, False)
    kern = kernel("hist1d.cu", f"hist_sum<{CTYPE[x.dtype]}, {c}, {how}, {a.code}, {CTYPE[w.dtype]}, "
                               f"{'false' if shared else 'true'}>")
    g = grid(info, pol, smem, n, SUM_PER_THREAD)
    # fixed point: a launch takes at most LO_CHUNK weights, then the low words are folded
    step = fixedpoint.LO_CHUNK if acc == "fixed" else g * _U32_SHARE
    for s in range(0, n, step):
        xs, ws = x[s:s + step], w[s:s + step]
        launch(kern, g, pol.block,
               (xs, ws, np.int64(xs.size), *args, np.uint64(0), np.uint32(nslots),
                np.float64(factor[0]), np.float64(factor[1]), out), smem)
        if acc == "fixed":
            fold_words(out, nslots)


def fold_words(out, nslots):
    """In place: hi += lo >> 32, lo &= 2^32 - 1 on flat words [hi..., lo...] (int64 view)."""
    v = out.view(np.int64)
    hi, lo = v[:nslots], v[nslots:]
    hi += lo >> fixedpoint.SPLIT
    lo &= (1 << fixedpoint.SPLIT) - 1


def fold_sum(total, part, region=None):
    """Fixed-point words of two slabs: added, then folded (0 <= lo < 2^32 again)."""
    if total is None:
        return part
    total += part
    fold_words(total.reshape(-1), total.size // 2)
    return total


def staged_counts(a, kdt, rule: BinRule | None, nslots: int, tune: Tuning):
    """int64 counts of ``a`` by bin (rule) or value (rule None), a slab at a time."""
    cp = cupy()

    def run(x):
        slots = _slots(nslots, x.data.device_id, tune)
        out = cp.zeros(slots, cp.int64)  # the kernels add 64-bit words: int64 as uint64
        count(flat(x, kdt), rule, nslots, out, tune)
        return out if slots == nslots else out[:nslots]
    return staged([a], run)


@functools.lru_cache(maxsize=256)
def _slots(nslots: int, dev: int, tune: Tuning) -> int:
    """:func:`tuning.count_slots` on device ``dev``."""
    return count_slots(nslots, device_info(dev), tune)


def _weights(w, kind):
    """Weights as a kernel dtype: float32/float64 (widened in the kernel) or int64."""
    if kind == "f":
        return flat(w, None if w.dtype in (np.float32, np.float16) else np.dtype(np.float64))
    return flat(w, np.dtype(np.int64))


def staged_sums(a, w, kdt, rule: BinRule | None, nslots: int, acc: str, tune: Tuning, factor=(0.0, 0.0)):
    """Sums of the weights ``w`` by bin or value (:func:`sums`), a slab at a time: float64
    (acc "f64"), int64 ("i64") or fixed-point words ``(2, nslots)`` ("fixed")."""
    cp = cupy()
    spec = SUM_ACC[acc]

    def run(x, ws):
        out = cp.zeros(spec.words * nslots, spec.out)
        sums(flat(x, kdt), _weights(ws, spec.weights), rule, nslots, acc, out, tune, factor)
        if spec.out != np.uint64:
            return out
        out = out.view(cp.int64)
        return out.reshape(spec.words, nslots) if spec.words > 1 else out
    return staged([a, w], run, fold_sum if acc == "fixed" else add_parts)


#: (id(rule), value dtype, device, tuning) -> (rule, unsigned dtype, value table, folded in the
#: flush): what :func:`histogram_lut` derives from the rule, once (the rule held, as in _PLANS)
_LUTS: dict = {}


def _lut_plan(kdt, rule: BinRule, dev: int, tune: Tuning):
    key = (id(rule), kdt, dev, tune)
    hit = _LUTS.get(key)
    if hit is not None and hit[0] is rule:
        return hit
    u = np.dtype(f"u{kdt.itemsize}")
    folded = foldable(_count_plan(u, None, 1 << (8 * kdt.itemsize), dev, tune, None))
    plan = (rule, u, value_table(dev, kdt, rule), folded)
    if len(_LUTS) >= PLANS_MAX:
        _LUTS.clear()
    _LUTS[key] = plan
    return plan


def histogram_lut(a, kdt, rule: BinRule, tune: Tuning):
    """8/16-bit integers: count each raw value, then fold values into bins exactly.

    When the value counts fit one block's private counters (8-bit values under the
    table's policies), the fold is the kernel's flush: one zeroed result, one launch.
    Otherwise (16-bit values, forced "global" or "windows" layouts) a second kernel
    folds the value counts.
    """
    cp = cupy()
    nvals = 1 << (8 * kdt.itemsize)
    dev = cp.cuda.Device().id
    _, u, table, folded = _lut_plan(kdt, rule, dev, tune)

    def run_folded(x):
        out = cp.zeros(rule.nbins, cp.uint64)
        count(flat(x, kdt).view(u), None, nvals, out, tune, fold=table)
        return out

    def run(x):
        counts = cp.zeros(_slots(nvals, dev, tune), cp.uint64)
        count(flat(x, kdt).view(u), None, nvals, counts, tune)
        return counts

    if folded:
        return staged([a], run_folded).view(cp.int64)
    counts = staged([a], run)
    out = cp.zeros(rule.nbins, cp.uint64)
    launch(kernel("hist1d.cu", "fold_lut"), -(-nvals // FOLD_THREADS), FOLD_THREADS,
           (counts, table, np.uint32(nvals), out))
    return out.view(cp.int64)


def histogram_rows(a, kdt, rule: BinRule, tune: Tuning, dev_id: int):
    """``(N, nbins)`` int64 counts of the rows of the 2-D ``a``, one launch per slab.

    8-bit integers are counted by raw value, and the value table folds them into
    bins as each block flushes its counters.
    """
    cp = cupy()
    rows, n = a.shape
    raw = kdt.itemsize == 1 and tune.lut
    width = rule.nbins if raw else count_slots(rule.nbins, device_info(dev_id), tune)
    fold = value_table(dev_id, kdt, rule) if raw else None

    def run(x):  # a slab of whole rows, or a piece of one row
        part = cp.zeros((x.shape[0] if x.ndim == 2 else 1, width), cp.uint64)
        if x.size:
            x = flat(x, kdt)
            if raw:
                count(x.view(cp.uint8), None, 256, part, tune, part.shape[0], fold)
            else:
                count(x, rule, rule.nbins, part, tune, part.shape[0])
        return part

    def add(total, part, region):
        if region[0] == slice(0, rows):
            return part
        total = cp.zeros((rows, width), cp.uint64) if total is None else total
        total[region[0]] += part if isinstance(region[0], slice) else part[0]
        return total

    out = staged([a], run, add) if rows and n else cp.zeros((rows, width), cp.uint64)
    return out[:, :rule.nbins].view(cp.int64)


def ci_name_expressions() -> dict[str, list[str]]:
    """Every instantiation of hist1d.cu this module launches (for .ci/compile_kernels.py)."""
    f, d, u8, u16, i64 = "float", "double", "unsigned char", "unsigned short", "long long"
    h = []
    for t, c in ((f, f), (d, d), (f, d), ("int", d), (i64, i64), (u8, d)):
        for b in (BIN_RULE, BIN_SEARCH, BIN_NEAREST, BIN_NEAREST_ALL):
            for lay in (0, 1, 2):
                h.append(f"hist_count<{t}, {c}, {b}, {lay}, 2>")
            if b in (BIN_NEAREST, BIN_NEAREST_ALL):
                continue  # counts only
            for acc, w in ((0, f), (0, d), (1, i64), (2, f), (2, d)):
                h.append(f"hist_sum<{t}, {c}, {b}, {acc}, {w}, false>")
                h.append(f"hist_sum<{t}, {c}, {b}, {acc}, {w}, true>")
    for t in (u8, u16, "unsigned int", i64):
        for lay in (0, 1, 2):
            h.append(f"hist_count<{t}, {t}, {BIN_RAW}, {lay}, 2>")
        h.append(f"hist_sum<{t}, {t}, {BIN_RAW}, 0, {d}, false>")
    for t in (u8, u16):
        h.append(f"hist_count<{t}, {t}, {BIN_RAW_FULL}, 0, 2>")
    h.append("fold_lut")
    return {"hist1d.cu": h}
