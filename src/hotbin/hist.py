"""Histogram objects: a result that plots, merges and pickles.

:class:`Histogram` speaks UHI's ``PlottableHistogram`` protocol and its indexing, so
tools that take boost-histogram or hist objects (mplhep, ...) take it too. It is a
mergeable partial: histograms of pieces of the data, added with ``+``, equal the
histogram of all the data.

Nothing is lost: every axis has an underflow and an overflow bin (NaN goes
to overflow, as in boost-histogram), read with ``values(flow=True)``, added by
``+``, kept by :meth:`Histogram.fill` and by UHI indexing (:mod:`hotbin.hist_index`).
``boost_histogram.Histogram(h)`` and ``hist.Hist(h)`` convert through UHI's
serialization (``h._to_uhi_()``; :meth:`Histogram.from_uhi` reads it back).

Counts are int64 and exact. Weighted histograms keep the sums of weights
(``values()``) and of squared weights (``variances()``; ``inf`` beyond float64).
With ``deterministic=True`` float weights are kept as fixed-point integer words
(:mod:`hotbin.core.fixedpoint`), so a merge is bitwise identical to one histogram
over the concatenated data, in any order, when the partials share one scale (the
same ``bounds=(max_abs_weight, total_count)``). Dask inputs are counted on the
cluster (:mod:`hotbin.exec.dask`) and give the same object, computed.
"""
from __future__ import annotations

import numpy as np

from .core import arrays, fixedpoint
from . import hist_index, histfill
from .core.axis import Axis, Traits, same_edges
from .histfill import Fixed

