"""The common count in one step: a whole device array under a rule, one zeroed result, one launch.

``hotbin.histogram(x, bins, range)`` on a CuPy array is the call whose host time the device
waits through (the kernel is short even at 1 GiB, and the host's work before the launch
delays it; benchmarks/probes/gpu_host_call.py). :func:`hist1d.count` and
:func:`hist1d.histogram_lut` derive the same things from the rule, the dtype, the device and
the tuning on every call, under the staging and device layers (:mod:`.stage`); here they are
derived once into a :class:`_Quick` (the kernel, its arguments, the grid's bounds, the value
table of 8-bit values) and a call is a lookup, a zeroed result and the launch. 16-bit
integers whose bins are a shift of the value take hist_shift the same way. The next call's result is zeroed right after each launch, while
the kernel runs (:data:`SPARE`), so the host's work before a launch is the lookup and the
launch itself. Anything else (weights, host data, another layout, dtypes the kernels read
converted, 16-bit values whose fold is a second kernel, an array on a device that is not the
current one) answers None and takes the general path, which counts the same.
"""
from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from ...core.binning import BinRule
from .hist1d import _NO_FOLD, _U32_SHARE, LUT_KINDS, _count_plan, _lut_plan, _slots, blocks, shift_plan
from .runtime import cupy, kernel_dtype
from .tuning import Tuning

__all__ = ["counts"]


class _Quick(NamedTuple):
    """What a count of a whole device array launches, but the array and its length."""

    plan: object  #: hist1d's _CountPlan
    head: tuple  #: the arguments after the values and their length: rule, slot base, layout
    tail: tuple  #: the arguments after the result (hist_count: the row stride first, then
    #: the result's length as a uint64 and the value table; hist_shift: none)
    slots: int  #: the zeroed result's length (the windows' slots, or the bins when folded)
    nbins: int
    strided: bool = True  #: hist_count (takes the row stride after the result), not hist_shift


#: pass the plan's constant scalars to CuPy already converted (:func:`_packed`)
PACK_ARGS = True

#: (id(rule), dtype, device, tuning) -> (rule, _Quick or None: not this path, spares); the rule is
#: held so that its id is not reused while its entry lives (as hist1d's plans). Cleared when full.
#: ``spares`` holds at most one ``(thread, stream, zeroed result)``: the plan's next result, zeroed
#: on that stream after the last launch, taken only by a call of the same thread on the same stream
#: (CuPy's stream object, held: its handle is not reused), which orders the memset before its launch.
_QUICK: dict = {}
QUICK_MAX = 64

#: zero the next call's result after each launch (one call of a large array waits for
#: the host's work before its launch, ``cupy.zeros`` a part of it; results/gpu-h200.md, quick.py)
SPARE = True


def _packed(args: tuple) -> tuple:
    """``args`` with each NumPy scalar converted as CuPy's launch converts it
    (``cupy._core._scalar.CScalar``, which the launch passes through as it is): a launch
    of hist_count takes 13 scalars, 10 of them the plan's, converted here once instead of
    on every call. As they are where this CuPy has no such class."""
    if not PACK_ARGS:
        return args
    try:
        from cupy._core._scalar import CScalar
        return tuple(CScalar(a) if isinstance(a, np.generic) else a for a in args)
    except (ImportError, TypeError):
        return args


def _build(dtype, rule: BinRule, dev: int, tune: Tuning) -> _Quick | None:
    if kernel_dtype(dtype) != dtype or rule.nbins < 1:
        return None  # bool, float16, byte-swapped: converted first
    if dtype in LUT_KINDS and tune.lut:
        if dtype.itemsize != 1:  # bins a shift of the value: hist_shift; else a second kernel folds
            p = shift_plan(dtype, rule, dev, tune)
            return None if p is None else _Quick(p, _packed((*p.args, *p.tail)), (), rule.nbins, rule.nbins,
                                                 strided=False)
        _, u, table, folded = _lut_plan(dtype, rule, dev, tune)
        if not folded:
            return None
        p = _count_plan(u, None, 1 << 8, dev, tune, None)
        # the folded kernel adds each value's count to its bin: the result is the bins
        return _Quick(p, _packed((*p.args, *p.tail)), _packed((np.uint64(rule.nbins), table)), rule.nbins,
                      rule.nbins)
    p = _count_plan(dtype, rule, rule.nbins, dev, tune, None)
    slots = _slots(rule.nbins, dev, tune)
    return _Quick(p, _packed((*p.args, *p.tail)), _packed((np.uint64(slots), _NO_FOLD)), slots,
                  rule.nbins)


def counts(a, rule: BinRule, tune: Tuning):
    """int64 counts of the CuPy array ``a`` under ``rule`` in one launch, or None (the
    general path's call)."""
    cp = cupy()
    if type(a) is not cp.ndarray:
        return None
    dev = a.data.device_id
    if dev != cp.cuda.runtime.getDevice() or not a.flags.c_contiguous:
        return None
    key = (id(rule), a.dtype, dev, tune)
    hit = _QUICK.get(key)
    if hit is None or hit[0] is not rule:
        if len(_QUICK) >= QUICK_MAX:
            _QUICK.clear()
        hit = _QUICK[key] = (rule, _build(a.dtype, rule, dev, tune), [])
    q, spares = hit[1], hit[2]
    n = a.size
    if q is None or n == 0:
        return None
    p = q.plan
    g = blocks(p, dev, n)
    if n > g // p.wins * _U32_SHARE:
        return None  # more than one launch
    here = _here(cp) if SPARE else None
    spare = _take(spares) if here else None
    if spare and (spare[0] != here[0] or spare[1] is not here[1]):
        spare = None  # zeroed by another thread or on another stream: not ordered before this launch
    try:  # the kernels add 64-bit words: int64 as uint64
        out = spare[2] if spare else cp.zeros(q.slots, cp.int64)
    except cp.cuda.memory.OutOfMemoryError:
        return None  # the general path frees the pool and says what was free
    n64 = np.int64(n)
    # the values go as they are (a pointer: 8-bit values of any sign are read as unsigned
    # bytes, as hist1d views them); the opt-in for large shared memory was made when the
    # plan was (runtime.resident, on this device)
    stride = (n64,) if q.strided else ()
    p.kern((g, 1), (p.pol.block,), (a if a.ndim == 1 else a.reshape(-1), n64, *q.head, out, *stride, *q.tail),
           shared_mem=p.smem)
    if here:
        try:
            spares[:] = [(*here, cp.zeros(q.slots, cp.int64))]
        except cp.cuda.memory.OutOfMemoryError:
            pass  # the next call allocates its own
    return out if q.slots == q.nbins else out[:q.nbins]


def _take(spares):
    """The spare of a plan, removed, or None (none, or another thread took it first)."""
    try:
        return spares.pop()
    except IndexError:
        return None


def _here(cp):
    """``(thread id, current stream)`` where a zeroed spare result may be made and taken:
    None while the stream is being captured into a graph (a spare zeroed outside the graph
    would not be zeroed again when it is replayed, and one zeroed inside it only then)."""
    stream = cp.cuda.get_current_stream()
    try:
        if stream.is_capturing():
            return None
    except cp.cuda.runtime.CUDARuntimeError:  # the legacy stream while another one captures
        return None
    return threading.get_ident(), stream
