"""xarray: histograms over named dimensions, with xhistogram's names.

``histogram(da, bins=, range=, dim=)`` (and ``da.hotbin.histogram(...)``) counts the
values of one DataArray, or the joint values of several (a 2-D histogram of two),
over the dimensions in ``dim`` and keeps the others: one histogram per kept
position. The result follows xhistogram's conventions: it is named
``histogram_<name>[_<name2>...]``, its dims are the kept dims (in the order they
first appear in the inputs) then one ``<name>_bin`` dim per input, whose
coordinate is the bin centres (with the input's attrs); ``dim=None`` reduces
every dim. One unnamed array gives a ``bin`` dim and a result named ``histogram``
(xhistogram refuses it). Counts are int64; weighted sums as :func:`hotbin.histogramdd` gives
them; ``density=True`` divides each kept position's histogram by its own total
and the bin areas (NaN where it holds nothing).

The counting is :func:`hotbin.histogramdd` over one extra axis, the kept
position: a point at position ``k`` has coordinate ``k`` there, with edges
``0, 1, ..., K``, so one pass over the data gives every position's histogram
under hotbin's exact bin rule. Dask-backed inputs give a dask-backed result:
one such pass per chunk, summed over the chunks of the reduced dims, nothing
computed until asked; their bin edges must then be known without the data
(edges, or a number of bins with ``range``).

Importing this module registers the ``hotbin`` accessor on ``xarray.DataArray``;
``import hotbin`` arranges that it happens as soon as xarray is imported
(:mod:`hotbin.xr.hook`), so ``da.hotbin`` works whichever is imported first.
"""
from __future__ import annotations

import numbers

import numpy as np
import xarray as xr

from .api import histogram_bin_edges, histogramdd

__all__ = ["histogram", "HotbinAccessor", "register"]


def histogram(*args, bins=10, range=None, dim=None, weights=None, density=False):
    """Histogram of one or more named DataArrays over the dimensions ``dim``.

    Parameters
    ----------
    *args : xarray.DataArray
        One array per histogram axis, each named (the name makes the
        ``<name>_bin`` coordinate; one unnamed array gives ``bin`` and a result
        named ``histogram``); aligned exactly and broadcast together.
    bins : int, str, edges, or a sequence with one of these per array
        As :func:`hotbin.histogram` for each array; the edges are shared by all
        kept positions. Dask-backed arrays need edges, or ints with ``range``.
    range : (float, float), or a sequence with one (or None) per array, optional
        The outer edges; values outside (and NaN) are not counted.
    dim : str or sequence of str, optional
        The dims reduced; the others are kept. None reduces them all.
    weights : xarray.DataArray, optional
        One weight per value, broadcast against the arrays.
    density : bool
        Each kept position's histogram divided by its total and the bin areas.

    Returns
    -------
    xarray.DataArray
        Dims: the kept dims, then ``<name>_bin`` per array; the kept dims'
        coordinates and the bin centres as coordinates. Dask-backed when an
        input is.
    """
    if not args:
        raise TypeError("histogram: needs at least one DataArray")
    for i, a in enumerate(args):
        if not isinstance(a, xr.DataArray):
            raise TypeError(f"args[{i}]: expected an xarray.DataArray, got {type(a).__name__}")
        if a.name is None and len(args) > 1:
            raise ValueError(f"args[{i}]: the DataArray needs a name (the result's '<name>_bin' dim)")
    if weights is not None and not isinstance(weights, xr.DataArray):
        raise TypeError(f"weights: expected an xarray.DataArray, got {type(weights).__name__}")
    names = [str(a.name) for a in args] if args[0].name is not None else []
    if len(set(names)) < len(names):
        raise ValueError(f"args: the DataArrays need different names, got {names}")
    arrays = [a.reset_coords(drop=True) for a in args]
    if weights is not None:
        arrays.append(weights.reset_coords(drop=True))
    arrays = list(xr.align(*arrays, join="exact"))
    every = list(dict.fromkeys(d for a in arrays for d in a.dims))
    reduced = _reduced(dim, every)
    kept = [d for d in every if d not in reduced]
    arrays = [a.transpose(*[d for d in kept + reduced if d in a.dims]) for a in xr.broadcast(*arrays)]
    lazy = any(_is_dask(a.data) for a in arrays)
    w = arrays.pop() if weights is not None else None
    specs = list(zip(_per_array(bins, len(args), "bins"), _per_array(range, len(args), "range")))
    edges = [_edges(a, b, r, w, lazy, n) for a, (b, r), n in zip(arrays, specs, names or ["data"])]
    # bins as given where they are regular (hotbin's regular path, NumPy's same edges), else edges
    axes = [(b, r) if isinstance(b, numbers.Integral) and r is not None else (e, None)
            for (b, r), e in zip(specs, edges)]
    nk = len(kept)
    if lazy:
        h = _lazy_counts(arrays, w, axes, edges, nk)
    else:
        h = _counts([a.data for a in arrays], None if w is None else w.data, axes, edges, nk)
    if density:
        h = _density(h, edges)
    bin_dims = [n + "_bin" for n in names] or ["bin"]  # one unnamed array: "bin", "histogram"
    coords = {d: args[0].coords[d] for d in kept if d in args[0].coords and d in args[0].dims}
    for a in args[1:]:
        coords.update({d: a.coords[d] for d in kept if d in a.coords and d in a.dims and d not in coords})
    for bd, e, a in zip(bin_dims, edges, args):
        coords[bd] = xr.Variable(bd, (e[:-1] + e[1:]) / 2, a.attrs)
    return xr.DataArray(h, dims=kept + bin_dims, coords=coords, name="_".join(["histogram", *names]))


