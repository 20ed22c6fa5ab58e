"""NumPy-shaped counting functions: histogram, histogram2d, histogramdd, histogram_bin_edges,
bincount, cumsum.

Every function takes NumPy arrays (and anything ``numpy.asarray`` takes), CuPy arrays, torch CUDA
tensors and dask arrays / dataframe columns (lazy results). Each builds one plan (:mod:`hotbin.exec.local`)
run in memory on the backend the inputs' device picks (unless ``backend=`` or ``$HOTBIN_BACKEND``
says otherwise) or on Dask; results come back as the same kind of array on the same device.

Arguments follow NumPy's positional order (``density`` before ``weights``), so
``from hotbin import histogram`` replaces ``from numpy import histogram``.
Inputs whose dtype no kernel takes but NumPy histograms (object weights such as
``Decimal``, datetime64/timedelta64 values, long double values, ranges or edges)
get NumPy's own result (:func:`hotbin.core.numpy_compat.numpy_only`).
"""
from __future__ import annotations

import operator
import os

import numpy as np

from . import backend as _backends
from .core import validate
from .core.arrays import shared_copy
from .exec.batch import check_axis, slices
from .core.binning import check_data, histogram2d_rules, histogram_rule, histogramdd_rules
from .exec.grid import columns, grid
from .core.numpy_compat import no_edges, numpy_only, numpy_result
from .exec import ops
from .exec.local import device_histogram, executor, portable, weighted
from .core.reductions import COUNT, SUM_F64

__all__ = ["histogram", "histogram2d", "histogramdd", "histogram_bin_edges", "bincount", "cumsum",
           "backends"]

def backends() -> list[str]:
    """Names of the backends usable on this machine (``"cpu"`` always first)."""
    return _backends.available()


