"""1-D counts on the cpu: raw values of integers (8/16-bit data folded into bins through its
value table, :func:`hotbin.core.kernel_rule.value_table`; ``bincount``) and the bins of one axis, and
weighted sums by the bins of one axis, into private per-thread partials merged at the end.
"""
from __future__ import annotations

import time

import numpy as np

from ...core._jit import njit
from ...core.kernel_rule import fold_values, value_table
from .chunks import chunks, kernel_dtype
from .copies import SUBS, SUM_SUBS, add_rows, copies
from .parallel import Kernel, each, nparts, share
from .prefetch import PREFETCH_BYTES, ahead
from .rule import codes, in_bin, rule_args
from .scatter import BLOCK

__all__ = ["LUT_KINDS", "lut_counts", "counts_1d", "sums_1d", "bincount", "part_count1", "part_sum1",
           "PAIRS_FROM", "PAD", "VALUE_BYTES"]

#: values of 8/16-bit integers are counted raw, then folded through a lookup table
LUT_KINDS = {np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16)}

# --- tuning (benchmarks/probes/cpu_tally.py) ------------------------------------
#: values binned a block at a time by the 1-D counts: at most BLOCK, at most VALUE_BYTES of
#: them, so that a block of values, its int32 codes and 8 copies of 256 bins share a 32 KiB
#: L1d (float64 ran faster in blocks of 1024 than 2048, float32 best at 2048; probes-cpu.md)
VALUE_BYTES = 8 << 10


@njit(inline="always")
def _tally(h, c, n, nsub, width, src, at):
    """h[c[k] + (k % nsub) * width] += 1 for k < n, RUN values at a time: a run of RUN values
    all alike is added at once (:func:`_one_bin`; else a run of one value is a chain of adds
    to one counter, or to nsub: benchmarks/probes/cpu_u8_pairs.py). Other runs go to
    ``nsub`` (a power of 2 up to SUBS) interleaved copies of ``width`` counters, SUBS points
    a step (:func:`_copies`), or with one copy a point at a time (a run of some values then
    chains less than in the unrolled step; results/probes-cpu.md, count1d.py). Returns the
    value all of the last run are, else -1."""
    v = np.int64(-1)
    for b in range(0, n, RUN):
        d = c[b:min(n, b + RUN)]  # indices from 0: no negative-index checks
        v = _one_bin(d, d.size)
        if v >= 0:
            h[np.uint64(v)] += d.size
        elif nsub == 1:
            for k in range(d.size):
                h[np.uint64(d[k])] += 1
        else:
            _copies(h, d, d.size, nsub, width, src, at + b)
    return v


@njit(inline="always")
def _copies(h, c, n, nsub, width, src, at):
    """h[c[k] + (k % nsub) * width] += 1 for k < n, SUBS points a step (unrolled: independent
    adds); each cache line of ``src[at:at + n]`` (the values ahead) is prefetched on the way
    (not with one copy: constant bytes by pairs ran slower with it; probes-cpu.md, count1d.py)."""
    mask = nsub - 1
    whole = n - n % SUBS
    for k in range(0, whole, SUBS):
        ahead(src, at, k)
        for j in range(SUBS):
            h[np.uint64(c[k + j]) + np.uint64((j & mask) * width)] += 1
    for k in range(whole, n):
        h[np.uint64(c[k]) + np.uint64((k & mask) * width)] += 1


#: values :func:`_tally` looks at a time for a run of one value: long enough that uniform
#: data lose nothing to the look, short enough that constant data gain
#: (benchmarks/probes/cpu_runs.py)
RUN = 4096


@njit(inline="always")
def _alike(c, m, v):
    """Whether c[:m] are all v: counted with no branch from index 0, a vector loop (stopping
    at the first other value, or indices from an offset with numba's negative-index checks,
    ran slower; benchmarks/results/probes-cpu.md, count1d.py)."""
    same = 0
    for k in range(m):
        same += c[k] == v
    return same == m


@njit(inline="always")
def _one_bin(cx, m):
    """The value that all of cx[:m] are, else -1; three looked at first."""
    c = cx[0]
    if (cx[m - 1] != c) | (cx[m >> 1] != c) or not _alike(cx, m, c):
        return -1
    return np.int64(c)