def _reduced(dim, every) -> list:
    """The dims of ``dim`` in the inputs' order; a ValueError naming a dim the inputs lack."""
    if dim is None:
        return list(every)
    dims = [dim] if isinstance(dim, str) else list(dim)
    missing = [d for d in dims if d not in every]
    if missing:
        raise ValueError(f"dim: {missing[0]!r} is not a dimension of the inputs {tuple(every)}")
    return [d for d in every if d in dims]


def _per_array(spec, n, name) -> list:
    """``bins`` / ``range`` as one entry per array: a list or tuple of ``n`` entries is read
    as one per array, as :func:`numpy.histogramdd` reads it, unless it is a single
    ``(lo, hi)`` range or, for one array, a list of edges."""
    if isinstance(spec, (list, tuple)) and len(spec) == n:
        if name == "range":
            per = all(s is None or isinstance(s, (list, tuple, np.ndarray)) for s in spec)
        else:
            per = n > 1 or not isinstance(spec[0], numbers.Real) or isinstance(spec[0], numbers.Integral)
        if per:
            return list(spec)
    return [spec] * n


def _edges(a, bins, range, w, lazy, name) -> np.ndarray:
    """The edges of one array: NumPy's, from the data in memory, else from ``bins`` and ``range``."""
    if not lazy:
        return np.asarray(histogram_bin_edges(a.data, bins, range,
                                              None if w is None else w.data))
    if isinstance(bins, str) or (isinstance(bins, numbers.Integral) and range is None):
        raise ValueError(f"range: {name!r} is dask-backed; give range= with bins={bins!r}, or bin "
                         "edges, so the bins are known without computing the data")
    return np.asarray(histogram_bin_edges(np.empty(0, a.dtype), bins, range))


def _is_dask(x) -> bool:
    return type(x).__module__.split(".")[0] == "dask"


