"""The bin rule as kernels take it: derived once here, handed to every backend.

:class:`hotbin.core.binning.BinRule` says which bin a value lands in; this module
derives what device kernels need to apply that rule exactly and fast:

* :func:`round_f32` / :func:`edges_f32`: float32 edges that compare float32
  values exactly as the float64 edges do (CUDA's 2-D kernels, WGSL's keys);
* :func:`guess`: the multiply guess ``t = (v - lo) * scale`` in a guess dtype
  (float32 or float64) and the one tolerance formula that says when ``floor(t)``
  is the bin without loading an edge;
* :func:`value_table` / :func:`fold_values`: the value -> bin table of 8/16-bit
  data (count each raw value, then fold values into bins by the reference rule).

The CPU kernels guess in float64 with :attr:`BinRule.slack`, measured on the
edges themselves (the rule's own property).
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from .binrule import BinRule

__all__ = ["round_f32", "edges_f32", "Guess", "guess", "value_table", "fold_values"]

#: a guess farther than this (in bins) from an edge is trusted outright; beyond it kernels
#: always check the edges (mode 1), so a rule whose tolerance is this large costs speed only
TRUST_BELOW = 0.125
#: safety factor on the measured tolerance
MARGIN = 1.25


def round_f32(e: np.ndarray, up: bool) -> np.ndarray:
    """Each float64 edge rounded up (down) to a float32: ``e <= v  iff  up(e) <= v`` for
    float32 ``v`` (and ``v <= e  iff  v <= down(e)``)."""
    e = np.asarray(e, np.float64)
    with np.errstate(over="ignore"):
        f = e.astype(np.float32)
    wrong = f.astype(np.float64) < e if up else f.astype(np.float64) > e
    f[wrong] = np.nextafter(f[wrong], np.float32(np.inf if up else -np.inf))
    return f


def edges_f32(e: np.ndarray) -> np.ndarray:
    """float32 edges giving the same comparisons for float32 values as float64 edges ``e``:
    every edge rounded up (``v >= e[i]``), the closed end rounded down (``v <= e[-1]``)."""
    e = np.asarray(e, np.float64)
    return np.concatenate([round_f32(e[:-1], True), round_f32(e[-1:], False)])


class Guess(NamedTuple):
    """The multiply guess of a rule in one guess dtype.

    ``mode`` 0: binary search (edges not from linspace); 1: guess, then correct
    against the edges; 2: as 1, but a guess ``t`` farther than ``eps`` from an
    integer is the bin outright.
    """

    mode: int
    lo: np.floating
    scale: np.floating
    eps: np.floating


def guess(rule: BinRule, gdt) -> Guess:
    """The guess ``(mode, lo, scale, eps)`` of ``rule`` computed in the guess dtype ``gdt``.

    ``eps`` bounds, in bins, the edges' deviation from the exact linspace
    (measured) plus the rounding of ``t`` in ``gdt`` (``u * (|ends| / step +
    nbins)`` for its unit roundoff ``u``, with margin); float32 guesses also
    allow for flush-to-zero of operands below ``2**-126`` (kernels compile with
    ``-ftz=false``; the term keeps the bound valid for any build).
    """
    gstr = np.dtype(gdt).str
    if not rule.uniform or rule.scale == 0 or rule.cmp.dtype.kind != "f":
        return _search(gstr)
    cmp = rule.cmp if rule.cmp.dtype == np.float64 else rule.cmp.astype(np.float64)
    return _guess(cmp.tobytes(), float(rule.edges[-1]), rule.nbins, gstr)


@functools.lru_cache(maxsize=None)
def _search(gstr: str) -> Guess:
    t = np.dtype(gstr).type
    return Guess(0, t(0), t(0), t(0))


@functools.lru_cache(maxsize=256)
def _guess(cmp: bytes, last: float, nb: int, gstr: str) -> Guess:
    gdt = np.dtype(gstr)
    zero = _search(gstr)
    e = np.frombuffer(cmp, np.float64)
    lo, hi = float(e[0]), last
    width = hi - lo
    if not (math.isfinite(width) and width > 0):
        return zero
    with np.errstate(over="ignore"):
        lo_g, scale_g = gdt.type(lo), gdt.type(nb / width)
    if not (np.isfinite(lo_g) and np.isfinite(scale_g) and scale_g > 0):
        return zero
    step = width / nb
    model = lo + np.arange(nb, dtype=np.float64) * step
    dev = float(np.max(np.abs(e[:nb] - model))) / step
    mag = max(abs(lo), abs(hi)) / step + nb
    u = float(np.finfo(gdt).eps) / 2
    eps = 2 * dev + 8 * (u + 2.0 ** -53) * mag
    if gdt == np.float32:  # flush-to-zero of operands below 2**-126
        eps += 4 * 2.0 ** -126 * (float(scale_g) + 1)
    if not eps < TRUST_BELOW:
        return Guess(1, lo_g, scale_g, gdt.type(0))
    return Guess(2, lo_g, scale_g, gdt.type(eps * MARGIN))


def value_table(rule: BinRule, dtype) -> np.ndarray:
    """int32 bin (-1: none) of every value of the 8/16-bit integer ``dtype``, by
    :meth:`BinRule.index` (so kernels that count raw values fold them exactly)."""
    dt = np.dtype(dtype)
    return _value_table(dt.str, rule.cmp.tobytes(), rule.cmp.dtype.str)


@functools.lru_cache(maxsize=64)
def _value_table(dtype: str, cmp: bytes, cmp_dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    e = np.frombuffer(cmp, cmp_dtype)
    values = np.arange(1 << (8 * dt.itemsize), dtype=f"u{dt.itemsize}").view(dt)
    idx = BinRule(edges=e, cmp=e, uniform=False).index(values).astype(np.int32)
    idx.flags.writeable = False
    return idx


def fold_values(counts: np.ndarray, table: np.ndarray, nbins: int) -> np.ndarray:
    """Sum raw value counts into bins on the host: value ``v`` goes to bin ``table[v]`` (-1: none)."""
    out = np.zeros(nbins, np.int64)
    keep = table >= 0
    np.add.at(out, table[keep], counts[keep])
    return out
