"""NumPy-shaped counting functions: histogram, histogram2d, bincount, cumsum.

Every function takes NumPy arrays (and anything ``numpy.asarray`` takes), CuPy
arrays and torch CUDA tensors, and dask arrays / dataframe columns (routed to
:mod:`hotbin.distributed`: lazy results); the input's device picks the backend unless
``backend=`` or ``$HOTBIN_BACKEND`` says otherwise, and results come back as the
same kind of array on the same device.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from . import backend as _backends
from . import distributed as _dask
from . import fixedpoint
from .binning import check_data, histogram2d_rules, histogram_rule

__all__ = ["histogram", "histogram2d", "bincount", "cumsum", "backends"]


def backends() -> list[str]:
    """Names of the backends usable on this machine (``"cpu"`` always first)."""
    return _backends.available()


def _weights(be, weights, shape, name="weights"):
    if weights is None:
        return None
    w = be.asarray(weights)
    if w.dtype.kind not in "biufc":
        raise TypeError(f"{name}: expected real or complex numbers, got dtype {w.dtype}")
    if tuple(w.shape) != tuple(shape):
        raise ValueError("weights should have the same shape as a.")
    return w.astype(np.int64) if w.dtype == np.bool_ else w


def _points(be, x, y, weights):
    """Coordinates and weights of a 2-D histogram, validated as NumPy's histogram2d does."""
    xa = check_data(be.asarray(x), "x")
    ya = check_data(be.asarray(y), "y")
    if xa.ndim != 1 or ya.ndim != 1:
        raise ValueError("x and y must be 1-D arrays")
    if xa.shape[0] != ya.shape[0]:
        raise ValueError("x and y must have the same length.")
    return xa, ya, _weights(be, weights, xa.shape)


def _scale(be, w, deterministic):
    """Fixed-point exponent for deterministic float sums; None when sums are exact already."""
    if not deterministic or w is None or w.dtype.kind != "f":
        return None
    return fixedpoint.scale_for(be.max_abs(w), int(w.size))


def _weighted(compute, be, w, deterministic):
    """Run ``compute(weights, scale)``; complex weights are two real runs.

    With a fixed-point scale the backend returns integer words, turned into
    float64 here by the one combine rule.
    """
    if w is not None and w.dtype.kind == "c":
        return (_weighted(compute, be, w.real, deterministic)
                + 1j * _weighted(compute, be, w.imag, deterministic))
    s = _scale(be, w, deterministic)
    out = compute(w, s)
    return out if s is None else fixedpoint.combine(_backends.to_host(out), s)


def histogram(a, bins=10, range=None, weights=None, density=False, *, backend=None,
              deterministic=False, axis=None):
    """Histogram of ``a`` (flattened), exactly as :func:`numpy.histogram`.

    Parameters
    ----------
    a : array_like
        Values: bool, integers or real floats, any shape, layout and byte order.
    bins : int, sequence of edges, or str
        As NumPy: ``n`` equal bins over ``range``, explicit monotonic edges, or
        a NumPy estimator name (``'auto'``, ``'fd'``, ...).
    range : (float, float), optional
        Outer edges; defaults to ``(a.min(), a.max())``, widened by 0.5 when equal.
    weights : array_like, optional
        Same shape as ``a``.
    density : bool
        Divide by the total and the bin widths, as NumPy does.
    backend : {"cpu", "cuda", "wgpu"}, optional
        Defaults to ``$HOTBIN_BACKEND``, else the device of ``a``.
    deterministic : bool
        Float weights are summed in fixed point (see :mod:`hotbin.fixedpoint`):
        bitwise-identical results for any order, chunking and backend.
    axis : int, optional
        hotbin's extension: one histogram per 1-D slice along ``axis`` (a batch:
        one per row, one per image), all under one bin rule (a range from the
        data is the whole array's). ``None`` (NumPy's behaviour) flattens ``a``.
        Unweighted only; with ``density`` each slice is normalized on its own.

    Returns
    -------
    hist : array
        int64 counts; with weights, float64 sums (int64 for integer weights,
        complex128 for complex ones) that never wrap. With ``axis``, shape
        ``a.shape`` without ``axis`` plus ``(nbins,)``.
    bin_edges : array
        NumPy's edges, same values and dtype.

    Notes
    -----
    Value ``v`` lands in bin ``i`` iff ``edges[i] <= v < edges[i+1]`` (the last
    bin also takes ``v == edges[-1]``), compared in the edges' dtype. NaN and
    values outside the edges are not counted. Counts are exact and never
    overflow (int64). Without ``deterministic``, float sums may differ in the
    last bits between backends or thread counts.
    """
    if _dask.is_dask(a, weights):
        return _dask.histogram(a, bins, range, weights, density, backend=backend,
                               deterministic=deterministic)
    be = _backends.select(backend, a, weights)
    x = check_data(be.asarray(a), "a")
    w = _weights(be, weights, x.shape)
    if axis is not None:
        axis = _axis(axis, x.ndim)
        if w is not None:
            raise ValueError("weights: not supported with axis (one histogram per slice counts only)")
    rule = histogram_rule(x, bins, range, minmax=be.minmax, weights=w)
    if axis is None:
        hist = _weighted(lambda ww, s: be.histogram(x, rule, ww, s), be, w, deterministic)
    else:
        hist = _per_slice(be, x, rule, axis)
    hist = be.to_output(hist, like=a)
    edges = be.to_output(rule.edges.copy(), like=a)
    if density:
        widths = be.to_output(np.diff(rule.edges).astype(float), like=a)
        hist = hist / widths / (hist.sum() if axis is None else hist.sum(axis=-1, keepdims=True))
    return hist, edges