def _counts(data, w, axes, edges, nk):
    """Histograms of in-memory blocks shaped ``(kept..., reduced...)``: ``(kept..., bins...)``.

    The kept position is one more histogram axis, ``npos`` bins over ``[0, npos]``
    (position ``k`` in ``[k, k + 1)``), so :func:`hotbin.histogramdd` counts every
    position in one pass. ``axes``: ``(bins, range)`` per array.
    """
    shape = np.shape(data[0])
    kshape, npos = shape[:nk], int(np.prod(shape[:nk], dtype=np.int64))
    nbins = tuple(len(e) - 1 for e in edges)
    cols = [np.reshape(np.asarray(a), -1) for a in data]
    wf = None if w is None else np.reshape(np.asarray(w), -1)
    if npos == 0:
        return np.zeros(kshape + nbins, _dtype([c.dtype for c in cols], wf, edges))
    if npos > 1:
        per = len(cols[0]) // npos
        cols = [np.repeat(np.arange(npos, dtype=np.min_scalar_type(npos)), per), *cols]
        axes = [(npos, (0, npos)), *axes]
    h, _ = histogramdd(cols, bins=[b for b, _ in axes], range=[r for _, r in axes], weights=wf)
    return np.reshape(h, kshape + nbins)


def _dtype(dtypes, w, edges) -> np.dtype:
    """The dtype :func:`hotbin.histogramdd` gives these inputs (one point: the weights' sum type)."""
    one = [np.zeros(1, t) for t in dtypes]
    return histogramdd(one, bins=edges, weights=None if w is None else np.zeros(1, w.dtype))[0].dtype


def _lazy_counts(arrays, w, axes, edges, nk):
    """:func:`_counts` per chunk of dask-backed arrays, summed over the reduced dims' chunks."""
    import dask.array as da

    data = [da.asarray(a.data) for a in arrays] + ([da.asarray(w.data)] if w is not None else [])
    ndim = data[0].ndim
    ind = tuple(range(ndim))
    nbins = [len(e) - 1 for e in edges]
    new = {ndim + i: n for i, n in enumerate(nbins)}
    dtype = _dtype([a.dtype for a in arrays], w, edges)
    nred = ndim - nk
    weighted = w is not None

    def block(*blocks):
        parts = list(blocks)
        wb = parts.pop() if weighted else None
        h = _counts(parts, wb, axes, edges, nk)
        return h.reshape(h.shape[:nk] + (1,) * nred + h.shape[nk:])

    args = [x for d in data for x in (d, ind)]
    h = da.blockwise(block, ind + tuple(new), *args, new_axes=new,
                     adjust_chunks={i: 1 for i in range(nk, ndim)},
                     meta=np.empty((0,) * (ndim + len(nbins)), dtype), dtype=dtype)
    return h.sum(axis=tuple(range(nk, ndim)), dtype=dtype)


def _density(h, edges):
    """Each kept position's histogram over its own total and the bin areas; NaN where empty."""
    areas = np.diff(edges[0])
    for e in edges[1:]:
        areas = np.multiply.outer(areas, np.diff(e))
    total = h.sum(axis=tuple(range(-len(edges), 0)), keepdims=True)
    if _is_dask(h):
        import dask.array as da

        total = da.where(total == 0, np.nan, total)
    else:
        total = np.where(total == 0, np.nan, total)
    return h / areas / total  # 0 / NaN is NaN, without a warning


class HotbinAccessor:
    """``DataArray.hotbin``: hotbin's counting on a DataArray, by its dims' names."""

    def __init__(self, obj):
        self._obj = obj

    def histogram(self, *others, bins=10, range=None, dim=None, weights=None, density=False):
        """:func:`hotbin.xarray.histogram` of this array (and ``others``, for a joint histogram)."""
        return histogram(self._obj, *others, bins=bins, range=range, dim=dim, weights=weights,
                         density=density)


def register() -> None:
    """Register ``DataArray.hotbin`` (once: a second call leaves it as it is)."""
    if getattr(xr.DataArray, "hotbin", None) is HotbinAccessor:  # the class reads as the accessor
        return
    xr.register_dataarray_accessor("hotbin")(HotbinAccessor)


register()
