"""SEARCH, the bin finder of the cpu kernels for edges that no multiply guess finds (edges
given as an array, or a guess that can be more than one bin off): :func:`search` of a block of
values, by one of three ways, from the fastest that the rule allows:

* :func:`_split_keys`: float edges where no bucket of the values' sortable keys holds two
  edges (:attr:`CpuRule.key_splits`): the bucket's first bin and one compare;
* :func:`_search_keys`: float edges, a halving from the bucket (:attr:`CpuRule.key_buckets`);
* :func:`_search`: a halving of all the edges, every value of a block in step.
"""
from __future__ import annotations

import numpy as np

from numba import types
from numba.extending import intrinsic

from ...core._jit import njit

__all__ = ["search", "SEARCH_LANES"]


@njit(inline="always")
def search(v, e, tab, split, out):
    """out[k] = the bin of v[k] under the edges ``e`` (nb where it lands in none); ``tab``
    and ``split``: the rule's :attr:`CpuRule.key_buckets` and :attr:`CpuRule.key_splits`
    (either may be empty)."""
    if split.size:
        _split_keys(v, e, tab, split, out)
        return
    at = np.empty(min(v.size, SEARCH_LANES), np.float64)
    for b in range(0, v.size, SEARCH_LANES):
        if tab.size:
            _search_keys(v[b:b + SEARCH_LANES], e, tab, out[b:b + SEARCH_LANES], at)
        else:
            _search(v[b:b + SEARCH_LANES], e, out[b:b + SEARCH_LANES], at)


#: values :func:`_search` steps through the edges together (256, 1024 and 4096 measured alike
#: within the VM's noise, benchmarks/probes/cpu_codes.py)
SEARCH_LANES = 1024


@njit(inline="always")
def _search(v, e, out, at):
    """SEARCH: out[k] = the largest ``a < nb`` with ``e[a] <= v[k]`` (nb where v[k] is in no
    bin), by halving ``[0, nb)`` with every value of ``v`` in step: a loop over the values
    at each halving, whose loads do not wait on each other and whose compares pick without
    a branch. A search a value at a time waited on each load in turn and mispredicted about
    half its branches (benchmarks/probes/cpu_codes.py; results/probes-cpu.md, search.py).
    ``at`` (float64, as long as ``v``) holds each value's ``a``: in integers LLVM's x86 cmov
    converter turned the pick back into a branch on the H200 host's Xeon (emeraldrapids); a
    float pick is a masked move, which it leaves alone."""
    nb = e.size - 1
    n = v.size
    for k in range(n):
        at[k] = 0.0
    length = nb  # the answer lies in [at[k], at[k] + length)
    while length > 1:
        half = length >> 1
        h = np.float64(half)
        for k in range(n):
            a = at[k]
            at[k] = a + (h if e[np.uint64(a + h)] <= v[k] else 0.0)
        length -= half
    e0, en = e[0], e[nb]
    for k in range(n):
        x = v[k]
        out[k] = np.int32(at[k]) if (x >= e0) & (x <= en) else nb


@njit(inline="always")
def _search_keys(v, e, tab, out, at):
    """SEARCH of float edges from the bucket of each value's sortable key
    (:attr:`CpuRule.key_buckets`: ``tab``): its bin lies in ``[lo[b], lo[b] + length)``, so
    the halving starts there with ``length`` (at most 2 for log-spaced edges, where a search
    of all the edges halves 8 times at 256 bins). The keys and the starts a loop, then the
    halvings as :func:`_search`'s, a probe past the last bin never taken
    (benchmarks/probes/cpu_codes.py; results/probes-cpu.md, search.py)."""
    nb = e.size - 1
    n = v.size
    e0, en = e[0], e[nb]
    k0, shift, length = np.uint64(tab[0]), np.uint64(tab[1]), tab[2]
    for k in range(n):
        x = v[k]
        at[k] = np.float64(tab[np.uint64(3) + _bucket(x, (x >= e0) & (x <= en), e0, k0, shift)])
    last = nb - 1.0
    while length > 1:
        half = length >> 1
        h = np.float64(half)
        for k in range(n):
            a = at[k]
            p = a + h
            at[k] = a + (h if (p <= last) & (e[np.uint64(min(p, last))] <= v[k]) else 0.0)
        length -= half
    for k in range(n):
        x = v[k]
        out[k] = np.int32(at[k]) if (x >= e0) & (x <= en) else nb


@njit(inline="always")
def _split_keys(v, e, tab, split, out):
    """SEARCH from the bucket of each value's key where a bucket holds at most one edge
    (:attr:`CpuRule.key_splits`): the bucket's first bin plus one compare against its edge,
    one loop, both loads from the bucket's index and neither waiting on the other
    (benchmarks/probes/cpu_codes.py: its results head probes-cpu.md)."""
    nb = e.size - 1
    e0, en = e[0], e[nb]
    k0, shift = np.uint64(tab[0]), np.uint64(tab[1])
    for k in range(v.size):
        x = v[k]
        ok = (x >= e0) & (x <= en)
        b = _bucket(x, ok, e0, k0, shift)
        g = tab[np.uint64(3) + b] + (1 if x >= split[b] else 0)
        out[k] = np.int32(g if ok else nb)


@njit(inline="always")
def _bucket(x, ok, e0, k0, shift):
    """The :attr:`CpuRule.key_buckets` bucket of ``x`` (of ``e0`` where not ``ok``): its
    sortable key, ``float64(x) + 0.0`` (-0.0 made 0.0) read as an int64 with all but the sign
    bit flipped when negative, less ``k0``, shifted."""
    bits = _bits(np.float64(x) + 0.0 if ok else np.float64(e0) + 0.0)
    return (np.uint64(bits ^ ((bits >> 63) & _ALL_BUT_SIGN)) - k0) >> shift


_ALL_BUT_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)


@intrinsic
def _bits(typingctx, x):
    """The bits of the float64 ``x`` as an int64."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen
