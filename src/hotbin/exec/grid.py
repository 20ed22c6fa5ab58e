"""Histograms of points on D axes: the grid behind histogram2d and histogramdd.

One rule per axis (:func:`hotbin.core.binning.histogramdd_rules`); 1 and 2 axes are the
backends' own 1-D and 2-D kernels, D >= 3 axes are cell numbers computed on the
host a chunk at a time and counted by the backend's 1-D kernel. Weighted sums go
through :func:`hotbin.exec.local.weighted`.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..core.arrays import on_gpu, to_host, xp
from ..core.binning import check_data, index_rule
from . import ops
from .local import weighted

__all__ = ["columns", "grid", "coded", "CODE_CHUNK"]

#: rows of a D >= 3 sample turned into cell numbers at a time on the host (D + 2 int64
#: temporaries each)
CODE_CHUNK = 1 << 20




def columns(ex, sample):
    """The D coordinate arrays (backend arrays, 1-D, one length) of a histogramdd ``sample``.

    As NumPy: a 2-D array's columns; a sequence of 1-D arrays; else one dimension.
    """
    shape = getattr(sample, "shape", None)
    if shape is not None and len(shape) == 2:
        s = ex.array(sample, "sample")
        cols = [s[:, i] for i in builtins.range(s.shape[1])]
    elif isinstance(sample, (list, tuple)) and sample and all(np.ndim(c) == 1 for c in sample):
        cols = [ex.array(c, "sample") for c in sample]
        if len({c.shape[0] for c in cols}) > 1:
            raise ValueError("sample: the coordinate arrays must have the same length")
    else:
        s = ex.array(sample, "sample")
        if s.ndim > 1:
            raise ValueError(f"sample: expected an (N, D) array or D 1-D arrays, got {s.ndim} dimensions")
        cols = [s.reshape(-1)]
    if not cols:
        raise ValueError("sample: needs at least one dimension (D >= 1)")
    return [check_data(c, f"sample[{i}]") for i, c in enumerate(cols)]


def grid(ex, cols, rules, w, density, deterministic, like):
    """The histogram of the points ``cols`` under one rule per axis, as ``like``'s array type.

    Counts (or sums) from the backend's 1-D or 2-D kernel, or :func:`coded` for
    D >= 3; ``density`` divides by each axis's widths in turn, then by the total,
    in NumPy's order (so the same floats).
    """
    d = len(cols)
    shape = tuple(r.nbins for r in rules)
    cells = math.prod(shape)
    if cells > np.iinfo(np.intp).max:
        raise ValueError(f"bins: {cells} cells are more than an array can hold")
    kernel = {1: ops.histogram, 2: ops.histogram2d}.get(d, coded)
    (H,) = weighted(ex, ops.Op(kernel, tuple(rules), shape if d <= 2 else (cells,)), cols, w, deterministic)
    H = ex.restore(H, like).reshape(shape)
    if density:
        total = H.sum()
        for i, r in enumerate(rules):
            widths = [1] * d
            widths[i] = r.nbins
            H = H / ex.restore(np.diff(r.edges).reshape(widths), like)
        H /= total
    return H


def coded(be, op, cols, w, red):
    """Counts (sums, fixed-point words) of D >= 3 axes (``op.rules``) over the flat C-order cells
    (an :class:`hotbin.exec.ops.Op` kernel).

    Each axis's bin comes from the backend's ``bin_index`` (the cpu backend's) or
    :meth:`BinRule.index` on the host, ``CODE_CHUNK`` points at a time; a point outside
    any axis gets code -1. The codes are counted by the backend's 1-D histogram under
    :func:`hotbin.core.binning.index_rule`, and the
    chunks' partials added where they are (fixed-point words merged exactly, on the host:
    :func:`hotbin.core.fixedpoint.merge`, so a device chunk then joins the host total).
    """
    rules = op.rules
    rule = index_rule(math.prod(r.nbins for r in rules))
    n = int(cols[0].shape[0])
    out = None
    for lo in builtins.range(0, max(n, 1), CODE_CHUNK):
        hi = min(lo + CODE_CHUNK, n)
        code = np.zeros(hi - lo, np.int64)
        outside = np.zeros(hi - lo, bool)
        index = getattr(be, "bin_index", None)  # the cpu backend's; else NumPy's on the host
        for c, r in zip(cols, rules):
            i = index(c[lo:hi], r) if index else r.index(to_host(c[lo:hi]))
            outside |= i < 0
            code = code * r.nbins + i
        code[outside] = -1
        part = be.histogram(code, rule, None if w is None else w[lo:hi], red)
        if out is not None and on_gpu(out) != on_gpu(part):  # fixed point: the total is on the host
            out, part = to_host(out), to_host(part)
        out = part if out is None else red.combine(xp(part).stack([out, part]))
    return out, None
