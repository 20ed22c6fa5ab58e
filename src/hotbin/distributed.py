"""Dask: histograms of arrays and dataframe columns that do not fit one machine (issue #7).

Every function here follows DESIGN.md §6 and STYLE.md §4 (mergeable partials):

1. **One bin rule, computed once.** The rule of the whole data comes from
   :mod:`hotbin.binning`, exactly as in memory. When it needs the data's extent
   (no ``range``), one extra pass computes ``(min, max)`` per chunk with the
   backend's ``minmax`` and reduces them; never an error.
2. **A partial per chunk** with the backend primitives (``be.histogram(chunk,
   rule, weights, scale)``, ``be.histogram2d``, ``be.bincount``), run on the
   workers; the backend is loaded by name on the worker.
3. **A tree reduction** (:func:`dask.array.reduction`, ``split_every`` partials
   per merge) with the one combine rule: integer addition, or
   :func:`hotbin.fixedpoint.merge` for fixed-point words.

Results are lazy dask arrays with NumPy edges, like :func:`dask.array.histogram`;
only the extent pass (and, with ``deterministic=True``, the pass for
``max |w|`` and ``n``) runs at call time.

Determinism: integer counts are exact under any chunking. With
``deterministic=True`` float weights are quantized with the fixed-point scale of
the *global* ``max |w|`` and weight count (the scale of the in-memory call), so
every chunking gives words whose sum is the same integer, and the result is
bitwise identical to ``hotbin.histogram(..., deterministic=True)`` on the same
data in memory. Without it, float sums may differ in the last bits with the
chunking.

Inputs are ``dask.array`` arrays (any shape, chunks, NumPy or CuPy blocks) and
dask dataframe columns (dask Series; partitions of unknown length work). Needs
``pip install "hotbin[dask]"``.
"""
from __future__ import annotations

import functools
import importlib
import operator
import os
import sys

import numpy as np

from . import backend as _backends
from . import fixedpoint
from .sums import fits_int64, weighted
from .binning import cell_rule, check_data, exact_counts, histogram2d_rules, histogram_rule
from .ranges import check_cells, check_clip, check_closed, data_range, given_range, percentile_ranges

__all__ = ["is_dask", "histogram", "histogram2d", "bincount", "heatmap", "luminance_histogram"]

_HINT = 'hotbin.distributed needs dask: pip install "hotbin[dask]"'


def is_dask(*objs) -> bool:
    """True when any of ``objs`` is a dask array or a dask dataframe collection (Series, DataFrame).

    Cheap when dask was never imported: then nothing can be a dask collection.
    """
    if "dask" not in sys.modules:
        return False
    from dask.base import is_dask_collection

    arrays = sys.modules.get("dask.array")
    return any(o is not None and is_dask_collection(o)
               and ((arrays is not None and isinstance(o, arrays.Array)) or hasattr(type(o), "to_dask_array"))
               for o in objs)


def _da():
    try:
        import dask.array as da
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(_HINT) from exc
    return da


# --- inputs -----------------------------------------------------------------------

def _as_array(obj, name):
    """A dask array of ``obj``: dask arrays as they are, dask Series/DataFrames by partition."""
    da = _da()
    if isinstance(obj, da.Array):
        return obj
    if is_dask(obj):
        to_array = getattr(obj, "to_dask_array", None)
        if to_array is None:
            raise TypeError(f"{name}: expected a dask array or a dask dataframe column, "
                            f"got {type(obj).__name__}")
        return to_array()
    return da.asarray(_backends.to_host(obj))


def _align(x, other, name):
    """``other`` chunked like ``x`` (same shape required), so blocks pair up."""
    known = not any(np.isnan(c) for cs in x.chunks + other.chunks for c in cs)
    if known:
        if x.shape != other.shape:
            raise ValueError(f"{name}: shape {other.shape} does not match {x.shape}")
        return other if other.chunks == x.chunks else other.rechunk(x.chunks)
    if other.numblocks != x.numblocks:
        raise ValueError(f"{name}: {other.numblocks} partitions do not match {x.numblocks}; "
                         "take both columns from one dataframe")
    return other


