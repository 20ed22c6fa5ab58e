"""A bin rule as rule.wgsl takes it: order-preserving u32 keys and ``Axis`` records.

Data values and edges both become u32 keys whose unsigned order is the values' order
(one comparison serves u32, i32 and f32 data). The edges become key thresholds
exactly, whatever the comparison dtype: ``ceil``/``floor`` of the edges for integer
data; for float32 data compared in float64, the edges rounded up (the closed top edge
rounded down) to float32 (:func:`hotbin.core.kernel_rule.round_f32`), so no value is ever
rounded into another bin.
"""
from __future__ import annotations

import numpy as np

from ...core.binning import MAX_SLACK, BinRule
from ...core.kernel_rule import round_f32

#: key kinds, rule.wgsl's KIND_* constants
KEY_U32, KEY_I32, KEY_F32, KEY_LUT16 = 0, 1, 2, 3
KEY_KINDS = {np.dtype(np.uint32): KEY_U32, np.dtype(np.int32): KEY_I32, np.dtype(np.float32): KEY_F32}
#: u32 words of rule.wgsl's ``Axis`` record (lo, scale, off, nsearch, khi, uniform, 2 pad)
AXIS_WORDS = 8
_SIGN = np.uint32(0x80000000)


def rule_ok(rule: BinRule) -> bool:
    """Rules the kernels take: finite-or-infinite, non-NaN edges, fewer than 2**31 bins."""
    cmp = rule.kernel_cmp
    return rule.nbins < (1 << 31) and not (cmp.dtype.kind == "f" and np.isnan(cmp).any())


def widen(x: np.ndarray) -> np.ndarray:
    """8/16-bit integers become 32-bit (exact) for the keyed 2-D kernel."""
    if x.dtype.kind in "iu" and x.dtype.itemsize < 4:
        return x.astype(np.int32 if x.dtype.kind == "i" else np.uint32)
    return x


def keyed(x: np.ndarray):
    """(raw u32 words, key kind) of 32-bit data, None for data no kernel compares exactly."""
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    kind = KEY_KINDS.get(x.dtype)
    return None if kind is None else (x.view(np.uint32), kind)


def f32_keys(f: np.ndarray) -> np.ndarray:
    f = np.asarray(f, np.float32) + np.float32(0)  # -0.0 -> +0.0: they compare equal
    bits = f.view(np.uint32)
    return np.where(bits >> 31, ~bits, bits ^ _SIGN).astype(np.uint32)


def key_to_f32(k) -> np.float32:
    k = np.uint32(k)
    bits = k ^ _SIGN if k >> np.uint32(31) else ~k
    return np.array([bits], np.uint32).view(np.float32)[0]


def thresholds(cmp: np.ndarray, kind: int):
    """Key thresholds of a rule's edges for data of key ``kind``.

    Returns ``(th, khi, nsearch)``: ``th[i]`` the lowest key of bin ``i`` (the first
    ``nsearch`` of them reachable), ``khi`` the highest key of the last bin; or None
    when no value of that kind lands in any bin. Exact for every comparison dtype.
    """
    if kind == KEY_F32:
        if cmp.dtype == np.float32:
            low, top = cmp[:-1], cmp[-1:]
        else:
            e = cmp.astype(np.float64)
            low, top = round_f32(e[:-1], True), round_f32(e[-1:], False)
        th, khi = f32_keys(low), int(f32_keys(top)[0])
        return (th, khi, th.size) if th[0] <= khi else None
    lo, hi = (-(1 << 31), (1 << 31) - 1) if kind == KEY_I32 else (0, (1 << 32) - 1)
    if cmp.dtype.kind == "f":
        e = cmp.astype(np.float64)
        low = np.clip(np.ceil(e[:-1]), lo, hi + 1).astype(np.int64)
        top = int(np.clip(np.floor(e[-1]), lo - 1, hi))
    elif cmp.dtype.kind == "u":
        low = np.minimum(cmp[:-1], np.uint64(hi + 1)).astype(np.int64)
        top = min(int(cmp[-1]), hi)
    else:
        low = np.clip(cmp[:-1].astype(np.int64), lo, hi + 1)
        top = int(np.clip(cmp[-1], lo - 1, hi))
    if low[0] > hi or top < lo or low[0] > top:
        return None
    nsearch = int(np.count_nonzero(low <= hi))
    return (low[:nsearch] - lo).astype(np.uint32), top - lo, nsearch


def axis(rule: BinRule, kind: int):
    """(thresholds, Axis record fields) of a rule for data of key ``kind``, or None (empty)."""
    t = thresholds(rule.kernel_cmp, kind)
    if t is None:
        return None
    th, khi, nsearch = t
    lo = key_to_f32(th[0]) if kind == KEY_F32 else np.float32(0)  # ints guess from key offsets
    with np.errstate(over="ignore"):
        scale = np.float32(rule.scale)
    uniform = (rule.uniform and np.isfinite(scale) and np.isfinite(lo)
               and guess_slack(th, kind, lo, scale) <= MAX_SLACK)
    return th, (float(lo), float(scale), nsearch, khi, int(uniform))


def lut16_axis(table: np.ndarray):
    """The Axis of 16-bit data: ``table[v]`` is the bin of raw value ``v`` (NONE: no bin)."""
    return table.view(np.uint32), (0.0, 0.0, 1, 0, 0)


def guess_slack(th, kind, lo, scale) -> float:
    """How far (in bins) rule.wgsl's float32 guess can land from the bin: ``max |t(th[i]) - i|``
    over each bin's lowest key. ``t`` is monotone, so a value of bin ``i`` is guessed within
    this plus one bin of ``i``; the shader then steps bin by bin, so a rule whose guess is
    worse than :data:`hotbin.core.binning.MAX_SLACK` (an integer key offset times a large scale,
    float32 rounding) is searched instead: never O(bins) per value.
    """
    with np.errstate(all="ignore"):
        if kind == KEY_F32:
            bits = np.where(th >> np.uint32(31), th ^ _SIGN, ~th).astype(np.uint32)
            t = (bits.view(np.float32) - np.float32(lo)) * np.float32(scale)
        else:
            t = (th - th[0]).astype(np.float32) * np.float32(scale)
        return float(np.max(np.abs(t.astype(np.float64) - np.arange(th.size))))


def axis_bytes(fields, off) -> bytes:
    """rule.wgsl's ``Axis`` record of ``fields`` whose thresholds start at ``th[off]``."""
    lo, scale, nsearch, khi, uniform = fields
    rec = np.zeros(AXIS_WORDS, np.uint32)
    rec[:2] = np.array([lo, scale], np.float32).view(np.uint32)
    rec[2:6] = [off, nsearch, khi, uniform]
    return rec.tobytes()
