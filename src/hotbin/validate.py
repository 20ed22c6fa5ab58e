"""Arguments of the NumPy-shaped counting functions, checked once with NumPy's messages.

Used by :mod:`hotbin.api` and the histogram objects (:mod:`hotbin.histfill`), so
both take the same inputs and raise the same errors.
"""
from __future__ import annotations

import warnings

import numpy as np

from .binning import check_data

__all__ = ["check_weights", "values", "points"]


def check_weights(be, weights, shape, name="weights"):
    """Weights of ``shape`` as NumPy requires them (bool counts as int64), or None."""
    if weights is None:
        return None
    w = be.asarray(weights)
    if w.dtype.kind not in "biufc":
        raise TypeError(f"{name}: expected real or complex numbers, got dtype {w.dtype}")
    if tuple(w.shape) != tuple(shape):
        raise ValueError("weights should have the same shape as a.")
    return w.astype(np.int64) if w.dtype == np.bool_ else w


def values(be, a, weights):
    """Values and weights of a 1-D histogram, checked as NumPy's; bool warns as NumPy does."""
    x = be.asarray(a)
    if x.dtype == np.bool_:
        warnings.warn(f"Converting input from {x.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=3)
    x = check_data(x, "a")
    return x, check_weights(be, weights, x.shape)


def points(be, x, y, weights):
    """Coordinates and weights of a 2-D histogram, validated as NumPy's histogram2d does."""
    xa = check_data(be.asarray(x), "x")
    ya = check_data(be.asarray(y), "y")
    if xa.ndim != 1 or ya.ndim != 1:
        raise ValueError("x and y must be 1-D arrays")
    if xa.shape[0] != ya.shape[0]:
        raise ValueError("x and y must have the same length.")
    return xa, ya, check_weights(be, weights, xa.shape)