def _backend_name(backend, *arrays) -> str:
    """The backend's name, chosen on the client like :func:`hotbin.backend.select`.

    It is loaded (and its requirements checked) on the workers, which may have
    devices the client lacks.
    """
    name = backend or os.environ.get(_backends.ENV) or None
    if name is None:
        name = "cuda" if any(_backends.on_gpu(a._meta) for a in arrays if a is not None) else "cpu"
    if name not in _backends.NAMES:
        raise ValueError(f"backend: unknown backend {name!r}; choose one of {', '.join(_backends.NAMES)}")
    return name


def _data(obj, name):
    """Dask array of histogrammable values: the dtype checked now, bool counted as uint8."""
    x = _as_array(obj, name)
    if x.ndim == 0:
        x = x.reshape(1)
    check_data(np.empty(0, x.dtype), name)
    return x.astype(np.uint8) if x.dtype == np.bool_ else x


def _weights(weights, x, kinds="biufc"):
    if weights is None:
        return None
    w = _as_array(weights, "weights")
    if w.dtype.kind not in kinds:
        what = "real or complex" if "c" in kinds else "real"
        raise TypeError(f"weights: expected {what} numbers, got dtype {w.dtype}")
    w = _align(x, w, "weights")
    return w.astype(np.int64) if w.dtype == np.bool_ else w


# --- partials per block, merged by a tree ---------------------------------------------

def _block(out, ndim):
    """A block's partial, left on the device that computed it (merged there; see :func:`_tree`)."""
    out = out if _backends.on_gpu(out) else np.asarray(out)
    return out.reshape((1,) * ndim + out.shape)


def _xp(a):
    """The array module of ``a`` (CuPy for device arrays)."""
    return importlib.import_module("cupy") if _backends.on_gpu(a) else np


def _on_host(x, axis=None, keepdims=False, *, merge):
    """The last merge of the tree, its result on the host (results are NumPy-backed)."""
    return np.asarray(_backends.to_host(merge(x, axis=axis, keepdims=keepdims)))


def _keep(x, axis=None, keepdims=True):
    return x


def _sum(x, axis=None, keepdims=False):
    return x.sum(axis=axis, keepdims=keepdims)


def _sum_exact(x, axis=None, keepdims=False):
    """Integer sums merged exactly (Python integers, on the host): int64, or an
    OverflowError naming the bin whose total does not fit, never a wrapped sum."""
    total = np.asarray(_backends.to_host(x)).astype(object).sum(axis=axis, keepdims=keepdims)
    return fits_int64(np.asarray(total))


def _merge_words(x, axis=None, keepdims=False):
    """fixedpoint.merge over the block axes (the leading ones), on the host."""
    nd = len(axis)
    words = fixedpoint.merge(np.asarray(_backends.to_host(x)).reshape((-1,) + x.shape[nd:]))
    return words.reshape((1,) * nd + words.shape) if keepdims else words


def _merge_extent(x, axis=None, keepdims=False):
    """(min of lows, max of highs) over the block axes; NaN propagates as in ``a.min()``."""
    lo = np.min(x[..., 0], axis=axis, keepdims=keepdims)
    hi = np.max(x[..., 1], axis=axis, keepdims=keepdims)
    return np.stack([lo, hi], axis=-1)


def _tree(block_fn, arrays, out_shape, dtype, merge, split_every):
    """``block_fn(*blocks)`` on every block (shape ``(1,)*ndim + out_shape``), tree-merged.

    Partials stay on the device that computed them (GPU workers merge CuPy
    partials on the GPU; only partials that change workers and the final result
    cross to the host), and the final merge returns NumPy.
    """
    da = _da()
    x = arrays[0]
    nd, k = x.ndim, len(out_shape)
    chunks = tuple((1,) * len(c) for c in x.chunks) + tuple((s,) for s in out_shape)
    meta = np.empty((0,) * (nd + k), dtype)
    parts = da.map_blocks(block_fn, *arrays, chunks=chunks, new_axis=list(range(nd, nd + k)),
                          dtype=dtype, meta=meta, token="hotbin-partial")
    return da.reduction(parts, _keep, functools.partial(_on_host, merge=merge), combine=merge,
                        axis=tuple(range(nd)),
                        split_every=split_every, dtype=dtype, concatenate=True,
                        meta=np.empty((0,) * k, dtype), name="hotbin-merge")


def _block_extent(x, *, backend, ndim):
    """(min, max) of one block in its dtype; an empty block gives (top, bottom) of the dtype."""
    be = _backends.load(backend)
    xa = be.asarray(x)
    if xa.size:
        lo, hi = be.minmax(xa)
    elif xa.dtype.kind == "f":
        lo, hi = np.inf, -np.inf
    else:
        info = np.iinfo(xa.dtype)
        lo, hi = info.max, info.min
    return _block(np.array([lo, hi], xa.dtype), ndim)


def _block_weight_scale(w, *, backend, ndim):
    """(max |w|, number of weights) of one block, as float64."""
    be = _backends.load(backend)
    wa = be.asarray(w)
    return _block(np.array([be.max_abs(wa) if wa.size else 0.0, wa.size], np.float64), ndim)


def _merge_weight_scale(x, axis=None, keepdims=False):
    m = np.max(x[..., 0], axis=axis, keepdims=keepdims)
    n = np.sum(x[..., 1], axis=axis, keepdims=keepdims)
    return np.stack([m, n], axis=-1)


def _extents(arrays, backend, split_every):
    """``(lo, hi)`` of each array, in one pass; ``lo > hi`` means the array is empty."""
    import dask

    lazy = [_tree(functools.partial(_block_extent, backend=backend, ndim=a.ndim), [a], (2,), a.dtype,
                  _merge_extent, split_every) for a in arrays]
    return [tuple(v) for v in dask.compute(*lazy)]


def _weight_stats(w, backend, split_every) -> tuple[float, int]:
    """``(max |w|, number of weights)`` of the whole array, in one pass now."""
    m, n = _tree(functools.partial(_block_weight_scale, backend=backend, ndim=w.ndim), [w], (2,),
                 np.float64, _merge_weight_scale, split_every).compute()
    return float(m), int(n)


def _scale(w, backend, deterministic, split_every):
    """The global fixed-point scale (one pass for max |w| and n), or None."""
    if not deterministic or w is None or w.dtype.kind != "f":
        return None
    return fixedpoint.scale_for(*_weight_stats(w, backend, split_every))


def _rules(build, arrays, backend, split_every):
    """Bin rules from ``build(stand_ins, minmax)``: the binning module sees stand-ins.

    A stand-in has the array's dtype and holds the data's extent ``[lo, hi]`` (or
    nothing for empty data), which is all the rule reads of the data. A first
    call finds out which arrays' extents the rule needs; only those are computed
    (one pass).
    """
    needed = []

    def probe(v):
        needed.append(v)
        return v.dtype.type(0), v.dtype.type(1)

    sizes = [a.size for a in arrays]  # NaN when partitions have unknown lengths
    stand = [np.zeros(0 if s == 0 else 1, a.dtype) for a, s in zip(arrays, sizes)]
    rules = build(stand, probe)
    if not needed:
        return rules
    which = [i for i, s in enumerate(stand) if any(s is v for v in needed)]
    for i, (lo, hi) in zip(which, _extents([arrays[i] for i in which], backend, split_every)):
        dt = arrays[i].dtype
        stand[i] = np.empty(0, dt) if lo > hi else np.array([lo, hi], dt)
    return build(stand, lambda v: (v[0], v[1]))


def _check_bins(bins):
    if isinstance(bins, str):
        raise ValueError(f"bins: the string rule {bins!r} needs all the data in memory; "
                         "give dask data a number of bins (the range is found in one pass) or edges")


def _weighted(run, w, backend, deterministic, split_every):
    """``run(weights, scale)`` -> lazy sums; complex weights are two real runs.

    With a scale, the partials are fixed-point words merged by fixedpoint.merge
    and turned into float64 by fixedpoint.combine.
    """
    if w is not None and w.dtype.kind == "c":
        return (_weighted(run, w.real, backend, deterministic, split_every)
                + 1j * _weighted(run, w.imag, backend, deterministic, split_every))
    s = _scale(w, backend, deterministic, split_every)
    out = run(w, s)
    if s is None:
        return out
    return out.map_blocks(fixedpoint.combine, s, drop_axis=0, dtype=np.float64,
                          meta=np.empty((0,) * (out.ndim - 1), np.float64))


