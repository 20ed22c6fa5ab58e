"""Weighted sums on the device (kernels/hist1d.cu hist_sum, max_abs_bits).

Weighted sums by bin or value take the accumulator of the reduction (:data:`SUM_ACC`):
float64 atomics (not bitwise reproducible), exact int64, or fixed-point words equal to the
cpu backend's after :func:`hotbin.core.fixedpoint.fold`; :func:`max_abs` is the one pass that
sizes the fixed point. The sums take the counts' binners (:mod:`.hist1d`). Every function
here takes device arrays; :mod:`.stage` feeds them slab by slab.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ...core import fixedpoint
from ...core.binning import BinRule
from ...core.reductions import float_of
from .hist1d import _U32_SHARE, PLANS_MAX, VECTOR_BYTES, _rule_kernel_args
from .rule import edge_bytes
from .runtime import CTYPE, cupy, device_info, flat, kernel, launch, resident
from .stage import add as add_parts
from .stage import staged
from .tuning import EDGE_STAGE_BYTES, THREADS_PER_SM, Policy, Tuning, grid, sum_policy

__all__ = ["SUM_ACC", "sums", "staged_sums", "fold_words", "fold_sum", "max_abs", "sample_max_abs",
           "seen_word", "seen_max"]


class _Acc:
    """One accumulator of hist_sum: its ACC template argument, words per slot in the result,
    shared-memory bytes per slot of a private copy, the result's dtype and the dtype kind the
    weights are read as."""

    def __init__(self, code: int, words: int, shared: int, out, weights: str):
        self.code, self.words, self.shared, self.out, self.weights = code, words, shared, np.dtype(out), weights


#: hist_sum's accumulator by :attr:`hotbin.core.reductions.Reduction.acc` (hist1d.cu ACC_*); fixed
#: point keeps 64-bit hi words and 32-bit low words in shared memory
SUM_ACC = {"f64": _Acc(0, 1, 8, np.float64, "f"), "i64": _Acc(1, 1, 8, np.uint64, "i"),
           "fixed": _Acc(2, 2, 12, np.uint64, "f")}
#: hist_sum's 16-byte steps in flight per thread (hist1d.cu for_each_pair<..., 2>)
SUM_UNROLL = 2
#: a null pointer argument (CuPy passes None as 0xffffffff, cupy/cupy#9046)
_NULL = np.uintp(0)


class _SumPlan(NamedTuple):
    """What :func:`sums` launches for one (dtypes, rule, slots, accumulator, device, tuning)."""

    kern: object
    block: int
    smem: int
    fit: int  #: blocks per SM the kernel holds
    pol: Policy
    args: tuple  #: the rule's arguments (:func:`rule.rule_args`) and the slot base (0)


#: (id(rule), value dtype, weight dtype, slots, acc, device, tuning) -> (rule, _SumPlan)
_SUMS: dict = {}


def _sum_plan(dtype, wdtype, rule: BinRule | None, nslots: int, acc: str, dev: int, tune: Tuning) -> _SumPlan:
    key = (None if rule is None else id(rule), dtype, wdtype, nslots, acc, dev, tune)
    hit = _SUMS.get(key)
    if hit is not None and hit[0] is rule:
        return hit[1]
    a = SUM_ACC[acc]
    info = device_info(dev)
    eb = edge_bytes(rule, EDGE_STAGE_BYTES)
    pol, shared = sum_policy((nslots + 1) * a.shared, eb, info, tune)
    copies = pol.copies if shared else 1
    private = ((nslots + 1) * a.shared * copies + 15) & ~15 if shared else 0  # edges 16-byte aligned after
    smem = private + eb
    # the sums' kernels take the counts' nearest-edge binners (staged edges, no walk)
    c, how, args = _rule_kernel_args(dtype, rule, dev, eb, tune, False, counts=True)
    kern = kernel("hist1d.cu", f"hist_sum<{CTYPE[dtype]}, {c}, {how}, {a.code}, {CTYPE[wdtype]}, "
                               f"{'false' if shared else 'true'}>")
    fit = resident(kern, pol.block, smem, min(pol.blocks_per_sm, THREADS_PER_SM // pol.block))
    plan = _SumPlan(kern, pol.block, smem, fit, replace(pol, copies=copies), (*args, np.uint64(0)))
    if len(_SUMS) >= PLANS_MAX:
        _SUMS.clear()
    _SUMS[key] = (rule, plan)
    return plan


def sums(x, w, rule: BinRule | None, nslots: int, acc: str, out, tune: Tuning, factor=(0.0, 0.0), seen=None,
         guess=None):
    """Weighted sums of w by bin (rule) or value (rule None) into out (hist_sum), with the
    accumulator ``SUM_ACC[acc]``. ``factor``: the fixed-point factor as two powers of two
    (:func:`hotbin.core.fixedpoint.factors`); ``seen`` (fixed point): one word that keeps the
    largest bits of ``|w|`` read (:func:`seen_max`); ``guess`` (fixed point, at most
    LO_CHUNK weights): :func:`sample_guess`'s words, whose factors replace ``factor``, the
    low words left unfolded (:func:`guessed_fixed`)."""
    n = x.size
    if n == 0 or nslots == 0:
        return
    dev = x.device.id
    p = _sum_plan(x.dtype, w.dtype, rule, nslots, acc, dev, tune)
    per_thread = VECTOR_BYTES // min(x.dtype.itemsize, w.dtype.itemsize) * SUM_UNROLL
    g = grid(device_info(dev), p.pol, p.smem, n, per_thread, p.fit)
    # fixed point: a launch takes at most LO_CHUNK weights, then the low words are folded
    step = fixedpoint.LO_CHUNK if acc == "fixed" else g * _U32_SHARE
    f1, f2 = np.float64(factor[0]), np.float64(factor[1])
    for s in range(0, n, step):
        xs, ws = (x, w) if n <= step else (x[s:s + step], w[s:s + step])
        launch(p.kern, g, p.block,
               (xs, ws, np.int64(xs.size), *p.args, np.uint32(nslots), f1, f2, np.uint32(p.pol.copies), out,
                _NULL if seen is None else seen, _NULL if guess is None else guess),
               p.smem)
        if acc == "fixed" and guess is None:
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


def _weights(w, kind):
    """Weights as a kernel dtype: float32/float64 (widened in the kernel) or int64."""
    if kind == "f":
        return flat(w, None if w.dtype in (np.float32, np.float16) else np.dtype(np.float64))
    return flat(w, np.dtype(np.int64))


def staged_sums(a, w, kdt, rule: BinRule | None, nslots: int, acc: str, tune: Tuning, factor=(0.0, 0.0),
                seen=None):
    """Sums of the weights ``w`` by bin or value (:func:`sums`), a slab at a time: float64
    (acc "f64"), int64 ("i64") or fixed-point words ``(2, nslots)`` ("fixed"; ``seen``: as
    :func:`sums`, over every slab)."""
    cp = cupy()
    spec = SUM_ACC[acc]

    def run(x, ws):
        out = cp.zeros(spec.words * nslots, spec.out)
        sums(flat(x, kdt), _weights(ws, spec.weights), rule, nslots, acc, out, tune, factor, seen)
        if spec.out != np.uint64:
            return out
        out = out.view(cp.int64)
        return out.reshape(spec.words, nslots) if spec.words > 1 else out
    return staged([a, w], run, fold_sum if acc == "fixed" else add_parts)


#: max_abs_bits: threads per block, resident blocks wanted per SM, 16-byte loads in flight
#: (hist1d.cu for_each_vec<W, 4>): the counting kernels' shape
MAX_ABS_POLICY = Policy("copies", block=512, blocks_per_sm=4, unroll=4)


def _float_weights(w) -> bool:
    """Whether ``w`` is a C-contiguous float32/float64 CuPy array on the current device."""
    cp = cupy()
    return type(w) is cp.ndarray and w.dtype in (np.float32, np.float64) and w.flags.c_contiguous \
        and w.data.device_id == cp.cuda.runtime.getDevice()


def seen_word(wdtype):
    """A zeroed device word for the largest bits of ``|w|`` of float weights of ``wdtype``."""
    return cupy().zeros(1, np.uint32 if np.dtype(wdtype).itemsize == 4 else np.uint64)


def seen_max(word) -> float:
    """The float whose bits :func:`seen_word` holds (a read from the device; converted on the
    host, where a float32 subnormal keeps its value)."""
    return float(word.get().view(np.float32 if word.dtype == np.uint32 else np.float64)[0])


def max_abs(w) -> float | None:
    """``max |w|`` of a C-contiguous float32/float64 CuPy array on the current device in one
    pass (hist1d.cu max_abs_bits: the largest bits of ``|w|``), NaN when a weight is NaN, as
    :func:`hotbin.core.fixedpoint.max_abs`; None for any other array (the caller's reductions)."""
    if not _float_weights(w):
        return None
    if w.size == 0:
        return 0.0
    pol = MAX_ABS_POLICY
    out = seen_word(w.dtype)
    kern = kernel("hist1d.cu", f"max_abs_bits<{CTYPE[w.dtype]}>")
    fit = resident(kern, pol.block, 0, pol.blocks_per_sm)
    g = grid(device_info(w.data.device_id), pol, 0, w.size, VECTOR_BYTES // w.dtype.itemsize * pol.unroll, fit)
    launch(kern, g, pol.block, (w.reshape(-1), np.int64(w.size), out))
    return seen_max(out)


#: weights a guess of the fixed-point scale samples (evenly spaced; hist1d.cu sample_scale, one
#: block of SAMPLE_THREADS), and the fewest weights worth a guess: below that, max_abs's exact
#: pass costs about what the sample does
SAMPLE, SAMPLE_FROM, SAMPLE_THREADS = 1 << 12, 1 << 22, 1024
#: the words of a guess (hist1d.cu GUESS_*): factors, scale, state, the sample's max |w|, the
#: sums' max |w| bits; states
GUESS_F1, GUESS_F2, GUESS_SCALE, GUESS_STATE, GUESS_MAX, GUESS_SEEN, GUESS_WORDS = range(7)
GUESS_NONE, GUESS_MADE, GUESS_NAN = range(3)


def sample_guess(w, extra: int = 0):
    """A device array of GUESS_WORDS + ``extra`` zeroed uint64 words whose first words
    hist1d.cu's sample_scale fills with a guess of the fixed-point scale of the large float
    CuPy weights ``w`` (queued: nothing is read back), or None for small or other arrays."""
    if not _float_weights(w) or w.size < SAMPLE_FROM:
        return None
    cp = cupy()
    buf = cp.zeros(GUESS_WORDS + extra, cp.uint64)
    n = int(w.size)
    launch(kernel("hist1d.cu", f"sample_scale<{CTYPE[w.dtype]}, {SAMPLE_THREADS}>"), 1, SAMPLE_THREADS,
           (w.reshape(-1), np.int64(n // SAMPLE), np.int32(SAMPLE), np.float64(math.log(n / SAMPLE)),
            np.int32(n.bit_length()), buf))
    return buf


def sample_max_abs(w) -> float | None:
    """``max |w|`` of SAMPLE evenly spaced weights of a large float CuPy array when it likely
    lies in the binade of the whole array's (a guess of the fixed-point scale that the sums
    confirm, :func:`hotbin.exec.local.weighted`), NaN or inf when the sample holds one (its scale
    fails as the exact pass's would), else None: small or other arrays, a sample of zeros
    (sparse weights), or a tail that the sample's two largest values extrapolate past that
    binade (hist1d.cu sample_scale). A wrong guess costs a second run of the sums; no guess
    costs one pass over the weights."""
    buf = sample_guess(w)
    if buf is None:
        return None
    state, m = (int(v) for v in buf[GUESS_STATE:GUESS_MAX + 1].get())
    return None if state == GUESS_NONE else float_of(m, 8)


def guessed_fixed(x, w, rule: BinRule, tune: Tuning):
    """float64 fixed-point sums of the large float CuPy weights ``w`` by the bins of ``rule`` over
    the contiguous kernel-dtype values ``x``, at the scale of the whole data's max |w|
    (:func:`hotbin.core.fixedpoint.scale_for`), or None where :func:`sample_guess` makes none.

    Nothing waits before the sums: the scale is guessed on the device (sample_scale), the sums
    take its factors and note the max |w| they read, fixed_finish turns the words into float64
    at the guessed scale, and one read of four words confirms the guess. A wrong guess, or none
    (the sums then only find max |w|), sums again at the scale of that max |w|: results are always
    those of the exact scale, bit for bit (:func:`hotbin.exec.local.weighted`'s, the cpu backend's).

    Raises
    ------
    ValueError
        For NaN or infinite weights (:func:`hotbin.core.fixedpoint.scale_for`).
    """
    n, nb = int(x.size), rule.nbins
    if n > fixedpoint.LO_CHUNK or n != w.size:
        return None
    buf = sample_guess(w, 2 * nb)
    if buf is None:
        return None
    cp = cupy()
    words = buf[GUESS_WORDS:]
    seen = buf[GUESS_SEEN:GUESS_SEEN + 1]
    sums(x, w.reshape(-1), rule, nb, "fixed", words, tune,
         seen=seen if w.dtype.itemsize == 8 else seen.view(cp.uint32)[:1], guess=buf)
    out = cp.empty(nb, np.float64)
    launch(kernel("hist1d.cu", "fixed_finish"), -(-nb // 256), 256, (words, np.uint32(nb), buf, out))
    s, state, _, bits = buf[GUESS_SCALE:GUESS_SEEN + 1].get().view(np.int64).tolist()
    scale = fixedpoint.scale_for(float_of(bits, w.dtype.itemsize), n)
    if state == GUESS_MADE and scale == s:
        return out
    words = staged_sums(x, w, x.dtype, rule, nb, "fixed", tune, fixedpoint.factors(scale))
    return fixedpoint.combine(words, scale)
