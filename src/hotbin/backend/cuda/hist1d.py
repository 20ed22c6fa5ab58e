"""1-D counts on the device (kernels/hist1d.cu); weighted sums are :mod:`.sums`'.

Counts are 32-bit per block and 64-bit in the result; 8/16-bit integers are
counted by raw value and folded into bins through the value table of
:meth:`BinRule.index`, except 16-bit integers whose bins are a shift of the value,
counted into bins at once (:func:`shift_plan`, hist_shift). Every function here
takes device arrays; :mod:`.stage` feeds them slab by slab.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ...core.binning import BinRule
from .rule import BIN_NEAREST, BIN_NEAREST_ALL, BIN_RAW, BIN_RAW_FULL, BIN_RULE, BIN_SEARCH, binner
from .rule import count_binner, edge_bytes, raw_args, rule_args
from .rule import shift_rule, value_table
from .runtime import CTYPE, cupy, device_info, flat, kernel, launch, resident
from .stage import staged
from .tuning import EDGE_STAGE_BYTES, SHIFT_LAYOUTS, SHORT_ROW, SMEM_RESERVED, THREADS_PER_SM, Policy, Tuning
from .tuning import count_policy, count_slots, grid, shift_policy, shift_smem

__all__ = ["LUT_KINDS", "count", "blocks", "foldable", "staged_counts", "shift_plan", "histogram_lut",
           "histogram_rows", "ci_name_expressions"]


#: 8/16-bit integers: counted by raw value, then folded into bins
LUT_KINDS = {np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16)}
_LAYOUT = {"lanes": 0, "copies": 1, "windows": 1, "global": 2}  #: hist1d.cu LAYOUT_*
_U32_SHARE = 1 << 31  #: most samples one block counts in one launch (32-bit counters)
MAX_GRID_Y = 65535  #: most rows of a batch in one launch (CUDA's grid dimension y)
FOLD_THREADS = 256  #: fold_lut: threads per block, one value each
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


#: (id(rule), dtype, device, tuning) -> (rule, _CountPlan of hist_shift or None)
_SHIFTS: dict = {}


def shift_plan(kdt, rule: BinRule, dev: int, tune: Tuning) -> _CountPlan | None:
    """hist_shift's plan for 16-bit integers of ``kdt`` whose bins are a shift of the value
    (:func:`rule.shift_rule`), or None (another rule, another forced layout, no fit). Its
    arguments: ``(flip, lo, shift)``, then ``(nslots, copies)``; one window, no value table."""
    key = (id(rule), kdt, dev, tune)
    hit = _SHIFTS.get(key)
    if hit is not None and hit[0] is rule:
        return hit[1]
    plan = None
    sh = shift_rule(kdt, rule) if tune.lut else None
    pol = shift_policy(rule.nbins, device_info(dev), tune) if sh else None
    if pol is not None:
        flip, lo, k = sh
        full = lo == 0 and (1 << 16) >> k == rule.nbins  # every key has a slot
        half = "true" if SHIFT_LAYOUTS[pol.layout] == 16 else "false"
        kern = kernel("hist1d.cu", f"hist_shift<{half}, {'true' if full else 'false'}, {pol.unroll}>")
        smem = shift_smem(rule.nbins, pol)
        fit = resident(kern, pol.block, smem, min(pol.blocks_per_sm, THREADS_PER_SM // pol.block))
        plan = _CountPlan(kern, pol, smem, pol.copies, 1, rule.nbins, (VECTOR_BYTES // 2) * pol.unroll, fit,
                          (np.uint32(flip), np.uint32(lo), np.uint32(k)),
                          (np.uint32(rule.nbins), np.uint32(pol.copies)))
    if len(_SHIFTS) >= PLANS_MAX:
        _SHIFTS.clear()
    _SHIFTS[key] = (rule, plan)
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


def count_shift(p: _CountPlan, x, out) -> None:
    """out[b] += the count of bin b of the 16-bit values ``x`` (read as unsigned) under
    :func:`shift_plan`'s ``p``, in one launch per ``blocks * 2**31`` values."""
    n = x.size
    if n == 0:
        return
    g = blocks(p, x.data.device_id, n)
    step = g * _U32_SHARE
    for s in range(0, n, step):
        xs = x if n <= step else x[s:s + step]
        launch(p.kern, g, p.pol.block, (xs, np.int64(xs.size), *p.args, *p.tail, out), p.smem)


def histogram_lut(a, kdt, rule: BinRule, tune: Tuning):
    """8/16-bit integers: count each raw value, then fold values into bins exactly.

    16-bit values whose bins are a shift of the value (:func:`shift_plan`) are counted
    into bins straight away (hist_shift: one launch, no value table). When the value
    counts fit one block's private counters (8-bit values under the table's policies),
    the fold is the kernel's flush: one zeroed result, one launch. Otherwise (other
    16-bit rules, forced "global" or "windows" layouts) a second kernel folds the value
    counts.
    """
    cp = cupy()
    dev = cp.cuda.Device().id
    sp = shift_plan(kdt, rule, dev, tune) if kdt.itemsize == 2 else None
    if sp is not None:
        def run_shift(x):
            out = cp.zeros(rule.nbins, cp.uint64)
            count_shift(sp, flat(x, kdt).view(cp.uint16), out)
            return out
        return staged([a], run_shift).view(cp.int64)
    nvals = 1 << (8 * kdt.itemsize)
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
            for acc, w in ((0, f), (0, d), (1, i64), (2, f), (2, d)):
                h.append(f"hist_sum<{t}, {c}, {b}, {acc}, {w}, false>")
                h.append(f"hist_sum<{t}, {c}, {b}, {acc}, {w}, true>")
    for t in (u8, u16, "unsigned int", i64):
        for lay in (0, 1, 2):
            h.append(f"hist_count<{t}, {t}, {BIN_RAW}, {lay}, 2>")
        h += [f"hist_sum<{t}, {t}, {BIN_RAW}, {acc}, {w}, {g}>" for acc, w in ((0, d), (0, f), (1, i64))
              for g in ("false", "true")]
    for t in (u8, u16):
        h.append(f"hist_count<{t}, {t}, {BIN_RAW_FULL}, 0, 2>")
    for half in ("true", "false"):
        for full in ("true", "false"):
            h += [f"hist_shift<{half}, {full}, {u}>" for u in (2, 4, 8)]
    h += [f"max_abs_bits<{f}>", f"max_abs_bits<{d}>", "fold_lut", "fixed_finish"]
    h += [f"sample_scale<{t}, 1024>" for t in (f, d)]  # sums.SAMPLE_THREADS
    return {"hist1d.cu": h}