def _sum_dtype(w):
    return np.dtype(np.int64) if w is None or w.dtype.kind in "biu" else np.dtype(np.float64)


def _sum_merge(w):
    """How partial sums of weights ``w`` merge: integer weights exactly (their int64 sums
    could wrap), everything else by addition."""
    return _sum_exact if w is not None and w.dtype.kind in "iu" else _sum


# --- histogram --------------------------------------------------------------------------------

def _hist_block(x, w=None, *, rule, scale, backend, ndim):
    be = _backends.load(backend)
    xa = check_data(be.asarray(x), "a")
    wa = None
    if w is not None:
        wa = be.asarray(w)
        if tuple(wa.shape) != tuple(xa.shape):
            raise ValueError("weights should have the same shape as a.")
    def count(ww, s):  # exact integer ranges, as in memory
        return exact_counts(rule, be.histogram(xa, rule, ww, s), lambda sub: be.histogram(xa, sub, ww, s))

    # integer weights: a block's sums exact or an OverflowError, as in memory
    return _block(count(wa, scale) if scale is not None else weighted(count, be, wa, False), ndim)


def histogram(a, bins=10, range=None, weights=None, density=False, *, backend=None,
              deterministic=False, split_every=None):
    """:func:`hotbin.histogram` of a dask array or dask dataframe column.

    Returns ``(hist, edges)``: ``hist`` a lazy dask array (int64 counts, float64
    or int64 sums, complex128 for complex weights), ``edges`` NumPy's edges
    (value and dtype) as a NumPy array. Same rule, NaN and out-of-range handling,
    errors and dtypes as in memory; ``bins`` as a string rule is refused (it
    needs all the data). ``range=None`` costs one pass over the data now.

    ``deterministic=True``: float weights summed in fixed point with the scale of
    the global ``max |w|`` and count (one more pass now): bitwise identical to the
    in-memory result for any chunking. ``split_every``: partials merged per tree
    node (dask's default when None). Integer weights never wrap: each block's sums
    are exact (an ``OverflowError`` naming the bin if one does not fit in int64)
    and the tree merges them exactly (the same error if a total does not fit).
    """
    rule, _, w, name, run = _histogram_plan(a, bins, range, weights, backend, split_every)
    hist = _weighted(run, w, name, deterministic, split_every)
    if density:
        hist = hist / np.diff(rule.edges).astype(float) / hist.sum()
    return hist, rule.edges.copy()


def _histogram_plan(a, bins, range, weights, backend, split_every):
    """The rule and ``run(weights, scale)`` -> lazy merged sums (words with a scale)."""
    _check_bins(bins)
    x = _data(a, "a")
    w = _weights(weights, x)
    name = _backend_name(backend, x, w)
    (rule,) = _rules(lambda s, mm: [histogram_rule(s[0], bins, range, minmax=mm)], [x], name,
                     split_every)
    nb = rule.nbins

    def run(ww, s):
        fn = functools.partial(_hist_block, rule=rule, scale=s, backend=name, ndim=x.ndim)
        if s is not None:
            return _tree(fn, [x, ww], (2, nb), np.int64, _merge_words, split_every)
        return _tree(fn, [x] if ww is None else [x, ww], (nb,), _sum_dtype(ww), _sum_merge(ww),
                     split_every)

    return rule, x, w, name, run


# --- histogram2d ---------------------------------------------------------------------------------

def _hist2d_block(x, y, w=None, *, rules, scale, backend):
    be = _backends.load(backend)
    xa, ya = check_data(be.asarray(x), "x"), check_data(be.asarray(y), "y")
    if xa.shape != ya.shape:
        raise ValueError("x and y must have the same length.")
    wa = None
    if w is not None:
        wa = be.asarray(w)
        if tuple(wa.shape) != tuple(xa.shape):
            raise ValueError("weights should have the same shape as a.")
    def count(ww, s):
        return be.histogram2d(xa, ya, *rules, ww, s)[0]

    return _block(count(wa, scale) if scale is not None else weighted(count, be, wa, False), 1)


