"""Inputs that NumPy bins and no hotbin kernel takes: telling them apart and NumPy's answer.

:func:`numpy_only` says when a histogram must be NumPy's own (datetime64 and
timedelta64 values or bounds, object weights, long double anywhere),
:func:`no_edges` when ``bins`` is an empty edges sequence, and
:func:`numpy_result` calls NumPy for those inputs with hotbin's dtypes and errors.
"""
from __future__ import annotations

import numpy as np

__all__ = ["numpy_only", "no_edges", "numpy_result"]

# Long double (where wider than float64): NumPy compares in it, no kernel does.
_LONG = {np.dtype(np.longdouble), np.dtype(np.clongdouble)} - {np.dtype(np.float64), np.dtype(np.complex128)}


#: the dtype classes of bool, integer, float and complex arrays (NumPy's and CuPy's dtypes)
_NUMERIC = frozenset(type(np.dtype(c)) for c in "?bBhHiIlLqQefdgFDG")


def _plain(v) -> bool:
    """A Python float or bool, an int that NumPy makes int64, or a tuple of them: no dtype here
    is exotic (the common ``bins`` and ``range``, told apart without NumPy)."""
    if type(v) is tuple:
        return all(map(_plain, v))
    return type(v) in (float, bool) or (type(v) is int and -(1 << 63) <= v < (1 << 63))


def _dtypes(v):
    """The NumPy dtypes ``v`` holds: its own, or its elements' for a ragged list; none for GPU arrays."""
    if v is None or isinstance(v, (str, bytes)) or _plain(v):
        return
    dt = getattr(v, "dtype", None)
    if dt is not None:
        if isinstance(dt, np.dtype):  # NumPy and CuPy arrays (torch dtypes are not NumPy's)
            yield dt
        return
    if hasattr(type(v), "__dlpack__"):  # DLPack carries numbers only: nothing NumPy must take
        return
    if isinstance(v, (list, tuple)) and any(hasattr(e, "dtype") for e in v):
        for e in v:  # a sequence of arrays (histogram2d's x and y): each its own, not stacked
            yield from _dtypes(e)  # (np.asarray copied x, y: most of a call; probes-cpu.md)
        return
    try:
        yield np.asarray(v).dtype
    except (TypeError, ValueError):  # ragged bins or ranges, lists of GPU arrays
        if isinstance(v, (list, tuple)):
            for e in v:
                yield from _dtypes(e)


def numpy_only(values, weights, *bounds) -> bool:
    """True when NumPy must compute the result: an input no hotbin kernel takes but NumPy does.

    That is datetime64/timedelta64 ``values`` or ``bounds`` (range, edges), object
    ``weights`` (``Decimal``, ``Fraction``: NumPy sums the objects), and long double
    anywhere. Other dtypes are hotbin's (and its errors: object values are refused).
    """
    dt = getattr(values, "dtype", None)
    if weights is None and type(dt) in _NUMERIC and dt not in _LONG:
        for b in bounds:
            if b is not None and not _plain(b):
                break
        else:
            return False  # the common call (an array of numbers, plain bins and range), told at once

    def exotic(v, kinds):
        return any(dt.kind in kinds or dt in _LONG for dt in _dtypes(v))
    return exotic(values, "mM") or exotic(weights, "O") or any(exotic(b, "mM") for b in bounds)


def no_edges(bins) -> bool:
    """``bins`` an empty edges sequence: NumPy answers with no bins and no edges."""
    return type(bins) is not int and not isinstance(bins, str) and np.ndim(bins) == 1 and np.size(bins) == 0


def numpy_result(fn, *args, counts=False):
    """NumPy's own ``fn(*args)``, for :func:`numpy_only` inputs.

    The last argument is always the weights: bool weights are handed over as int64,
    since hotbin sums them as integers (NumPy would add in bool and fail). NumPy's
    IndexError for empty edges becomes a ValueError naming ``bins``. With
    ``counts`` (2-D and D-dimensional histograms, whose last two arguments are
    ``density, weights``) unweighted counts come back int64, as hotbin's.
    """
    w = args[-1]
    if isinstance(w, np.ndarray) and w.dtype == np.bool_:
        args = (*args[:-1], w.astype(np.int64))
    try:
        out = fn(*args)
    except IndexError as exc:
        raise ValueError(f"bins: NumPy cannot bin with these edges ({exc})") from exc
    if counts and args[-1] is None and not args[-2]:  # no weights, no density
        out = (out[0].astype(np.int64), *out[1:])
    return out
