"""Histogram objects: a result that plots, merges and pickles (GitHub issue #9).

:class:`Histogram` speaks UHI's ``PlottableHistogram`` protocol (``kind``,
``values()``, ``variances()``, ``counts()``, ``axes``), so plotting libraries that
accept boost-histogram or hist objects (mplhep, ...) accept it too. It is a
mergeable partial (STYLE.md §4): histograms of pieces of the data, added with
``+``, equal the histogram of all the data.

Counts are int64 and exact. Weighted histograms keep the sum of weights
(``values()``) and the sum of squared weights (``variances()``). With
``deterministic=True`` float weights are kept as fixed-point integer words
(:mod:`hotbin.fixedpoint`) and merged with its one combine rule, so a merge is
bitwise identical to one histogram over the concatenated data, in any order,
provided the partials share one fixed-point scale: build them with the same
``bounds=(max_abs_weight, total_count)`` (the default is the data's own, which
makes a single histogram equal ``hotbin.histogram(..., deterministic=True)``).

Dask inputs are counted on the cluster by :mod:`hotbin.distributed` (a partial
per chunk, tree-merged by the same rule) and give the same object, computed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import backend as _backends
from . import distributed, fixedpoint
from .api import _points
from .api import _weights as _check_weights
from .binning import check_data, histogram2d_rules, histogram_rule

__all__ = ["Histogram", "Axis", "Traits", "hist", "hist2d"]

_PLOT_HINT = 'plotting needs matplotlib: pip install "hotbin[plot]"'


@dataclass(frozen=True)
class Traits:
    """UHI axis traits: hotbin axes are plain intervals."""

    circular: bool = False
    discrete: bool = False


class Axis:
    """One axis: its edges (NumPy's, value and dtype), a label, UHI's sequence of ``(lo, hi)``."""

    def __init__(self, edges, label: str | None = None):
        edges = np.asarray(edges)
        if edges.ndim != 1 or edges.size < 2:
            raise ValueError(f"edges: expected at least two edges in a 1-D array, got shape {edges.shape}")
        self._edges = edges
        self.label = label

    @property
    def edges(self) -> np.ndarray:
        return self._edges.copy()

    @property
    def centers(self) -> np.ndarray:
        e = self._edges.astype(np.float64)
        return (e[:-1] + e[1:]) / 2

    @property
    def widths(self) -> np.ndarray:
        return np.diff(self._edges.astype(np.float64))

    @property
    def traits(self) -> Traits:
        return Traits()

    def __len__(self) -> int:
        return self._edges.size - 1

    def __getitem__(self, index: int) -> tuple[float, float]:
        n = len(self)
        i = int(index)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"bin {index} out of range for an axis of {n} bins")
        return float(self._edges[i]), float(self._edges[i + 1])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Axis) and _same_edges(self._edges, other._edges)

    __hash__ = None

    def __repr__(self) -> str:
        lab = f", label={self.label!r}" if self.label else ""
        return f"Axis({len(self)} bins from {self._edges[0]} to {self._edges[-1]}{lab})"


def _same_edges(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


class Histogram:
    """A 1-D or 2-D histogram: values, their variances and the axes' edges.

    Build one with :func:`hist` / :func:`hist2d`, or from arrays you already have:
    ``Histogram(values, edges)`` / ``Histogram(values, xedges, yedges)`` with
    optional ``variances=`` (for weighted data; omitted means counts).

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
        if len(edges) not in (1, 2):
            raise TypeError("Histogram: give the edges of one axis (1-D) or two axes (2-D)")
        labels = (None,) * len(edges) if axis_labels is None else tuple(axis_labels)
        if len(labels) != len(edges):
            raise ValueError(f"axis_labels: expected {len(edges)} labels, got {len(labels)}")
        self._axes = tuple(Axis(e, lab) for e, lab in zip(edges, labels))
        shape = tuple(len(ax) for ax in self._axes)
        if values.shape != shape:
            raise ValueError(f"values: expected shape {shape} from the edges, got {values.shape}")
        if variances is not None:
            variances = np.asarray(variances, np.float64)
            if variances.shape != shape:
                raise ValueError(f"variances: expected shape {shape}, got {variances.shape}")
        self._values = values
        self._variances = variances  # None: unweighted, the variance of a count is the count
        self._fixed = None  # deterministic: (words, scale, words2, scale2)
        self._unknown_variances = False  # weighted, but the sums of squares were not kept
        self.label = label

    @classmethod
    def _from_words(cls, edges, words, scale, words2, scale2, label, axis_labels):
        h = cls(fixedpoint.combine(words, scale), *edges,
                variances=fixedpoint.combine(words2, scale2), label=label, axis_labels=axis_labels)
        h._fixed = (np.asarray(words, np.int64), scale, np.asarray(words2, np.int64), scale2)
        return h

    @classmethod
    def from_heatmap(cls, hm, label: str | None = None) -> Histogram:
        """The 2-D histogram of a :class:`hotbin.Heatmap`: ``values()[ix, iy] == hm.counts[iy, ix]``.

        The edges are the heatmap's cells (``linspace`` of its ranges; its cells are
        half-open at the top too). A weighted heatmap keeps no sums of squared
        weights, so its histogram's ``variances()`` and ``counts()`` are None.
        """
        counts = np.asarray(_backends.to_host(hm.counts)).T
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
        return self._values.shape

    @property
    def weighted(self) -> bool:
        return self._variances is not None

    @property
    def deterministic(self) -> bool:
        return self._fixed is not None

    def values(self) -> np.ndarray:
        """Counts (int64) or sums of weights (float64; int64 for integer weights), ``[ix, iy]``."""
        return self._values.copy()

    def variances(self) -> np.ndarray | None:
        """Sums of squared weights; for an unweighted histogram the counts themselves.

        None when they are unknown (a histogram of a weighted heatmap).
        """
        if self._unknown_variances:
            return None
        if self._variances is None:
            return self._values.astype(np.float64)
        return self._variances.copy()

    def counts(self) -> np.ndarray | None:
        """Entries per bin; weighted: the effective count ``sum(w)**2 / sum(w**2)`` (UHI)."""
        if self._unknown_variances:
            return None
        if self._variances is None:
            return self._values.copy()
        s = self._values.astype(np.float64)
        return np.divide(s * s, self._variances, out=np.zeros_like(s), where=self._variances != 0)

    # --- conversions ------------------------------------------------------------
    def to_numpy(self):
        """``(values, edges)`` for 1-D, ``(values, xedges, yedges)`` for 2-D, as NumPy returns."""
        return (self.values(), *(ax.edges for ax in self._axes))

    def density(self) -> np.ndarray:
        """Values divided by their total and the bin areas (NumPy's ``density=True``)."""
        v = self._values.astype(np.float64)
        area = self._axes[0].widths
        if self.ndim == 2:
            area = area[:, None] * self._axes[1].widths[None, :]
        return v / area / v.sum()

    # --- merging partials ---------------------------------------------------------
    def __add__(self, other):
        if not isinstance(other, Histogram):
            return NotImplemented
        self._check_mergeable(other)
        edges = [ax._edges for ax in self._axes]
        labels = [ax.label for ax in self._axes]
        if self._fixed is not None:
            (w1, s, v1, s2), (w2, _, v2, _) = self._fixed, other._fixed
            return Histogram._from_words(edges, fixedpoint.merge(np.stack([w1, w2])), s,
                                         fixedpoint.merge(np.stack([v1, v2])), s2,
                                         self.label, labels)
        var = None if self._variances is None else self._variances + other._variances
        h = Histogram(self._values + other._values, *edges, variances=var, label=self.label,
                      axis_labels=labels)
        h._unknown_variances = self._unknown_variances or other._unknown_variances
        return h

    def __radd__(self, other):
        if isinstance(other, int) and other == 0:  # sum(partials)
            return self
        return NotImplemented

    def _check_mergeable(self, other: Histogram) -> None:
        if self.ndim != other.ndim:
            raise ValueError(f"cannot add a {other.ndim}-D histogram to a {self.ndim}-D one")
        for i, (a, b) in enumerate(zip(self._axes, other._axes)):
            if not _same_edges(a._edges, b._edges):
                raise ValueError(f"cannot add histograms with different edges on axis {i}: "
                                 f"{len(a)} bins [{a._edges[0]}, {a._edges[-1]}] ({a._edges.dtype}) vs "
                                 f"{len(b)} bins [{b._edges[0]}, {b._edges[-1]}] ({b._edges.dtype})")
        if self.weighted != other.weighted:
            raise ValueError("cannot add a weighted histogram to an unweighted one")
        if self.deterministic != other.deterministic:
            raise ValueError("cannot add a deterministic histogram to a non-deterministic one")
        if self._fixed is not None and (self._fixed[1], self._fixed[3]) != (other._fixed[1], other._fixed[3]):
            raise ValueError("cannot add deterministic histograms with different fixed-point scales; "
                             "build the partials with the same bounds=(max_abs_weight, total_count)")
        if self._values.dtype != other._values.dtype:
            raise ValueError(f"cannot add histograms of {self._values.dtype} and "
                             f"{other._values.dtype} values")

    # --- display --------------------------------------------------------------------
    def plot(self, ax=None, **kw):
        """Draw with matplotlib: a step outline (1-D) or an image with a colorbar (2-D).

        ``kw`` goes to ``Axes.stairs`` (1-D) or ``Axes.pcolormesh`` (2-D). Returns the
        matplotlib ``Axes``.
        """
        try:
            import matplotlib  # noqa: F401
        except ModuleNotFoundError as exc:
            raise ModuleNotFoundError(_PLOT_HINT) from exc
        if ax is None:
            import matplotlib.pyplot as plt

            ax = plt.gca()
        if self.ndim == 1:
            kw.setdefault("label", self.label)
            ax.stairs(self._values, self._axes[0]._edges, **kw)
        else:
            x, y = self._axes
            mesh = ax.pcolormesh(x._edges, y._edges, self._values.T, **kw)
            ax.figure.colorbar(mesh, ax=ax)
            if y.label:
                ax.set_ylabel(y.label)
            if self.label:
                ax.set_title(self.label)
        if self._axes[0].label:
            ax.set_xlabel(self._axes[0].label)
        return ax

    def __repr__(self) -> str:
        kind = "deterministic weighted" if self.deterministic else "weighted" if self.weighted else "count"
        lab = f", label={self.label!r}" if self.label else ""
        axes = ", ".join(repr(ax) for ax in self._axes)
        return f"Histogram({kind}, {axes}, sum={self._values.sum()}{lab})"


# --- builders -----------------------------------------------------------------------

def _scales(stats, w, deterministic, bounds):
    """Fixed-point scales of the weights and of their squares; None when not needed.

    ``stats()`` gives ``(max |w|, number of weights)`` of the data.
    """
    if bounds is not None and not deterministic:
        raise ValueError("bounds: only meaningful with deterministic=True")
    if not deterministic or w is None or w.dtype.kind != "f":
        return None
    m, n = stats()
    fixedpoint.scale_for(m, n)  # NaN or inf weights: the error names them
    count = n
    if bounds is not None:
        try:
            bound, count = float(bounds[0]), int(bounds[1])
        except (TypeError, ValueError, IndexError):
            raise ValueError(f"bounds: expected (max_abs_weight, total_count), got {bounds!r}") from None
        if m > bound or count < n:
            raise ValueError(f"bounds: {bounds!r} does not bound these weights "
                             f"(max |w| = {m}, count = {n})")
        m = bound
    return fixedpoint.scale_for(m, count), fixedpoint.scale_for(m * m, count)


@dataclass(frozen=True)
class _Source:
    """How to fill a histogram: in memory (a backend) or on dask (lazy partials, computed together)."""

    run: object  #: run(weights, scale) -> sums, or fixed-point words with a scale
    finish: object  #: finish(*results) -> NumPy arrays
    square: object  #: square(weights) -> float64 squared weights, same kind of array
    stats: object  #: stats() -> (max |w|, number of weights)


def _memory(be, run, w, n):
    return _Source(run, lambda *r: [np.asarray(_backends.to_host(x)) for x in r],
                   lambda ww: be.asarray(ww).astype(np.float64) ** 2, lambda: (be.max_abs(w), n))


def _dask(name, run, w, split_every):
    import dask

    return _Source(run, lambda *r: [np.asarray(x) for x in dask.compute(*r)],
                   lambda ww: ww.astype(np.float64) ** 2,
                   lambda: distributed._weight_stats(w, name, split_every))


def _build(src: _Source, edges, w, deterministic, bounds, label, axis_labels):
    if w is not None and w.dtype.kind == "c":
        raise TypeError("weights: complex weights have no variance; use hotbin.histogram for them")
    if w is None:
        _scales(src.stats, w, deterministic, bounds)  # argument checks only
        (v,) = src.finish(src.run(None, None))
        return Histogram(v, *edges, label=label, axis_labels=axis_labels)
    w2 = src.square(w)  # float64: integer squares could wrap
    scales = _scales(src.stats, w, deterministic, bounds)
    if scales is None:
        v, v2 = src.finish(src.run(w, None), src.run(w2, None))
        return Histogram(v, *edges, variances=v2, label=label, axis_labels=axis_labels)
    s, s2 = scales
    v, v2 = src.finish(src.run(w, s), src.run(w2, s2))
    return Histogram._from_words(edges, v, s, v2, s2, label, axis_labels)


def hist(a, bins=10, range=None, weights=None, *, backend=None, deterministic=False,
         bounds=None, label=None, xlabel=None) -> Histogram:
    """The histogram of ``a`` (flattened) as a :class:`Histogram`.

    Same binning as :func:`hotbin.histogram` (NumPy's edges and rule: half-open
    bins, the last one closed; NaN and out-of-range values not counted).

    Parameters
    ----------
    a, bins, range, weights, backend
        As :func:`hotbin.histogram`; complex weights are refused (no variance).
        Dask arrays and dask dataframe columns are histogrammed on their cluster
        (:mod:`hotbin.distributed`) and the result computed.
    deterministic : bool
        Keep float weights in fixed point: values and variances are bitwise
        reproducible, and ``+`` of partials built with the same ``bounds`` is
        bitwise equal to one histogram of all the data.
    bounds : (float, int), optional
        ``(max_abs_weight, total_count)`` over every partial to be merged; fixes
        the fixed-point scale (:func:`hotbin.fixedpoint.scale_for`). Default: this
        data's own ``max |w|`` and size.
    label, xlabel : str, optional
        Title/legend label and axis label (a pandas Series' name by default).

    Returns
    -------
    Histogram
        ``values()`` int64 counts (float64 sums of float weights, int64 of integer
        weights); ``variances()`` float64 sums of squared weights.
    """
    xlabel = xlabel if xlabel is not None else _name(a)
    if distributed.is_dask(a, weights):
        rule, _, w, name, run = distributed._histogram_plan(a, bins, range, weights, backend, None)
        src = _dask(name, run, w, None)
    else:
        be = _backends.select(backend, a, weights)
        x = check_data(be.asarray(a), "a")
        w = _check_weights(be, weights, x.shape)
        rule = histogram_rule(x, bins, range, minmax=be.minmax, weights=w)
        src = _memory(be, lambda ww, s: be.histogram(x, rule, ww, s), w, int(x.size))
    return _build(src, [rule.edges], w, deterministic, bounds, label, [xlabel])


def hist2d(x, y, bins=10, range=None, weights=None, *, backend=None, deterministic=False,
           bounds=None, label=None, xlabel=None, ylabel=None) -> Histogram:
    """The 2-D histogram of points ``(x, y)`` as a :class:`Histogram` (``values()[ix, iy]``).

    Binning as :func:`hotbin.histogram2d` (NumPy's); other parameters as :func:`hist`.
    """
    labels = [xlabel if xlabel is not None else _name(x), ylabel if ylabel is not None else _name(y)]
    if distributed.is_dask(x, y, weights):
        rx, ry, w, name, run = distributed._histogram2d_plan(x, y, bins, range, weights, backend, None)
        src = _dask(name, run, w, None)
    else:
        be = _backends.select(backend, x, y, weights)
        xa, ya, w = _points(be, x, y, weights)
        rx, ry = histogram2d_rules(xa, ya, bins, range, minmax=be.minmax)
        src = _memory(be, lambda ww, s: be.histogram2d(xa, ya, rx, ry, ww, s)[0], w, int(xa.size))
    return _build(src, [rx.edges, ry.edges], w, deterministic, bounds, label, labels)


def _name(a):
    name = getattr(a, "name", None)
    return name if isinstance(name, str) else None
