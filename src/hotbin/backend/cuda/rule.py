"""The bin rule as the cuda kernels take it: binner, guess and edges, by kernel family.

The tolerance of the multiply guess is :func:`hotbin.core.kernel_rule.guess`'s, for
the 1-D kernels (hist1d.cu through hist_common.cuh's ``RuleBin``) and the 2-D ones
(spatial.cu's ``Axis``) alike. The host parts here need no CuPy; :func:`rule_args`
and :func:`value_table` upload their tables once per device.
"""
from __future__ import annotations

import functools

import numpy as np

from ...core import kernel_rule
from ...core.binning import BinRule
from .runtime import CTYPE, device_table

__all__ = ["BIN_RULE", "BIN_RAW", "BIN_RAW_FULL", "BIN_SEARCH", "BIN_NEAREST", "BIN_NEAREST_ALL",
           "binner", "count_binner", "hist1d_guess", "kernel_edges", "edge_table", "axis_mode",
           "MODE_TRUSTED", "MODE_NEAREST",
           "rule_args", "raw_args", "edge_bytes", "value_table", "shift_rule", "axis_args"]

#: how hist1d.cu makes a value a slot (its enum)
BIN_RULE, BIN_RAW, BIN_RAW_FULL, BIN_SEARCH, BIN_NEAREST, BIN_NEAREST_ALL = 0, 1, 2, 3, 4, 5
#: RuleBin's tau when the guess may be half a bin off or more: every guess is walked to its
#: bin (out of line)
DISABLED = 2.0
#: RuleBin's tau that no guess passes, for guesses less than half a bin off: every value is
#: compared with the edge nearest its guess (hist_common.cuh)
NEAR = 0.5
#: the float32 guess's rounding (hist_common.cuh ``round_guess``) holds below 2**22 bins:
#: float32 rules with more are searched
F32_GUESS_BINS = 1 << 22
#: the trusted shortcut stops at 2**21 bins, a factor 2 below that floor's limit
SHORTCUT_BINS = 1 << 21


def binner(rule: BinRule) -> int:
    """Guess-and-correct (BIN_RULE) or bisection (BIN_SEARCH).

    The guess is computed in float32 for float32 edges: its floor trick
    (``round_guess``) holds below 2**22 bins only, and a float32 scale must
    not overflow; beyond, a guess could be millions of bins off and the
    correction O(bins), so those rules are searched (O(log bins)).
    """
    f32 = rule.kernel_cmp.dtype == np.float32
    with np.errstate(over="ignore"):
        ok = not f32 or (rule.nbins < F32_GUESS_BINS and np.isfinite(np.float32(rule.scale)))
    return BIN_RULE if rule.uniform and rule.nbins >= 1 and ok else BIN_SEARCH


def count_binner(rule: BinRule, staged: bool, shortcut: bool = True) -> int:
    """hist_count's binner: :func:`binner`, narrowed for rules whose guess is less than half
    a bin off (``tau <= NEAR``) and whose edges are staged in shared memory to the
    nearest-edge rule alone (BIN_NEAREST, or BIN_NEAREST_ALL when every value is
    compared): the counting loop then holds no walk and tests nothing per value but the
    edge, and hist1d.cu holds it to 32 registers without spilling (the walk takes 52-56):
    4 resident blocks of 512 per SM instead of 2."""
    b = binner(rule)
    if b != BIN_RULE or not staged:
        return b
    tau = hist1d_guess(rule, shortcut)[2]
    if tau < NEAR:
        return BIN_NEAREST
    return BIN_NEAREST_ALL if tau == NEAR else BIN_RULE


