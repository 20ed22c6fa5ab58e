"""Batches: one histogram per 1-D slice of an array (``histogram(..., axis=k)``), in memory
or on Dask (:func:`slices`).

All slices share one bin rule. They reach the backend a slab at a time (a slice
longer than a slab alone, as a strided view), so a transposed input or a memmap
is never copied whole (the backend's counts keep the rule's exact integer range).
"""
from __future__ import annotations

import builtins
import importlib
import math
import operator
import string

import numpy as np

from ..core.arrays import to_host

__all__ = ["slices", "per_slice", "check_axis", "SLAB_BYTES"]

#: input bytes per backend call of a batch (``axis=``): slices are gathered (and
#: copied, when strided) a slab at a time, so memory stays bounded
SLAB_BYTES = 1 << 23


def slices(ex, x, rule, axis):
    """:func:`per_slice` through the executor ``ex``: in memory at once; on Dask lazily, per
    block of the other axes, each block holding its slices whole."""
    ind = string.ascii_letters[:x.ndim]
    out = ind[:axis] + ind[axis + 1:] + string.ascii_letters[x.ndim]
    return ex.blockwise(lambda be, v: per_slice(be, v, rule, axis), out, x, ind, dtype=np.dtype(np.int64),
                        new_axes={out[-1]: rule.nbins})


def per_slice(be, x, rule, axis):
    """One histogram per 1-D slice of ``x`` along ``axis`` (validated): shape ``(..., nbins)``.

    The slices go to the backend a slab of :data:`SLAB_BYTES` at a time (a slice
    longer than that alone, as a strided 1-D view), so a transposed input or a
    memmap is never copied whole.
    """
    rows = _moveaxis(x, axis)
    parts = [_rows(be, v, rule) for v in _slabs(rows, SLAB_BYTES)]
    if len(parts) == 1:
        out = parts[0]
    else:
        xp = np if isinstance(parts[0], np.ndarray) else importlib.import_module("cupy")
        out = xp.concatenate(parts)
    return out.reshape(tuple(rows.shape[:-1]) + (rule.nbins,))


def _slabs(rows, limit):
    """Views of ``rows`` (slices on the last axis) covering them in C order: each of at
    most ``limit`` bytes, or a single slice."""
    if rows.ndim == 1 or rows.nbytes <= limit:
        yield rows
    elif rows[0].nbytes <= limit:
        k = limit // max(rows[0].nbytes, 1)
        for i in builtins.range(0, rows.shape[0], k):
            yield rows[i:i + k]
    else:
        for i in builtins.range(rows.shape[0]):
            yield from _slabs(rows[i], limit)


def _rows(be, v, rule):
    """``(slices, nbins)`` counts of the slices of the view ``v`` (see :func:`_slabs`)."""
    if v.ndim == 1:
        return be.histogram(v, rule).reshape(1, rule.nbins)
    v = v.reshape(math.prod(v.shape[:-1]), v.shape[-1])
    if be.has("histogram_rows"):
        return be.histogram_rows(v, rule)
    if v.shape[0] == 0:
        return np.zeros((0, rule.nbins), np.int64)
    return np.stack([to_host(be.histogram(r, rule)) for r in v])


def check_axis(axis, ndim):
    try:
        k = operator.index(axis)
    except TypeError:
        raise TypeError(f"axis: expected an integer, got {axis!r}") from None
    if not -ndim <= k < ndim:
        raise ValueError(f"axis: {axis} is out of bounds for an array of {ndim} dimensions")
    return k % ndim


def _moveaxis(x, axis):
    """``x`` with ``axis`` last (a transposed view: NumPy and CuPy arrays alike)."""
    return x.transpose([k for k in builtins.range(x.ndim) if k != axis] + [axis])