def histogram2d(x, y, bins=10, range=None, weights=None, density=False, *, backend=None,
                deterministic=False, split_every=None):
    """:func:`hotbin.histogram2d` of dask arrays / dataframe columns: ``(H, xedges, yedges)``.

    ``H[ix, iy]`` is a lazy dask array (int64 counts; float64 sums); edges are
    NumPy's. Missing ranges cost one pass now; determinism as :func:`histogram`.
    """
    rx, ry, w, name, run = _histogram2d_plan(x, y, bins, range, weights, backend, split_every)
    H = _weighted(run, w, name, deterministic, split_every)
    if density:
        H = H / np.diff(rx.edges)[:, None] / np.diff(ry.edges)[None, :] / H.sum()
    return H, rx.edges, ry.edges


def _histogram2d_plan(x, y, bins, range, weights, backend, split_every):
    """The two rules and ``run(weights, scale)`` -> lazy merged grid (words with a scale)."""
    for b in (bins if isinstance(bins, (list, tuple)) else [bins]):
        _check_bins(b)
    xa, ya = _data(x, "x"), _data(y, "y")
    if xa.ndim != 1 or ya.ndim != 1:
        raise ValueError("x and y must be 1-D arrays")
    ya = _align(xa, ya, "y")
    w = _weights(weights, xa)
    name = _backend_name(backend, xa, ya, w)
    rx, ry = _rules(lambda s, mm: histogram2d_rules(s[0], s[1], bins, range, minmax=mm), [xa, ya],
                    name, split_every)
    shape = (rx.nbins, ry.nbins)

    def run(ww, s):
        fn = functools.partial(_hist2d_block, rules=(rx, ry), scale=s, backend=name)
        arrays = [xa, ya] if ww is None else [xa, ya, ww]
        if s is not None:
            return _tree(fn, arrays, (2, *shape), np.int64, _merge_words, split_every)
        return _tree(fn, arrays, shape, _sum_dtype(ww), _sum_merge(ww), split_every)

    return rx, ry, w, name, run


# --- bincount --------------------------------------------------------------------------------------

def _bincount_block(x, w=None, *, length, backend):
    be = _backends.load(backend)
    xa = be.asarray(x)
    wa = None
    if w is not None:
        wa = be.asarray(w)
        if wa.shape != xa.shape:
            raise ValueError("The weights and list don't have the same length.")
    return _block(be.bincount(check_data(xa), length, wa), 1)


