"""Histograms of points on D axes: the grid behind histogram2d and histogramdd.

One rule per axis (:func:`hotbin.binning.histogramdd_rules`); 1 and 2 axes are the
backends' own 1-D and 2-D kernels, D >= 3 axes are cell numbers computed on the
host a chunk at a time and counted by the backend's 1-D kernel. Weighted sums go
through :func:`hotbin.sums.weighted`.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from . import backend as _backends
from . import fixedpoint
from .binning import check_data, index_rule
from .sums import weighted

__all__ = ["columns", "grid", "CODE_CHUNK"]

#: rows of a D >= 3 sample turned into cell numbers at a time on the host (D + 2 int64
#: temporaries each)
CODE_CHUNK = 1 << 20




def columns(be, sample):
    """The D coordinate arrays (backend arrays, 1-D, one length) of a histogramdd ``sample``.

    As NumPy: a 2-D array's columns; a sequence of 1-D arrays; else one dimension.
    """
    shape = getattr(sample, "shape", None)
    if shape is not None and len(shape) == 2:
        s = be.asarray(sample)
        cols = [s[:, i] for i in builtins.range(s.shape[1])]
    elif isinstance(sample, (list, tuple)) and sample and all(np.ndim(c) == 1 for c in sample):
        cols = [be.asarray(c) for c in sample]
        if len({c.shape[0] for c in cols}) > 1:
            raise ValueError("sample: the coordinate arrays must have the same length")
    else:
        s = be.asarray(sample)
        if s.ndim > 1:
            raise ValueError(f"sample: expected an (N, D) array or D 1-D arrays, got {s.ndim} dimensions")
        cols = [s.reshape(-1)]
    if not cols:
        raise ValueError("sample: needs at least one dimension (D >= 1)")
    return [check_data(c, f"sample[{i}]") for i, c in enumerate(cols)]


def grid(be, cols, rules, w, density, deterministic, like):
    """The histogram of the points ``cols`` under one rule per axis, as ``like``'s array type.

    Counts (or sums) from the backend's 1-D or 2-D kernel, or :func:`_coded` for
    D >= 3; ``density`` divides by each axis's widths in turn, then by the total,
    in NumPy's order (so the same floats).
    """
    d = len(cols)
    if d == 1:
        run = lambda ww, s: be.histogram(cols[0], rules[0], ww, s)  # noqa: E731
    elif d == 2:
        run = lambda ww, s: be.histogram2d(cols[0], cols[1], *rules, ww, s)[0]  # noqa: E731
    else:
        run = lambda ww, s: _coded(be, cols, rules, ww, s)  # noqa: E731
    H = be.to_output(weighted(run, be, w, deterministic), like=like)
    H = H.reshape(tuple(r.nbins for r in rules))
    if density:
        total = H.sum()
        for i, r in enumerate(rules):
            shape = [1] * d
            shape[i] = r.nbins
            H = H / be.to_output(np.diff(r.edges).reshape(shape), like=like)
        H /= total
    return H


def _coded(be, cols, rules, w, scale):
    """Counts (sums, fixed-point words) of D >= 3 axes over the flat C-order cells.

    Each axis's bin comes from :meth:`BinRule.index` on the host, ``CODE_CHUNK``
    points at a time; a point outside any axis gets code -1. The codes are counted
    by the backend's 1-D histogram under :func:`hotbin.binning.index_rule`, and the
    chunks' partials added (fixed-point words merged exactly).
    """
    cells = math.prod(r.nbins for r in rules)
    if cells > np.iinfo(np.intp).max:
        raise ValueError(f"bins: {cells} cells are more than an array can hold")
    rule = index_rule(cells)
    n = int(cols[0].shape[0])
    out = None
    for lo in builtins.range(0, max(n, 1), CODE_CHUNK):
        hi = min(lo + CODE_CHUNK, n)
        code = np.zeros(hi - lo, np.int64)
        outside = np.zeros(hi - lo, bool)
        for c, r in zip(cols, rules):
            i = r.index(_backends.to_host(c[lo:hi]))
            outside |= i < 0
            code = code * r.nbins + i
        code[outside] = -1
        part = be.histogram(be.asarray(code), rule, None if w is None else w[lo:hi], scale)
        if out is None:
            out = part
        elif scale is None:
            out = out + part
        else:
            out = fixedpoint.merge(np.stack([_backends.to_host(out), _backends.to_host(part)]))
    return out