def _per_slice(be, x, rule, axis):
    """One histogram per 1-D slice of ``x`` along ``axis`` (validated): shape ``(..., nbins)``."""
    rows = x if x.ndim == 1 else _moveaxis(x, axis)
    shape = tuple(rows.shape[:-1])
    rows = rows.reshape(-1, rows.shape[-1]) if rows.ndim > 1 else rows.reshape(1, -1)
    if hasattr(be, "histogram_rows"):
        out = be.histogram_rows(rows, rule)
    else:
        out = np.stack([_backends.to_host(be.histogram(r, rule)) for r in rows]) if rows.shape[0] \
            else np.zeros((0, rule.nbins), np.int64)
    return out.reshape(shape + (rule.nbins,))


def _axis(axis, ndim):
    try:
        k = operator.index(axis)
    except TypeError:
        raise TypeError(f"axis: expected an integer, got {axis!r}") from None
    if not -ndim <= k < ndim:
        raise ValueError(f"axis: {axis} is out of bounds for an array of {ndim} dimensions")
    return k % ndim


def _moveaxis(x, axis):
    """``x`` with ``axis`` last (a transpose: NumPy and CuPy arrays alike)."""
    return x.transpose([k for k in builtins.range(x.ndim) if k != axis] + [axis])


def histogram2d(x, y, bins=10, range=None, weights=None, density=False, *, backend=None,
                deterministic=False):
    """2-D histogram ``H[ix, iy]``, exactly as :func:`numpy.histogram2d`.

    Same edges, closure (half-open cells, the last row and column closed), NaN
    and out-of-range rules as NumPy. Deliberate difference: unweighted counts are
    int64 (NumPy gives float64). Weighted sums are float64, never wrapping;
    ``deterministic=True`` sums float weights in fixed point (bitwise
    reproducible). Returns ``(H, xedges, yedges)``.
    """
    if _dask.is_dask(x, y, weights):
        return _dask.histogram2d(x, y, bins, range, weights, density, backend=backend,
                                 deterministic=deterministic)
    be = _backends.select(backend, x, y, weights)
    xa, ya, w = _points(be, x, y, weights)
    rx, ry = histogram2d_rules(xa, ya, bins, range, minmax=be.minmax)
    H = _weighted(lambda ww, s: be.histogram2d(xa, ya, rx, ry, ww, s)[0], be, w, deterministic)
    H = be.to_output(H, like=x)
    if density:
        s = H.sum()
        H = H / be.to_output(np.diff(rx.edges)[:, None], like=x)
        H = H / be.to_output(np.diff(ry.edges)[None, :], like=x)
        H /= s
    return H, be.to_output(rx.edges, like=x), be.to_output(ry.edges, like=x)


def bincount(x, weights=None, minlength=0, *, backend=None):
    """Count each non-negative integer, exactly as :func:`numpy.bincount`.

    Returns int64 counts of length ``max(x.max() + 1, minlength)``; with weights,
    float64 sums. Raises NumPy's errors for negative values, non-integer input
    and mismatched weights.
    """
    if _dask.is_dask(x, weights):
        return _dask.bincount(x, weights, minlength, backend=backend)
    be = _backends.select(backend, x, weights)
    xa = be.asarray(x)
    if xa.ndim != 1:
        raise ValueError("object too deep for desired array" if xa.ndim > 1 else
                         "object of too small depth for desired array")
    if xa.dtype.kind not in "biu":
        raise TypeError(f"Cannot cast array data from {xa.dtype!r} to dtype('int64') "
                        "according to the rule 'safe'")
    minlength = int(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    w = None
    if weights is not None:
        w = be.asarray(weights)
        if w.dtype.kind not in "biuf":
            raise TypeError(f"weights: expected real numbers, got dtype {w.dtype}")
        if w.shape != xa.shape:
            raise ValueError("The weights and list don't have the same length.")
    length = minlength
    if xa.size:
        lo, hi = be.minmax(xa)
        if lo < 0:
            raise ValueError("'list' argument must have no negative elements")
        length = max(length, int(hi) + 1)
    return be.to_output(be.bincount(check_data(xa), length, w), like=x)


def cumsum(a, *, exclusive=False, backend=None):
    """Prefix sums of ``a`` (flattened), as :func:`numpy.cumsum` with ``axis=None``.

    ``exclusive=True`` gives ``out[0] = 0, out[i] = a[0] + ... + a[i-1]``. The
    result dtype is NumPy's (int64 for small signed ints and bool, uint64 for
    small unsigned ints). Integer scans equal NumPy's exactly. Float scans are
    computed blockwise (fixed block size, so reproducible across runs and thread
    counts) and agree with NumPy's sequential sum to rounding.
    """
    be = _backends.select(backend, a)
    x = be.asarray(a)
    if x.dtype.kind not in "biufc":
        raise TypeError(f"a: cannot scan data of dtype {x.dtype}")
    return be.to_output(be.cumsum(x, bool(exclusive)), like=a)
