"""Arguments of the NumPy-shaped counting functions, checked once with NumPy's messages.

Every check takes the executor (:mod:`hotbin.exec.local`), so in-memory and Dask
inputs are checked by the same lines: ``ex.array`` adapts an input,
``ex.align`` pairs an array with the values it belongs to.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from .binning import check_data

__all__ = ["check_data", "check_weights", "values", "points", "coordinates", "minlength"]


def check_weights(ex, weights, x, kinds="biufc", message="weights should have the same shape as a."):
    """Weights paired with the values ``x`` (bool counts as int64), or None."""
    if weights is None:
        return None
    w = ex.array(weights, "weights")
    if w.dtype.kind not in kinds:
        what = "real or complex" if "c" in kinds else "real"
        raise TypeError(f"weights: expected {what} numbers, got dtype {w.dtype}")
    w = ex.align(w, x, message)
    return w.astype(np.int64) if w.dtype == np.bool_ else w


def values(ex, a, weights):
    """Values and weights of a 1-D histogram, checked as NumPy's; bool warns as NumPy does."""
    x = ex.array(a, "a")
    if x.dtype == np.bool_:
        warnings.warn(f"Converting input from {x.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=3)
    x = check_data(x, "a")
    return x, check_weights(ex, weights, x)


def coordinates(ex, x, y, length_message, dims_message="x and y must be 1-D arrays"):
    """Two 1-D coordinate arrays of the same length (messages formatted with the shapes:
    ``{0}``, ``{1}`` the shapes of x and y for ``dims_message``, their lengths for
    ``length_message``)."""
    xa = check_data(ex.array(x, "x"), "x")
    ya = check_data(ex.array(y, "y"), "y")
    if xa.ndim != 1 or ya.ndim != 1:
        raise ValueError(dims_message.format(tuple(xa.shape), tuple(ya.shape)))
    return xa, ex.align(ya, xa, length_message.format(xa.shape[0], ya.shape[0]))


def points(ex, x, y, weights):
    """Coordinates and weights of a 2-D histogram, validated as NumPy's histogram2d does."""
    xa, ya = coordinates(ex, x, y, "x and y must have the same length.")
    return xa, ya, check_weights(ex, weights, xa)


def minlength(n) -> int:
    """bincount's ``minlength`` as NumPy reads it: an integer, not negative (NumPy's messages)."""
    if n is None:
        raise TypeError("use 0 instead of None for minlength")
    if isinstance(n, (bool, np.bool_)):
        raise TypeError("an integer is required")
    n = operator.index(n)  # TypeError: "'float' object cannot be interpreted as an integer"
    if n < 0:
        raise ValueError("'minlength' must not be negative")
    return n