def hist1d_guess(rule: BinRule, shortcut: bool = True) -> tuple[float, float, float]:
    """``(glo, gscale, tau)`` of hist_common.cuh's ``RuleBin`` for ``rule``.

    The kernel guesses ``x = (v - glo) * gscale`` in ``G``, the guess dtype of its
    comparison dtype (float32 for float32 :attr:`BinRule.kernel_cmp`, so also for
    float16 rules; float64 otherwise), with one rounding per operation (``__fsub_rn``,
    ``__fmul_rn``: no FMA) on the value itself (``G`` is the comparison dtype, so
    ``(G)v`` is exact). That is :func:`hotbin.core.kernel_rule.guess` computed in ``G``,
    whose ``lo`` and ``scale`` are passed here so the kernel rounds exactly what the
    tolerance bounds (``lo`` is exact in ``G``; ``scale`` is the float64 quotient
    rounded once to ``G``). Its ``eps`` bounds, in bins, the edges' deviation plus those
    three roundings of ``x <= nbins + |ends| / step``; values past the last edge fail
    the kernel's range test first.

    In mode 2 (``eps`` below :data:`kernel_rule.TRUST_BELOW`, so below half a bin)
    the edge nearest a value is ``e[rint(x)]``: the kernel compares the value with
    it (bin ``rint(x) - 1`` below it, else ``rint(x)``), one load and one compare
    for every value, and trusts ``floor(x)`` outright when ``x`` is farther than
    ``tau`` from an integer; ``tau`` is ``eps``, or :data:`NEAR` (every value
    compared) when ``shortcut`` is off or beyond :data:`SHORTCUT_BINS`. Otherwise
    (mode 1, and integer rules, mode 0, which keep their float64 guess) ``tau`` is
    :data:`DISABLED`: the guess is walked to the bin.
    """
    gdt = np.float32 if rule.kernel_cmp.dtype == np.float32 else np.float64
    g = kernel_rule.guess(rule, gdt)
    if g.mode == 0:
        return float(rule.lo), float(rule.scale), DISABLED
    if g.mode == 1:
        return float(g.lo), float(g.scale), DISABLED
    ok = shortcut and rule.nbins < SHORTCUT_BINS
    return float(g.lo), float(g.scale), float(g.eps) if ok else NEAR


def kernel_edges(rule: BinRule) -> np.ndarray:
    """hist_common.cuh's edge table of ``rule``: ``nbins + 2`` entries of the comparison
    dtype, ``e[0] .. e[nbins - 1]``, then the least value above the closed end, then the
    closed end itself.

    ``RuleBin::nearest`` compares a value whose guess is nearest to edge ``j`` with entry
    ``j``: at ``j = nbins`` that entry, the closed end's successor, keeps the closed end in
    the last bin and sends the values above it out, with no range test of its own.
    Bisection and the walk read ``e[0] .. e[nbins - 1]`` only. Integer rules never take
    the nearest-edge rule (their guess is walked, :func:`hist1d_guess`): their successor
    entry is the closed end itself.
    """
    return edge_table(rule.kernel_cmp)


def edge_table(k: np.ndarray) -> np.ndarray:
    """:func:`kernel_edges`' table of the comparison edges ``k`` (``nbins + 1``): also the
    2-D kernels', whose axes' edges may be rounded for float32 values (:func:`axis_args`)."""
    last = k[-1:]
    above = np.nextafter(last, last.dtype.type(np.inf)) if k.dtype.kind == "f" else last
    return np.concatenate([k[:-1], above, last])


#: spatial.cu Axis modes: a guess trusted off the edges (:func:`axis_args`' mode 2); the
#: nearest-edge rule
MODE_TRUSTED, MODE_NEAREST = 2, 3


def axis_mode(mode: int, nbins: int) -> int:
    """spatial.cu Axis mode for :func:`axis_args`' guess ``mode``: a trusted guess (less than
    half a bin off) takes the nearest-edge rule, up to SHORTCUT_BINS bins (the float32 guess's
    rounding trick holds below 2**22)."""
    return MODE_NEAREST if mode == MODE_TRUSTED and nbins < SHORTCUT_BINS else mode


def edge_bytes(rule: BinRule | None, stage_max: int) -> int:
    """Shared-memory bytes of the edge table staged for ``rule`` (0: read through L1)."""
    if rule is None:
        return 0
    b = (rule.nbins + 2) * rule.kernel_cmp.dtype.itemsize
    return b if b <= stage_max else 0


def rule_args(rule: BinRule, dev_id: int, stage_edges: bool, shortcut: bool = True) -> tuple:
    """hist1d.cu's rule arguments: ``(edge table, nb, glo, gscale, tau, stage_edges)``
    (:func:`kernel_edges`)."""
    e = device_table(dev_id, np.ascontiguousarray(kernel_edges(rule)).tobytes(), rule.kernel_cmp.dtype.str)
    glo, gscale, tau = hist1d_guess(rule, shortcut)
    return (e, np.uint32(rule.nbins), np.float64(glo), np.float64(gscale), np.float64(tau),
            np.int32(stage_edges))