@njit(nogil=True, cache=True)
def part_count1(x, r, start, stop, h, nsub, cx):
    """1-D counts of ``x[start:stop]`` under the rule tuple ``r`` into ``nsub`` interleaved
    copies of the bins (h: nsub * (nb + 1) counters, bin nb of each for the points in none;
    :func:`_tally`), VALUE_BYTES of values at a time. ``cx``: BLOCK int32 codes. After a
    block all in one bin, the next is first tested against that bin's edges (two compares
    a value, :func:`.rule.in_bin`: exact, the edges are the rule) and counted at once
    when it lies in it too, as the 2-D kernels do: a constant or sorted run is then read,
    not binned and added (benchmarks/results/probes-cpu.md, count1d.py)."""
    block = min(BLOCK, VALUE_BYTES // x.itemsize)
    at = PREFETCH_BYTES // x.itemsize
    nb = r[0].size - 1
    one = np.int64(-1)
    for b in range(start, stop, block):
        m = min(stop, b + block) - b
        if one >= 0 and in_bin(x, b, m, r, one):
            h[one] += m
            continue
        codes(x[b:b + m], r, cx)
        v = _tally(h, cx, m, nsub, nb + 1, x, b + at)  # m <= RUN: v is the block's one bin
        one = v if v != nb else np.int64(-1)


@njit(inline="always")
def _tally_sums(h, c, ws, n, nsub, width):
    """h[c[k] + (k % nsub) * width] += ws[k] for k < n: ``nsub`` (a power of 2 up to SUM_SUBS)
    interleaved copies of ``width`` sums, SUM_SUBS points a step (independent adds); each copy
    adds its points in their order (:mod:`.small` reproduces the sums bit for bit)."""
    mask = nsub - 1
    whole = n - n % SUM_SUBS
    for k in range(0, whole, SUM_SUBS):
        for j in range(SUM_SUBS):
            h[np.uint64(c[k + j]) + np.uint64((j & mask) * width)] += ws[k + j]
    for k in range(whole, n):
        h[np.uint64(c[k]) + np.uint64((k & mask) * width)] += ws[k]


@njit(nogil=True, cache=True)
def part_sum1(x, w, r, start, stop, h, nsub, cx):
    """1-D weighted sums of ``w[start:stop]`` by the bins of ``x`` under the rule tuple ``r``
    into ``nsub`` interleaved copies of the sums (:func:`_tally_sums`; bin nb of each: the
    points in none), VALUE_BYTES of the wider of values and weights at a time."""
    block = min(BLOCK, VALUE_BYTES // max(x.itemsize, w.itemsize))
    for b in range(start, stop, block):
        m = min(stop, b + block) - b
        codes(x[b:b + m], r, cx)
        _tally_sums(h, cx, w[b:b + m], m, nsub, r[0].size)


@njit(nogil=True, cache=True)
def count_values(a, lo, hi, h, nsub, width):
    """h[v + (j % nsub) * width] += 1 for each value v = a[j], lo <= j < hi, of a non-negative
    integer array (``nsub`` interleaved copies: :func:`_tally`)."""
    src = a[lo:hi]  # indices from 0: no negative-index checks (faster; probes-cpu.md)
    _tally(h, src, src.size, nsub, width, a, lo + PREFETCH_BYTES // a.itemsize)


@Kernel
def _sum_values(a, w, out, t, nt):
    """out[p, v] += w[j] for each value v = a[j] of a non-negative integer array, in order."""
    parts = out.shape[0]
    n = a.size
    step = (n + parts - 1) // parts
    for p in range(t, parts, nt):
        h = out[p]
        lo, hi = p * step, min(n, (p + 1) * step)
        src, ws = a[lo:hi], w[lo:hi]
        for j in range(src.size):
            h[np.uint64(src[j])] += ws[j]


#: bytes left unused at the end of each thread's row of small 1-D partials, so that two
#: threads never add into one cache line (nor a pair the L2 prefetcher fetches together:
#: without it the last bins of one row and the first of the next shared a line;
#: results/probes-cpu.md, count1d.py)
PAD = 128
#: the most values counted into uint32 partials between two folds into int64 (no counter
#: can pass 2**32 - 1)
FOLD_AT = (1 << 32) - 1
#: 8-bit inputs from this many values are counted by pairs of bytes or a byte at a time,
#: whichever each thread times faster (:func:`_byte_counts`); a byte at a time below
PAIRS_FROM = 1 << 20
#: the ways :func:`_byte_counts` counts 8-bit values, timed in this order
PAIRS, BYTES = 0, 1
WAYS = (PAIRS, BYTES)


def lut_counts(a, kd, rule):
    """8/16-bit integers: count each raw value, then fold values into bins exactly. uint32
    partials, folded into int64 (:func:`_raw_counts`); 8-bit values from PAIRS_FROM on by
    :func:`_byte_counts`."""
    u = np.dtype(f"u{kd.itemsize}")
    if kd.itemsize == 1 and a.size >= PAIRS_FROM:
        return fold_values(_byte_counts(a, kd, u), value_table(rule, kd), rule.nbins)
    nvals = 1 << (8 * kd.itemsize)
    nsub = copies(nvals)
    return fold_values(_raw_counts(a, kd, u, nvals, nsub), value_table(rule, kd), rule.nbins)


class _Folds:
    """uint32 partials ``parts`` and their int64 total: :meth:`room` before counting n more
    values into them folds them (``fold()``: their int64 sums) into the total and zeroes
    them when the values since the last fold could pass FOLD_AT; :meth:`total` folds the rest.
    Once a call, not after each chunk: each fold is time the call spends outside the kernel
    (benchmarks/probes/cpu_call_parts.py)."""

    def __init__(self, fold, *parts):
        self.fold, self.parts = fold, parts
        self.done, self.since = 0, 0

    def room(self, n):
        if self.since + n > FOLD_AT:
            self.done = self.done + self.fold()
            for p in self.parts:
                p[:] = 0
            self.since = 0
        self.since += n

    def total(self):
        return self.done + self.fold()


def _raw_counts(a, kd, u, nvals, nsub):
    """int64 counts of the ``nvals`` raw values of ``a`` (:func:`count_values`, ``nsub``
    interleaved copies, each PAD bytes longer, folded as :class:`_Folds` folds)."""
    part = np.zeros((nparts(a.size, nvals * 4 * nsub), nsub, nvals + PAD // 4), np.uint32)
    folds = _Folds(lambda: part.sum(axis=(0, 1), dtype=np.int64)[:nvals], part)
    _, nsub, width = part.shape
    for (c,) in chunks([a], [kd]):
        v = c.view(u)
        folds.room(v.size)
        share(v.size, part.shape[0],
              lambda lo, hi, t: count_values(v, lo, hi, part[t].reshape(-1), nsub, width))
    return folds.total()


def _byte_counts(a, kd, u):
    """int64 counts of the 256 raw byte values of the 8-bit ``a``, each piece of it counted
    the faster of two ways (:data:`WAYS`), as the thread counting it measured them:

    * PAIRS: the bytes read as uint16 words, one add per word into 65536 counters (256 KB:
      in L2 on current server cores, 512 KB-2 MB each), each word's count then added to both
      of its bytes: half the adds of a byte at a time, each into L2;
    * BYTES: an add a byte into interleaved copies of 256 counters (8 KB, in L1).

    Which is faster depends on the core (how dear a random add into L2 is) and the data
    (benchmarks/probes/cpu_u8_pairs.py). So each thread counts its first pieces one way each,
    timed, and each next piece the way whose time a byte over the pieces it counted that way
    is the least: the way in use is timed on, and gives way when data that slow it make it
    the slower."""
    single = np.zeros(256, np.int64)
    parts = nparts(a.size, 65536 * 4)
    nsub = copies(256)
    pairs = np.zeros((parts, 65536 + PAD // 4), np.uint32)
    each_byte = np.zeros((parts, nsub, 256 + PAD // 4), np.uint32)
    for p in (pairs, each_byte):  # their pages faulted in now, not in the first piece timed
        p.reshape(parts, -1)[:, ::1024] = 0
    spent = np.zeros((parts, 2))  # [thread, way]: seconds, bytes counted
    done = np.zeros((parts, 2))

    def fold():
        grid = pairs.sum(axis=0, dtype=np.int64)[:65536].reshape(256, 256)  # [high, low] byte of a word
        return grid.sum(axis=0) + grid.sum(axis=1) + each_byte.sum(axis=(0, 1), dtype=np.int64)[:256]

    def piece(b, w, lo, hi, t):  # words [lo, hi) of w, bytes [2 lo, 2 hi) of b
        untried = [way for way in WAYS if done[t, way] == 0]
        way = untried[0] if untried else min(WAYS, key=lambda k: spent[t, k] / done[t, k])
        start = time.perf_counter()
        if way == PAIRS:
            count_values(w, lo, hi, pairs[t], 1, 0)
        else:
            count_values(b, 2 * lo, 2 * hi, each_byte[t].reshape(-1), nsub, each_byte.shape[2])
        spent[t, way] += time.perf_counter() - start
        done[t, way] += 2 * (hi - lo)

    folds = _Folds(fold, pairs, each_byte)
    for (c,) in chunks([a], [kd]):
        c = c.view(u)
        head = c.ctypes.data & 1  # a first byte off a 2-byte boundary and a last odd one: alone
        tail = (c.size - head) & 1
        for v in (c[:head], c[c.size - tail:]):
            single[:] += np.bincount(v, minlength=256)
        b = c[head:c.size - tail]
        w = b.view(np.uint16)
        folds.room(b.size)
        share(w.size, parts, lambda lo, hi, t: piece(b, w, lo, hi, t))
    return folds.total() + single


def counts_1d(a, kd, rule):
    """1-D counts: int32 codes a block at a time into interleaved uint32 copies of the bins
    (:func:`part_count1`), folded into int64 as :class:`_Folds` folds."""
    width = rule.nbins + 1
    nsub = copies(width)
    parts = nparts(a.size, width * 4 * nsub)
    out = np.zeros((parts, nsub * width + PAD // 4), np.uint32)
    folds = _Folds(lambda: out.sum(axis=0, dtype=np.int64)[:nsub * width].reshape(nsub, width).sum(axis=0),
                   out)
    r = rule_args(rule, kd)
    for (c,) in chunks([a], [kd]):
        n = c.size
        folds.room(n)
        share(n, parts,
              lambda lo, hi, t: part_count1(c, r, lo, hi, out[t], nsub, np.empty(BLOCK, np.int32)))
    return folds.total()[:rule.nbins]


def sums_1d(a, kd, rule, weights, dt: np.dtype, wdt: np.dtype):
    """1-D weighted sums: the weights read as ``wdt`` (float64 or int64) summed into interleaved
    ``dt`` copies of the bins (:func:`part_sum1`), one row of copies per thread, the rows added
    in order at the end (:func:`.copies.add_rows`). Float sums are reassociated so (as the
    threads' rows always were); int64 sums wrap as they would in any order (the caller checks
    them: :func:`hotbin.exec.local.exact_int_sums`)."""
    width = rule.nbins + 1
    nsub = copies(width, dt.itemsize, SUM_SUBS)
    parts = nparts(a.size, width * dt.itemsize * nsub)
    out = np.zeros((parts, nsub * width + PAD // dt.itemsize), dt)
    r = rule_args(rule, kd)
    for c, ws in chunks([a, weights], [kd, wdt]):
        n = c.size
        step = (n + parts - 1) // parts
        each(n, parts, lambda p: part_sum1(c, ws, r, p * step, min(n, (p + 1) * step), out[p], nsub,
                                           np.empty(BLOCK, np.int32)))
    return add_rows(out[:, :nsub * width].reshape(parts * nsub, width))[:rule.nbins]


def bincount(x, length, weights=None):
    """int64 counts (float64 sums with ``weights``) of the non-negative integers ``x < length``."""
    x = np.asarray(x)
    if weights is not None:  # sums: one copy, added in point order
        out = np.zeros((nparts(x.size, length * 8), length), np.float64)
        for c in chunks([x, weights], [kernel_dtype(x.dtype), np.dtype(np.float64)]):
            _sum_values(c[0].size, c[0], c[1], out)
        return out.sum(axis=0)
    nsub = copies(length, 8)
    out = np.zeros((nparts(x.size, length * 8 * nsub), nsub, length), np.int64)
    for (c,) in chunks([x], [kernel_dtype(x.dtype)]):
        share(c.size, out.shape[0],
              lambda lo, hi, t: count_values(c, lo, hi, out[t].reshape(-1), nsub, length))
    return out.sum(axis=(0, 1))