def bincount(x, weights=None, minlength=0, *, backend=None, split_every=None):
    """:func:`hotbin.bincount` of a 1-D dask array / column: a lazy dask array.

    The output length depends on the data's maximum: one pass computes it now
    (and checks for negative values, raising NumPy's error).
    """
    xa = _as_array(x, "x")
    if xa.ndim != 1:
        raise ValueError("object too deep for desired array" if xa.ndim > 1 else
                         "object of too small depth for desired array")
    if xa.dtype.kind not in "biu":  # as hotbin.bincount
        raise TypeError(f"Cannot cast array data from {xa.dtype!r} to dtype('int64') "
                        "according to the rule 'safe'")
    if xa.dtype == np.bool_:
        xa = xa.astype(np.uint8)
    minlength = int(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    w = _weights(weights, xa, kinds="biuf")
    name = _backend_name(backend, xa, w)
    ((lo, hi),) = _extents([xa], name, split_every)
    length = minlength
    if lo <= hi:  # not empty
        if lo < 0:
            raise ValueError("'list' argument must have no negative elements")
        length = max(length, int(hi) + 1)
    fn = functools.partial(_bincount_block, length=length, backend=name)
    dtype = np.int64 if w is None else np.float64
    return _tree(fn, [xa] if w is None else [xa, w], (length,), dtype, _sum, split_every)


# --- heatmap ---------------------------------------------------------------------------------------

def _block_finite_extent(x, *, backend, ndim):
    """(min, max) of the finite values of one block as float64; (inf, -inf) when none."""
    be = _backends.load(backend)
    xa = be.asarray(x)
    lo = hi = None
    if xa.size:
        lo, hi = be.minmax(xa)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            v = np.asarray(_backends.to_host(xa)).ravel()
            v = v[np.isfinite(v)]
            lo, hi = (v.min(), v.max()) if v.size else (None, None)
    if lo is None:
        return _block(np.array([np.inf, -np.inf]), ndim)
    return _block(np.array([lo, hi], np.float64), ndim)


def _heatmap_block(x, y, w=None, *, rules, scale, backend):
    """Partial heatmap packed with its bookkeeping: ``[cells..., points..., kept, n]``.

    ``points`` (the count grid beside weighted sums) only with weights; with
    ``scale`` the sums are fixed-point words and the integers sit in the hi word.
    """
    be = _backends.load(backend)
    xa, ya = check_data(be.asarray(x), "x"), check_data(be.asarray(y), "y")
    if xa.shape != ya.shape:
        raise ValueError(f"y: has {ya.shape[0]} points but x has {xa.shape[0]}")
    points, kept = be.histogram2d(ya, xa, *rules)
    if w is None:
        xp = _xp(points)
        return xp.concatenate([points.reshape(-1), xp.asarray([kept, xa.shape[0]], np.int64)]
                              ).reshape(1, -1)
    wa = be.asarray(w)
    if wa.shape != xa.shape:
        raise ValueError(f"weights: expected one weight per point ({xa.shape[0]}), got {wa.shape[0]}")
    if scale is None:  # integer weights: exact, or an OverflowError naming the cell
        grid = weighted(lambda ww, s: be.histogram2d(ya, xa, *rules, ww, s)[0], be, wa, False)
    else:
        grid, _ = be.histogram2d(ya, xa, *rules, wa, scale)
    if scale is None:
        xp = _xp(grid)
        tail = xp.asarray([kept, xa.shape[0]], grid.dtype)
        return xp.concatenate([grid.reshape(-1), points.reshape(-1).astype(grid.dtype), tail]).reshape(1, -1)
    grid = np.asarray(_backends.to_host(grid))
    # counts are integers: in the hi word with a zero lo word, fixedpoint.merge sums them exactly
    ints = np.concatenate([np.asarray(_backends.to_host(points)).reshape(-1), [kept, xa.shape[0]]])
    words = np.concatenate([grid.reshape(2, -1), np.stack([ints, np.zeros_like(ints)])], axis=1)
    return words.reshape((1,) + words.shape)


def _percentile_pass(arrays, split_every):
    """``run_pass`` of :func:`hotbin.ranges.percentile_ranges` over dask arrays: a tree on the workers."""
    import dask

    blocks = list(zip(*(a.to_delayed().ravel() for a in arrays)))
    k = max(int(split_every or 8), 2)

    def run(fn, merge):
        parts = [dask.delayed(fn)(*b) for b in blocks]
        while len(parts) > 1:
            parts = [dask.delayed(merge)(parts[i:i + k]) for i in range(0, len(parts), k)]
        return parts[0].compute() if parts else merge([])
    return run


def heatmap(x, y, weights=None, *, width=512, height=512, x_range=None, y_range=None, clip=None,
            closed=None, backend=None, deterministic=False, split_every=None):
    """:func:`hotbin.heatmap` of dask arrays / dataframe columns, computed: a :class:`hotbin.Heatmap`.

    Same cells (closed ranges from the data), half-open rule for given ranges,
    ``dropped`` accounting, ``points`` and dtypes as in memory. Missing ranges
    cost one pass (the finite extent, :func:`hotbin.ranges.data_range`); with
    ``clip`` they cost two to four passes of an exact radix selection instead
    (:func:`hotbin.ranges.percentile_ranges`: the same percentiles as in
    memory). ``deterministic=True`` sums float weights in fixed point with the
    global scale: bitwise identical to the in-memory heatmap under any chunking.
    Float sums carry the point counts in float64 (exact below 2**53 points).
    """
    hm = importlib.import_module(f"{__package__}.heatmap")  # hotbin.heatmap is also the function

    xa, ya = _data(x, "x"), _data(y, "y")
    if xa.ndim != 1 or ya.ndim != 1:
        raise ValueError(f"x, y: expected 1-D arrays, got shapes {xa.shape} and {ya.shape}")
    ya = _align(xa, ya, "y")
    w = _weights(weights, xa, kinds="biuf")
    width, height = check_cells(width, height, weighted=w is not None)
    given = [given_range(r, f"{a}_range") if r is not None else None
             for a, r in (("x", x_range), ("y", y_range))]
    xc, yc = check_closed(closed, given)
    q = check_clip(clip)
    name = _backend_name(backend, xa, ya, w)
    todo = [i for i, r in enumerate(given) if r is None]
    if todo:
        import dask

        arrays = [(xa, ya)[i] for i in todo]
        if q is not None:
            found = percentile_ranges(_percentile_pass(arrays, split_every), len(arrays), q)
        else:
            lazy = [_tree(functools.partial(_block_finite_extent, backend=name, ndim=1), [a], (2,),
                          np.float64, _merge_extent, split_every) for a in arrays]
            found = [None if lo > hi else (lo, hi) for lo, hi in dask.compute(*lazy)]
        for i, ext in zip(todo, found):
            given[i] = (0.0, 1.0) if ext is None else data_range(*ext, "xy"[i])
    xr, yr = given
    rules = (cell_rule(height, *yr, "height", yc), cell_rule(width, *xr, "width", xc))
    ncell = width * height
    s = _scale(w, name, deterministic, split_every)
    fn = functools.partial(_heatmap_block, rules=rules, scale=s, backend=name)
    arrays = [xa, ya] if w is None else [xa, ya, w]
    nout = ncell if w is None else 2 * ncell
    if s is not None:
        words = _tree(fn, arrays, (2, nout + 2), np.int64, _merge_words, split_every).compute()
        grid, packed = fixedpoint.combine(words[:, :ncell], s), words[0]
    else:
        packed = _tree(fn, arrays, (nout + 2,), _sum_dtype(w), _sum_merge(w), split_every).compute()
        grid = packed[:ncell]
    kept, n = packed[nout:]
    points = None
    if w is not None:
        grid = grid.astype(np.float64)
        points = packed[ncell:nout].astype(np.int64).reshape(height, width)
    return hm.Heatmap(grid.reshape(height, width), int(n) - int(kept), xr, yr, xc, yc, points)


# --- images ------------------------------------------------------------------------------------------

def _luma_block(img, *, bins, backend, batch):
    from .images import luminance_histogram as lh

    h = np.asarray(_backends.to_host(lh(img, bins, backend=backend)))
    return h.reshape((h.shape[0], 1, 1, 1, bins) if batch else (1,) * img.ndim + (bins,))


def luminance_histogram(image, bins=256, *, backend=None, split_every=None):
    """:func:`hotbin.luminance_histogram` of a dask image or batch: a lazy int64 dask array.

    ``(H, W)``, ``(H, W, C)`` or ``(N, H, W, C)`` chunked any way (the channel
    axis is gathered into one chunk); per-chunk histograms of the luma levels are
    summed, so the counts are exact and equal the in-memory ones.
    """
    from .images import luminance_histogram as lh

    da = _da()
    a = _as_array(image, "image")
    nb = operator.index(bins)
    if a.ndim not in (2, 3, 4):
        raise ValueError(f"image: expected (H, W), (H, W, C) or a batch (N, H, W, C), got shape {a.shape}")
    probe = np.zeros((1,) * (a.ndim - 1) + (a.shape[-1] if a.ndim >= 3 else 1,), a.dtype)
    lh(probe if a.ndim >= 3 else probe.reshape(1, 1), nb)  # the in-memory checks and errors, now
    if a.ndim >= 3:
        a = a.rechunk({a.ndim - 1: -1})
    name = _backend_name(backend, a)
    batch = a.ndim == 4
    fn = functools.partial(_luma_block, bins=nb, backend=name, batch=batch)
    if not batch:
        return _tree(fn, [a], (nb,), np.int64, _sum, split_every)
    chunks = (a.chunks[0],) + tuple((1,) * len(c) for c in a.chunks[1:]) + ((nb,),)
    parts = da.map_blocks(fn, a, chunks=chunks, new_axis=4, dtype=np.int64,
                          meta=np.empty((0,) * 5, np.int64), token="hotbin-luma")
    return da.reduction(parts, _keep, _sum, combine=_sum, axis=(1, 2, 3), split_every=split_every,
                        dtype=np.int64, concatenate=True, meta=np.empty((0, 0), np.int64),
                        name="hotbin-merge")