def raw_args(dtype, dev_id: int) -> tuple:
    """hist1d.cu's rule arguments when values are slots (no rule): an edge table of two
    entries, the shortest the kernel reads (``e[0]`` and ``e[nb + 1]``, nb = 0)."""
    dummy = device_table(dev_id, bytes(2 * np.dtype(dtype).itemsize), np.dtype(dtype).str)
    return (dummy, np.uint32(0), np.float64(0), np.float64(0), np.float64(DISABLED), np.int32(0))


def value_table(dev_id: int, kdt, rule: BinRule):
    """Device table value -> bin (-1: none) of every 8/16-bit value (:func:`kernel_rule.value_table`),
    uploaded once per device and rule (a call hashes the edges once)."""
    return device_value_table(dev_id, np.dtype(kdt).str, rule.cmp.tobytes(), rule.cmp.dtype.str)


@functools.lru_cache(maxsize=64)
def device_value_table(dev_id: int, kdt: str, cmp: bytes, cmp_dtype: str):
    e = np.frombuffer(cmp, cmp_dtype)
    idx = kernel_rule.value_table(BinRule(edges=e, cmp=e, uniform=False), kdt)
    return device_table(dev_id, idx.tobytes(), idx.dtype.str)


def shift_rule(kdt, rule: BinRule) -> tuple[int, int, int] | None:
    """``(flip, lo, shift)`` when every 16-bit integer of ``kdt`` lands in bin
    ``((u ^ flip) - lo) >> shift`` of ``rule`` (``u``: its unsigned bits; -1: none when that is
    negative or not below ``nbins``), else None: hist1d.cu's ``hist_shift`` then needs no edge and
    no value table. ``flip`` (0x8000 for int16) makes the key grow with the value. Decided
    against the exact value table of :func:`kernel_rule.value_table`, every value compared
    (integer edges a power of two apart: 4096 bins over (0, 65536), (-32768, 32768) for int16)."""
    dt = np.dtype(kdt)
    if dt.itemsize != 2 or dt.kind not in "iu" or rule.nbins < 1:
        return None
    return _shift_rule(dt.str, rule.cmp.tobytes(), rule.cmp.dtype.str, rule.nbins)


@functools.lru_cache(maxsize=64)
def _shift_rule(kdt: str, cmp: bytes, cmp_dtype: str, nbins: int):
    dt = np.dtype(kdt)
    e = np.frombuffer(cmp, cmp_dtype)
    table = kernel_rule.value_table(BinRule(edges=e, cmp=e, uniform=False), dt)
    flip = 0x8000 if dt.kind == "i" else 0
    keys = np.arange(1 << 16, dtype=np.int64)
    by_key = table[keys ^ flip]  # the table is indexed by the unsigned bits
    inside = np.flatnonzero(by_key >= 0)
    if inside.size == 0 or by_key[inside[0]] != 0:
        return None
    lo = int(inside[0])
    width = int(np.count_nonzero(by_key == 0))
    if width & (width - 1):
        return None
    shift = width.bit_length() - 1
    s = (keys - lo) >> shift
    expect = np.where((s >= 0) & (s < nbins), s, -1)
    return (flip, lo, shift) if np.array_equal(by_key, expect) else None


def axis_args(rule: BinRule, vdt) -> tuple:
    """``(kdt, edges, guess)`` of one axis of spatial.cu for values of dtype ``vdt``.

    float32 values against float edges compare against :func:`kernel_rule.edges_f32`
    (float32 edges giving the float64 answers) and guess in float32; float16 values are
    widened to float64 (CuPy's conversion kernels may flush float32 subnormals, never
    float64 ones); other values are converted to the comparison dtype and guess in float64.
    """
    cmp = rule.kernel_cmp
    vdt = np.dtype(vdt)
    if vdt == np.float32 and cmp.dtype.kind == "f":
        kdt, edges = np.dtype(np.float32), kernel_rule.edges_f32(cmp.astype(np.float64))
    elif vdt == np.float16:
        kdt, edges = np.dtype(np.float64), cmp.astype(np.float64)
    else:
        kdt, edges = cmp.dtype, cmp
    gdt = np.float32 if kdt == np.float32 else np.float64
    return kdt, edges.astype(kdt, copy=False), kernel_rule.guess(rule, gdt)


def ctype(dt) -> str:
    """The C++ type name of a kernel dtype."""
    return CTYPE[np.dtype(dt)]