__all__ = ["Histogram", "Axis", "Traits", "hist", "hist2d"]


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a.dtype == b.dtype and a.shape == b.shape and bool(
        np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


class Histogram:
    """A histogram: values, their variances, the axes' edges and flow bins.

    Build one with :func:`hist` / :func:`hist2d`, from a UHI dict (:meth:`from_uhi`), or
    from arrays: ``Histogram(values, edges)`` / ``Histogram(values, xedges, yedges)`` (any
    number of axes; hotbin fills 1-D and 2-D ones) with optional ``variances=`` (weighted
    data). ``values`` has one entry per bin (flow bins empty) or two more per axis.
    ``h[bh.loc(0.2):bh.loc(0.8):bh.rebin(2)]``, ``h[::sum]`` index as boost-histogram.

    Attributes
    ----------
    axes : tuple of :class:`Axis`
    kind : ``"COUNT"``
    label : str or None
    deterministic : bool
        float weights kept in fixed point: merges are exact and order independent.
    """

    kind = "COUNT"

    def __init__(self, values, *edges, variances=None, label: str | None = None,
                 axis_labels=None):
        values = np.asarray(values)
        if not edges:
            raise TypeError("Histogram: give the edges of at least one axis")
        labels = (None,) * len(edges) if axis_labels is None else tuple(axis_labels)
        if len(labels) != len(edges):
            raise ValueError(f"axis_labels: expected {len(edges)} labels, got {len(labels)}")
        self._axes = tuple(Axis(e, lab) for e, lab in zip(edges, labels))
        self._values = self._with_flow(values, "values")
        if variances is not None:
            variances = self._with_flow(np.asarray(variances, np.float64), "variances")
        self._variances = variances  # None: unweighted, the variance of a count is the count
        self._fixed = None  # deterministic: (words, words2), layout, (max |w|, n) so far
        self._rules = None  # the rules that filled it (kept for fill)
        self._unknown_variances = False  # weighted, but the sums of squares were not kept
        self.label = label

    def _with_flow(self, a: np.ndarray, name: str) -> np.ndarray:
        inner = tuple(len(ax) for ax in self._axes)
        if a.shape == tuple(n + 2 for n in inner):
            return a
        if a.shape != inner:
            raise ValueError(f"{name}: expected shape {inner} from the edges (or "
                             f"{tuple(n + 2 for n in inner)} with flow bins), got {a.shape}")
        return np.pad(a, 1)

    @classmethod
    def _from_words(cls, edges, words, words2, layout: Fixed, stats, label, axis_labels):
        h = cls(fixedpoint.combine(words, layout.scale), *edges,
                variances=fixedpoint.combine(words2, layout.scale2), label=label,
                axis_labels=axis_labels)
        h._fixed = ((np.asarray(words, np.int64), np.asarray(words2, np.int64)), layout, stats)
        return h

    @classmethod
    def from_heatmap(cls, hm, label: str | None = None) -> Histogram:
        """The 2-D histogram of a :class:`hotbin.Heatmap`: ``values()[ix, iy] == hm.counts[iy, ix]``.

        The edges are the heatmap's cells (the top ones closed or open as its ``x_closed`` /
        ``y_closed`` say). A heatmap keeps only ``dropped``, not where: the flow bins are
        empty. A weighted one keeps no sums of squares: ``variances()``, ``counts()`` are None.
        """
        counts = np.asarray(arrays.to_host(hm.counts)).T
        weighted = counts.dtype.kind == "f"
        h = cls(counts, hm.x_edges, hm.y_edges, label=label, axis_labels=("x", "y"),
                variances=np.full(counts.shape, np.nan) if weighted else None)
        h._unknown_variances = weighted
        return h

    # --- UHI PlottableHistogram -------------------------------------------------
    @property
    def axes(self) -> tuple[Axis, ...]:
        return self._axes

    @property
    def ndim(self) -> int:
        return len(self._axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(ax) for ax in self._axes)

    @property
    def weighted(self) -> bool:
        return self._variances is not None

    @property
    def deterministic(self) -> bool:
        return self._fixed is not None

    def _view(self, a: np.ndarray, flow: bool) -> np.ndarray:
        return a.copy() if flow else a[(slice(1, -1),) * self.ndim].copy()

    def values(self, flow: bool = False) -> np.ndarray:
        """Counts (int64) or sums of weights (float64; int64 for integer weights), ``[ix, iy]``.

        ``flow=True`` adds the underflow (index 0) and overflow (index -1) bins of each axis.
        """
        return self._view(self._values, flow)

    def variances(self, flow: bool = False) -> np.ndarray | None:
        """Sums of squared weights; for an unweighted histogram the counts themselves.

        None when they are unknown (a histogram of a weighted heatmap); ``inf``
        where the sum exceeds float64.
        """
        if self._unknown_variances:
            return None
        if self._variances is None:
            return self._view(self._values, flow).astype(np.float64)
        return self._view(self._variances, flow)

    def counts(self, flow: bool = False) -> np.ndarray | None:
        """Entries per bin; weighted: the effective count ``sum(w)**2 / sum(w**2)`` (UHI)."""
        if self._unknown_variances:
            return None
        if self._variances is None:
            return self.values(flow)
        s = self.values(flow).astype(np.float64)
        var = self.variances(flow)
        with np.errstate(over="ignore"):
            return np.divide(s * s, var, out=np.zeros_like(s), where=var != 0)

    # --- conversions ------------------------------------------------------------
    def to_numpy(self, flow: bool = False):
        """``(values, edges)`` for 1-D, ``(values, xedges, yedges)`` for 2-D, as NumPy returns."""
        return (self.values(flow), *(ax.edges for ax in self._axes))

    def density(self) -> np.ndarray:
        """Values divided by their total and the bin areas (NumPy's ``density=True``)."""
        v = self.values().astype(np.float64)
        area = np.ones(())
        for ax in self._axes:
            area = np.multiply.outer(area, ax.widths)
        return v / area / v.sum()

    def _to_uhi_(self) -> dict:
        """This histogram in the UHI serialization schema (``uhi.io``), flow bins included
        (see :func:`hotbin.uhi.serialize`): ``boost_histogram.Histogram(h)`` and
        ``hist.Hist(h)`` build from it."""
        from .uhi import serialize

        return serialize(self)

    @classmethod
    def from_uhi(cls, ir) -> Histogram:
        """A histogram from a UHI dict (``uhi.io``, ``obj._to_uhi_()``): :func:`hotbin.uhi.deserialize`."""
        from .uhi import deserialize

        return deserialize(ir, cls)

    def _to_boost_histogram_(self):
        """A ``boost_histogram.Histogram`` (the hook ``boost_histogram.Histogram(h)`` calls)."""
        import boost_histogram

        return boost_histogram.Histogram(self._to_uhi_())

    # --- UHI indexing ---------------------------------------------------------------
    def __getitem__(self, index):
        """A histogram, or a scalar where no axis is left (:func:`hotbin.hist_index.getitem`)."""
        return hist_index.getitem(self, index)

    def __setitem__(self, index, value) -> None:
        """Set bins in place, flow bins by boost-histogram's rule (:func:`hotbin.hist_index.setitem`)."""
        hist_index.setitem(self, index, value)

    # --- merging and filling ------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        """Same contents: edges (values and dtypes), values and variances, flow bins included."""
        if not isinstance(other, Histogram):
            return NotImplemented
        return (self.ndim == other.ndim and all(a == b for a, b in zip(self._axes, other._axes))
                and _same(self._values, other._values)
                and _same(self.variances(flow=True), other.variances(flow=True)))

    __hash__ = None

    def __add__(self, other):
        if not isinstance(other, Histogram):
            return NotImplemented
        self._check_mergeable(other)
        edges = [ax._edges for ax in self._axes]
        labels = [ax.label for ax in self._axes]
        if self._fixed is not None:
            ((w1, v1), layout, (m1, n1)), ((w2, v2), _, (m2, n2)) = self._fixed, other._fixed
            stats = (max(m1, m2), n1 + n2)
            if not layout.fits(*stats):
                raise ValueError(f"cannot add deterministic histograms of {stats[1]} weights up to "
                                 f"{stats[0]}: their fixed-point scale could overflow; build the "
                                 "partials with bounds=(max_abs_weight, total_count) covering all")
            h = Histogram._from_words(edges, fixedpoint.merge(np.stack([w1, w2])),
                                      fixedpoint.merge(np.stack([v1, v2])), layout, stats,
                                      self.label, labels)
        else:
            var = None if self._variances is None else self._variances + other._variances
            h = Histogram(self._values + other._values, *edges, variances=var, label=self.label,
                          axis_labels=labels)
            h._unknown_variances = self._unknown_variances or other._unknown_variances
        h._rules = self._rules
        return h

    def __radd__(self, other):
        if isinstance(other, int) and other == 0:  # sum(partials)
            return self
        return NotImplemented

    def _check_mergeable(self, other: Histogram) -> None:
        if self.ndim != other.ndim:
            raise ValueError(f"cannot add a {other.ndim}-D histogram to a {self.ndim}-D one")
        for i, (a, b) in enumerate(zip(self._axes, other._axes)):
            if not same_edges(a._edges, b._edges):
                raise ValueError(f"cannot add histograms with different edges on axis {i}: "
                                 f"{len(a)} bins [{a._edges[0]}, {a._edges[-1]}] ({a._edges.dtype}) vs "
                                 f"{len(b)} bins [{b._edges[0]}, {b._edges[-1]}] ({b._edges.dtype})")
        if self.weighted != other.weighted:
            raise ValueError("cannot add a weighted histogram to an unweighted one")
        if self.deterministic != other.deterministic:
            raise ValueError("cannot add a deterministic histogram to a non-deterministic one")
        if self._fixed is not None and self._fixed[1] != other._fixed[1]:
            raise ValueError("cannot add deterministic histograms with different fixed-point scales; "
                             "build the partials with the same bounds=(max_abs_weight, total_count)")
        if self._values.dtype != other._values.dtype:
            raise ValueError(f"cannot add histograms of {self._values.dtype} and "
                             f"{other._values.dtype} values")

    def fill(self, *data, weight=None, backend=None) -> Histogram:
        """Add data to this histogram in place (UHI's ``fill``); returns it.

        ``h.fill(a, weight=w)`` leaves ``h`` equal to ``h + hist(a, bins=h.axes[0].edges,
        weights=w)`` (2-D: ``h.fill(x, y)``), under the same rule, flow bins included.
        A weighted histogram filled without ``weight`` takes weights of 1. A
        deterministic one keeps its fixed-point scale: the new weights must fit the
        ``bounds`` it was built with (a ValueError says so otherwise).
        """
        if len(data) != self.ndim or self.ndim > 2:
            raise TypeError("fill: hotbin fills 1-D and 2-D histograms" if self.ndim > 2 else
                            f"fill: expected {self.ndim} array(s) of coordinates, got {len(data)}")
        if weight is None and self.weighted:
            weight = np.ones(np.shape(data[0]), np.int64 if self._values.dtype.kind == "i" else np.float64)
        elif weight is not None and not self.weighted:
            raise ValueError("weight: this histogram holds counts; build it with weights to fill weights")
        edges = [ax._edges for ax in self._axes]
        src, w = histfill.source(data, weight, edges if self.ndim == 2 else edges[0], None, backend,
                                 self._rules)
        layout = self._fixed[1] if self._fixed is not None else False
        merged = self + _build(src, w, layout, None, None, [None] * self.ndim)
        for key in ("_values", "_variances", "_fixed", "_unknown_variances"):
            setattr(self, key, getattr(merged, key))
        return self

    # --- display --------------------------------------------------------------------
    def plot(self, ax=None, **kw):
        """Draw with matplotlib, returning the ``Axes`` (:func:`hotbin.uhi.plot`)."""
        from .uhi import plot

        return plot(self, ax, **kw)

    def _repr_html_(self) -> str:
        """An inline SVG plot and a summary table, for Jupyter (:func:`hotbin.uhi.html`)."""
        from .uhi import html

        return html(self)

    def __repr__(self) -> str:
        kind = "deterministic weighted" if self.deterministic else "weighted" if self.weighted else "count"
        lab = f", label={self.label!r}" if self.label else ""
        axes = ", ".join(repr(ax) for ax in self._axes)
        return f"Histogram({kind}, {axes}, sum={self.values().sum()}{lab})"


# --- builders -----------------------------------------------------------------------

def _build(src, w, deterministic, bounds, label, axis_labels) -> Histogram:
    """The histogram of a :class:`hotbin.histfill.Source`; ``deterministic`` may be a layout."""
    edges = [r.edges for r in src.rules]
    if w is not None and w.dtype.kind == "c":
        raise TypeError("weights: complex weights have no variance; use hotbin.histogram for them")
    if w is None:
        histfill.layout(src.stats, w, deterministic, bounds)  # argument checks only
        (v,) = histfill.fill(src, [(None, None)])
        h = Histogram(v, *edges, label=label, axis_labels=axis_labels)
    elif isinstance(deterministic, Fixed) and w.dtype.kind == "f":
        h = _fixed(src, w, deterministic, src.stats(), label, axis_labels)
    else:
        layout = histfill.layout(src.stats, w, deterministic, bounds)
        if layout is None:
            v, v2 = histfill.fill(src, [(w, None), (src.square(w, 0), None)])
            h = Histogram(v, *edges, variances=v2, label=label, axis_labels=axis_labels)
        else:
            h = _fixed(src, w, layout, src.stats(), label, axis_labels)
    h._rules = src.rules
    return h


def _fixed(src, w, layout: Fixed, stats, label, axis_labels) -> Histogram:
    if not layout.fits(*stats):
        raise ValueError(f"weight: {stats[1]} weights up to {stats[0]} do not fit this deterministic "
                         "histogram's fixed-point scale; build it with bounds=(max_abs_weight, "
                         "total_count) covering all the data")
    v, v2 = histfill.fill(src, [(w, layout.scale),
                                (src.square(w, layout.shift), layout.scale2 + 2 * layout.shift)])
    return Histogram._from_words([r.edges for r in src.rules], v, v2, layout, stats, label,
                                 axis_labels)


def hist(a, bins=10, range=None, weights=None, *, backend=None, deterministic=False,
         bounds=None, label=None, xlabel=None) -> Histogram:
    """The histogram of ``a`` (flattened) as a :class:`Histogram`.

    Same binning as :func:`hotbin.histogram` (NumPy's edges and rule: half-open
    bins, the last one closed). Values below the first edge go to the underflow
    bin, values above the last one and NaN to the overflow bin
    (``values(flow=True)``).

    Parameters
    ----------
    a, bins, range, weights, backend
        As :func:`hotbin.histogram`; complex weights are refused (no variance).
        Dask arrays and dask dataframe columns are histogrammed on their cluster
        (:mod:`hotbin.exec.dask`) and the result computed.
    deterministic : bool
        Keep float weights in fixed point: values and variances are bitwise
        reproducible, and ``+`` of partials built with the same ``bounds`` is
        bitwise equal to one histogram of all the data. Any finite weights work,
        subnormal to ``1.8e308``; variances beyond float64 (weights from about
        ``1e154``) are ``inf``, the values stay exact.
    bounds : (float, int), optional
        ``(max_abs_weight, total_count)`` over every partial to be merged (or
        filled); fixes the fixed-point scale (:func:`hotbin.core.fixedpoint.scale_for`).
        Default: this data's own ``max |w|`` and size.
    label, xlabel : str, optional
        Title/legend label and axis label (a pandas Series' name by default).

    Returns
    -------
    Histogram
        ``values()`` int64 counts (float64 sums of float weights, int64 of integer
        weights); ``variances()`` float64 sums of squared weights.
    """
    xlabel = xlabel if xlabel is not None else _name(a)
    src, w = histfill.source([a], weights, bins, range, backend)
    return _build(src, w, deterministic, bounds, label, [xlabel])


def hist2d(x, y, bins=10, range=None, weights=None, *, backend=None, deterministic=False,
           bounds=None, label=None, xlabel=None, ylabel=None) -> Histogram:
    """The 2-D histogram of points ``(x, y)`` as a :class:`Histogram` (``values()[ix, iy]``).

    Binning as :func:`hotbin.histogram2d` (NumPy's), flow bins on both axes;
    other parameters as :func:`hist`.
    """
    labels = [xlabel if xlabel is not None else _name(x), ylabel if ylabel is not None else _name(y)]
    src, w = histfill.source([x, y], weights, bins, range, backend)
    return _build(src, w, deterministic, bounds, label, labels)


def _name(a):
    name = getattr(a, "name", None)
    return name if isinstance(name, str) else None