def histogram(a, bins=10, range=None, density=None, weights=None, *, backend=None,
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
    density : bool, optional
        Divide by the total and the bin widths, as NumPy does.
    weights : array_like, optional
        Same shape as ``a``.
    backend : {"cpu", "cuda", "wgpu"}, optional
        Defaults to ``$HOTBIN_BACKEND``, else the device of ``a``; large NumPy input goes
        to a usable GPU where that is faster and bitwise the same (:func:`hotbin.exec.local.portable`).
    deterministic : bool
        Float weights are summed in fixed point (see :mod:`hotbin.core.fixedpoint`):
        bitwise-identical results for any order, chunking and backend.
    axis : int, optional
        hotbin's extension: one histogram per 1-D slice along ``axis`` (a batch:
        one per row, one per image), all under one bin rule (a range from the
        data is the whole array's). ``None`` (NumPy's behaviour) flattens ``a``.
        Unweighted only; with ``density`` each slice is normalized on its own.
        A dask array gives a lazy dask array (each task holds its slices whole).

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
    last bits between backends or thread counts. bool values are counted as
    uint8 with NumPy's RuntimeWarning. Datetime values, object (``Decimal``)
    weights and long double values or ranges give :func:`numpy.histogram`'s result.
    """
    if type(a) is np.ndarray and weights is None and axis is None and not density \
            and (backend or os.environ.get(_backends.ENV) or "cpu") == "cpu":
        rule = _small_rule(a, bins, range)  # a small NumPy array's common calls: the rule at once
        if rule is not None:
            ex = executor("cpu", a)
            (hist,) = ex.run(ops.Op(ops.histogram, (rule,), (rule.nbins,)), ex.array(a))
            return hist, rule.edges.copy()  # a range's edges are shared (a cached rule)
    if axis is None and not density:  # a CuPy array's common calls
        found = device_histogram(backend, a, bins, range, weights, deterministic)
        if found is not None:
            return found
    if axis is None and (numpy_only(a, weights, range, bins) or no_edges(bins)):
        return numpy_result(np.histogram, a, bins, range, density, weights)
    offload = "histogram" if axis is None and portable(weights, deterministic) else None
    ex = executor(backend, a, weights, offload=offload)
    ex.check_bins(bins)
    x, w = validate.values(ex, a, weights)
    if axis is not None:
        axis = check_axis(axis, x.ndim)
        if w is not None:
            raise ValueError("weights: not supported with axis (one histogram per slice counts only)")
    (rule,) = ex.rules(lambda s, mm: [histogram_rule(s[0], bins, range, minmax=mm,
                                                     weights=None if ex.lazy else w)], [x])
    if axis is None:
        (hist,) = weighted(ex, ops.Op(ops.histogram, (rule,), (rule.nbins,)), [x], w, deterministic)
    else:
        hist = slices(ex, x, rule, axis)
    if type(a) is np.ndarray and type(hist) is np.ndarray:  # NumPy in and out: nothing to restore
        edges = rule.edges.copy()
    else:
        hist = ex.restore(hist, a)
        edges = ex.restore(shared_copy(rule.edges, a), a)
    if density:
        widths = ex.restore(np.diff(rule.edges).astype(float), a)
        hist = hist / widths / (hist.sum() if axis is None else hist.sum(axis=-1, keepdims=True))
    return hist, edges


def _small_rule(a, bins, range):
    """:func:`hotbin.backend.cpu.small.rule`, imported on the first call (``import hotbin``
    loads no backend)."""
    from .backend.cpu.small import rule

    globals()["_small_rule"] = rule
    return rule(a, bins, range)


def histogram2d(x, y, bins=10, range=None, density=None, weights=None, *, backend=None,
                deterministic=False):
    """2-D histogram ``H[ix, iy]``, exactly as :func:`numpy.histogram2d`.

    Parameters
    ----------
    x, y : array_like
        Coordinates, 1-D and of the same length: bool, integers or real floats.
    bins : int, edges, [int, int], [edges, edges] or [int, edges]
        As NumPy: counts or monotonic edges per axis (one value for both axes).
    range : [[xmin, xmax], [ymin, ymax]], optional
        Outer edges per axis (None for one: from the data, widened by 0.5 when equal).
    density : bool, optional
        Divide by the total and the cell areas, as NumPy does.
    weights : array_like, optional
        Same shape as ``x``.
    backend : {"cpu", "cuda", "wgpu"}, optional
        Defaults to ``$HOTBIN_BACKEND``, else the device of the inputs.
    deterministic : bool
        Float weights are summed in fixed point: bitwise-identical results for
        any order, chunking and backend.

    Returns
    -------
    H : array
        ``(nx, ny)``: int64 counts (deliberate difference: NumPy gives float64);
        with weights float64 sums (int64 for integer weights) that never wrap.
    xedges, yedges : array
        NumPy's edges, same values and dtypes.

    Notes
    -----
    :func:`histogramdd` of ``(x, y)``: same edges, closure (half-open cells, the
    last row and column closed), NaN and out-of-range rules as NumPy.
    """
    if numpy_only((x, y), weights, range, bins):
        return numpy_result(np.histogram2d, x, y, bins, range, density, weights, counts=True)
    ex = executor(backend, x, y, weights)  # never moved: the GPU was not faster (backend.cuda.tuning)
    ex.check_bins(bins)
    xa, ya, w = validate.points(ex, x, y, weights)
    rules = ex.rules(lambda s, mm: histogram2d_rules(s[0], s[1], bins, range, minmax=mm), [xa, ya])
    H = grid(ex, [xa, ya], rules, w, density, deterministic, like=x)
    return (H, *(ex.restore(r.edges, x) for r in rules))


def histogramdd(sample, bins=10, range=None, density=None, weights=None, *, backend=None,
                deterministic=False):
    """D-dimensional histogram, exactly as :func:`numpy.histogramdd`.

    Parameters
    ----------
    sample : (N, D) array, or sequence of D 1-D arrays of length N
        Coordinates of ``N`` points (a 1-D array is ``N`` points in one
        dimension): bool, integers or real floats.
    bins : int, edges, or sequence of D ints or edges
        As NumPy: counts or monotonic edges per axis (one value for every axis).
    range : sequence of D (min, max) pairs, optional
        Outer edges per axis (None for one: from the data, widened by 0.5 when equal).
    density : bool, optional
        Divide by the total and the cell volumes, as NumPy does.
    weights : array_like, optional
        ``(N,)``: one weight per point.
    backend : {"cpu", "cuda", "wgpu"}, optional
        Defaults to ``$HOTBIN_BACKEND``, else the device of the inputs.
    deterministic : bool
        Float weights are summed in fixed point: bitwise-identical results for
        any order, chunking and backend.

    Returns
    -------
    H : array
        Shape ``(nbins_0, ..., nbins_{D-1})``: int64 counts (deliberate
        difference: NumPy gives float64); with weights float64 sums (int64 for
        integer weights) that never wrap.
    edges : list of D arrays
        NumPy's edges per axis, same values and dtypes.

    Notes
    -----
    Along each axis a value lands in bin ``i`` iff ``edges[i] <= v < edges[i+1]``
    (the last bin closed), compared in the common dtype of the sample and the
    edges; a point with a NaN or out-of-range coordinate is not counted.
    D = 1 and D = 2 run the backend's 1-D and 2-D kernels. For D >= 3 each
    axis's bin is computed on the host by the reference rule
    (:meth:`hotbin.core.binning.BinRule.index`) in chunks of ``2**20`` points, and the
    flat cell numbers are counted by the backend's 1-D kernel (weights and fixed
    point included), so memory stays bounded; GPU data is copied to the host
    chunk by chunk for that step. Dask input gives a lazy Dask array (per chunk, then
    merged), as :func:`histogram2d`.
    """
    if numpy_only(sample, weights, range, bins):
        return numpy_result(np.histogramdd, sample, bins, range, density, weights, counts=True)
    parts = sample if isinstance(sample, (list, tuple)) else (sample,)
    ex = executor(backend, weights, *parts)
    ex.check_bins(bins)
    cols = columns(ex, sample)
    w = validate.check_weights(ex, weights, cols[0])
    rules = ex.rules(lambda s, mm: histogramdd_rules(s, bins, range, minmax=mm), cols)
    H = grid(ex, cols, rules, w, density, deterministic, like=parts[0])
    return H, [ex.restore(r.edges, parts[0]) for r in rules]


def histogram_bin_edges(a, bins=10, range=None, weights=None, *, backend=None):
    """The bin edges of :func:`histogram`, exactly :func:`numpy.histogram_bin_edges`.

    Parameters
    ----------
    a : array_like
        Values (flattened): bool (counted as uint8, with NumPy's warning),
        integers or real floats.
    bins : int, sequence of edges, or str
        As NumPy; a string estimator refuses ``weights`` as NumPy does.
    range : (float, float), optional
        Outer edges; defaults to ``(a.min(), a.max())``, widened by 0.5 when equal.
    weights : array_like, optional
        Same shape as ``a``; only checked (NumPy's estimators ignore weights).
    backend : {"cpu", "cuda", "wgpu"}, optional
        Where ``(a.min(), a.max())`` is computed when needed.

    Returns
    -------
    edges : array
        NumPy's edges, same values and dtype, as the same kind of array as ``a``:
        for a dask array a lazy dask array (a range from the data is found by one
        pass over the chunks when it is computed; string rules need the data in
        memory and raise).
    """
    if numpy_only(a, weights, range, bins):
        return numpy_result(np.histogram_bin_edges, a, bins, range, weights)
    ex = executor(backend, a, weights)
    ex.check_bins(bins)
    x, w = validate.values(ex, a, weights)
    if ex.lazy:  # dask: lazy edges, the extent pass (when needed) in their graph
        (edges,) = ex.lazy_edges(lambda s, mm: [histogram_rule(s[0], bins, range, minmax=mm)], [x])
        return edges
    return ex.restore(histogram_rule(x, bins, range, minmax=ex.be.minmax, weights=w).edges.copy(), a)


def bincount(x, weights=None, minlength=0, *, backend=None):
    """Count each non-negative integer, exactly as :func:`numpy.bincount`.

    Returns int64 counts of length ``max(x.max() + 1, minlength)``; with weights,
    float64 sums. Raises NumPy's errors for negative values, non-integer input,
    mismatched weights and a ``minlength`` that is not an integer (None, float,
    str: NumPy's TypeError and message). Empty input gives ``minlength`` int64
    zeros, with or without weights, as NumPy.
    """
    minlength = validate.minlength(minlength)
    ex = executor(backend, x, weights)
    xa = ex.array(x, "x")
    if not ex.lazy and xa.size == 0 and xa.dtype.kind == "f" and not hasattr(x, "dtype"):
        xa = xa.astype(np.int64)  # an empty list is no float data (NumPy reads lists as intp)
    if xa.ndim != 1:
        raise ValueError("object too deep for desired array" if xa.ndim > 1 else
                         "object of too small depth for desired array")
    if xa.dtype.kind not in "biu":
        raise TypeError(f"Cannot cast array data from {xa.dtype!r} to dtype('int64') "
                        "according to the rule 'safe'")
    xa = check_data(xa, "x")
    w = validate.check_weights(ex, weights, xa, "biuf", "The weights and list don't have the same length.")
    ((lo, hi),) = ex.extents([xa])
    length = minlength
    if lo <= hi:  # not empty
        if lo < 0:
            raise ValueError("'list' argument must have no negative elements")
        length = max(length, int(hi) + 1)
    if xa.size == 0:
        w = None  # NumPy: int64 zeros, with or without weights
    op = ops.Op(ops.bincount, (), (length,), COUNT if w is None else SUM_F64, weighted=w is not None)
    (out,) = ex.run(op, xa, *([] if w is None else [w]))
    return ex.restore(out, x)


def cumsum(a, axis=None, dtype=None, out=None, *, exclusive=False, backend=None):
    """Prefix sums of ``a`` along ``axis``, as :func:`numpy.cumsum`.

    Parameters
    ----------
    a : array_like
        Values: bool, integer, float or complex (NumPy, CuPy or torch arrays, or
        anything :func:`numpy.asarray` takes). A 0-d array is scanned as shape ``(1,)``.
    axis : int, optional
        The axis to scan along (negative counts from the end); None (the default)
        scans the flattened array (C order) and returns a 1-D array.
    dtype : dtype, optional
        The accumulator and result dtype. The default is NumPy's: the input's, but
        int64 for smaller signed integers and bool, uint64 for smaller unsigned ones.
        Values are cast to it before they are added, as NumPy casts them.
    out : array, optional
        Where to put the result (its shape; the result is cast to its dtype), as NumPy's.
    exclusive : bool, optional
        Each element's sum of the values before it along the axis (0 first): the
        inclusive result shifted one place.
    backend : {"cpu", "cuda", "wgpu"}, optional
        Where to compute (default: the input's device, or ``$HOTBIN_BACKEND``).

    Returns
    -------
    out : array
        The shape of ``a`` (1-D with ``axis=None``), dtype as above, on ``a``'s device
        (``out`` itself when given).

    Raises
    ------
    numpy.exceptions.AxisError
        ``axis`` out of range for ``a``.
    TypeError
        ``axis`` not an integer; ``a`` or ``dtype`` not a number dtype, or a ``dtype``
        NumPy cannot accumulate ``a`` in.
    ValueError
        ``out`` of another shape than the result.

    Notes
    -----
    Integer scans are exact and wrap as NumPy's. Float scans follow one fixed
    association order on every backend, so every backend returns the same bits:
    lanes along the axis are cut into blocks of ``hotbin.core.scan_order.SCAN_BLOCK``
    (2048) values, each block is summed left to right, the block totals are chained
    left to right into offsets, and each block is scanned left to right from its
    offset (see :mod:`hotbin.core.scan_order`). Lanes up to a block long are
    therefore NumPy's sequential result bit for bit; longer ones agree with it to
    rounding. bool, float16 and complex results are computed by NumPy on the host in
    that same order. A dask array (chunk sizes known or not) gives a lazy dask array
    computed by one task (each lane must be whole for this order), so it must fit one worker.
    """
    ex = executor(backend, a)
    x = ex.array(a, "a")
    if x.dtype.kind not in "biufc":
        raise TypeError(f"a: cannot scan data of dtype {x.dtype}")
    try:
        od = np.cumsum(np.empty(0, x.dtype), dtype=dtype).dtype
    except TypeError as exc:
        raise TypeError(f"dtype: cannot accumulate {x.dtype} in {dtype!r} ({exc})") from None
    if od.kind not in "biufc":
        raise TypeError(f"dtype: cannot scan into {od}")
    if x.ndim == 0:
        x = x.reshape(1)
    if axis is not None:
        if isinstance(axis, (bool, np.bool_)):
            raise TypeError("axis: an integer is required, got a bool")
        try:
            axis = operator.index(axis)
        except TypeError:
            raise TypeError(f"axis: expected an integer or None, got {axis!r}") from None
        axis = np.lib.array_utils.normalize_axis_index(axis, x.ndim, "axis")
    if out is not None and ex.lazy:
        raise TypeError("out: not supported for dask input (the result is lazy)")
    # one lane whole per call: the block order of the scan (hotbin.core.scan_order) needs it
    shape = (x.size,) if axis is None else tuple(x.shape)
    res = ex.whole(lambda be, v: be.cumsum(v, axis, od, bool(exclusive)), x, shape=shape, dtype=od)
    res = ex.restore(res, a)
    if out is None:
        return res
    if tuple(out.shape) != tuple(res.shape):
        raise ValueError(f"out: shape {tuple(out.shape)} is not the result's {tuple(res.shape)}")
    out[...] = res
    return out
