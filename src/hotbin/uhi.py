"""A :class:`hotbin.Histogram` as other tools take it: UHI's serialization, matplotlib, HTML.

:func:`serialize` writes the ``uhi.io`` schema boost-histogram and hist build from (and
``uhi.io.json`` / ``uhi.io.zip`` write to files); :func:`deserialize` reads it back, from
hotbin, boost-histogram or hist; :func:`plot` draws with matplotlib
(``pip install "hotbin[plot]"``); :func:`html` is the notebook view with an inline SVG plot.
"""
from __future__ import annotations

from html import escape

import numpy as np

__all__ = ["serialize", "deserialize", "plot", "html"]

_PLOT_HINT = 'plotting needs matplotlib: pip install "hotbin[plot]"'


def serialize(h) -> dict:
    """This histogram in the UHI serialization schema (``uhi.io``), flow bins included.

    Axes are ``variable`` axes of the exact edges (integers stay integers; the dtype is
    in the axis' ``writer_info``) with underflow and overflow; storage ``int`` (counts),
    ``weighted`` (sums and sums of squares) or ``double`` (sums with unknown variances),
    the sums' dtype in ``writer_info``. ``boost_histogram.Histogram(h)`` and
    ``hist.Hist(h)`` build from it. A deterministic histogram is written as its values:
    read back it is weighted, not deterministic.
    """
    from . import __version__

    axes = [{"type": "variable", "edges": ax.edges if ax.edges.dtype.kind in "iu" else ax.edges.astype(float),
             "underflow": True, "overflow": True, "circular": False,
             "writer_info": {"hotbin": {"dtype": str(ax.edges.dtype)}},
             **({"metadata": {"label": ax.label}} if ax.label else {})}
            for ax in h.axes]
    values = h.values(flow=True)
    if not h.weighted:
        storage = {"type": "int", "values": values}
    elif h.variances() is None:  # sums whose squares were not kept
        storage = {"type": "double", "values": values}
    else:
        storage = {"type": "weighted", "values": values, "variances": h.variances(flow=True)}
    info = {"version": __version__, "values_dtype": str(values.dtype)}
    out = {"uhi_schema": 1, "writer_info": {"hotbin": info}, "axes": axes, "storage": storage}
    if h.label:
        out["metadata"] = {"label": h.label}
    return out


def _edges(ax: dict) -> np.ndarray:
    """The edges of a serialized ``regular`` or ``variable`` axis (the dtype hotbin wrote);
    a ``regular`` axis of integer ends and unit bins (boost-histogram's ``Integer``) gives int64."""
    kind, dtype = ax["type"], ax.get("writer_info", {}).get("hotbin", {}).get("dtype")
    if ax.get("circular"):
        raise ValueError(f"axes: a circular {kind} axis has no hotbin equivalent")
    if kind == "variable":
        e = np.asarray(ax["edges"])
    elif kind == "regular":
        lo, hi, n = ax["lower"], ax["upper"], int(ax["bins"])
        whole = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (lo, hi))
        if whole and hi - lo == n:
            e = np.arange(lo, hi + 1, dtype=np.int64)
        else:  # boost-histogram's formula, so that the edges are its own
            z = np.arange(n + 1) / n
            e = (1 - z) * float(lo) + z * float(hi)
    else:
        raise ValueError(f"axes: a {kind} axis has no hotbin equivalent (regular and variable axes only)")
    return e.astype(dtype) if dtype else e


def deserialize(ir, cls):
    """A ``cls`` (:class:`hotbin.Histogram`: call ``Histogram.from_uhi(ir)``) from a UHI dict:
    :func:`serialize`'s, boost-histogram's or hist's ``_to_uhi_()``, or what ``uhi.io.json``
    / ``uhi.io.zip`` read (dense or sparse).

    Regular and variable axes; storages ``int``, ``weighted`` and ``double`` (sums whose
    variances are unknown). A flow bin the axis lacks reads as empty (hotbin axes have both).
    """
    if hasattr(ir, "_to_uhi_"):
        ir = ir._to_uhi_()
    if not isinstance(ir, dict) or ir.get("uhi_schema") != 1:
        raise ValueError("ir: expected a UHI histogram dict with uhi_schema 1")
    storage = ir["storage"]
    if "index" in storage:  # sparse: the filled bins only
        try:
            from uhi.io import from_sparse
        except ImportError as exc:
            raise ModuleNotFoundError("a sparse UHI histogram needs uhi.io.from_sparse: "
                                      "pip install -U uhi") from exc
        storage = from_sparse(ir)["storage"]
    kind, axes = storage["type"], ir["axes"]
    if kind not in ("int", "double", "weighted"):
        raise ValueError(f"storage: a {kind} storage has no hotbin equivalent (int, double, weighted)")
    dtype = ir.get("writer_info", {}).get("hotbin", {}).get("values_dtype")

    def full(a, dt):
        a = np.asarray(a, dt)
        for i, ax in enumerate(axes):
            pad = [(0, 0)] * a.ndim
            pad[i] = (0 if ax.get("underflow", True) else 1, 0 if ax.get("overflow", True) else 1)
            a = np.pad(a, pad)
        return a

    values = full(storage["values"], dtype or (np.int64 if kind == "int" else np.float64))
    variances = None
    if kind != "int":
        variances = (full(storage["variances"], np.float64) if kind == "weighted"
                     else np.full(values.shape, np.nan))
    h = cls(values, *[_edges(ax) for ax in axes], variances=variances,
            label=(ir.get("metadata") or {}).get("label"),
            axis_labels=[(ax.get("metadata") or {}).get("label") for ax in axes])
    h._unknown_variances = kind == "double"
    return h


def plot(h, ax=None, **kw):
    """Draw with matplotlib: a step outline (1-D) or an image with a colorbar (2-D).

    ``kw`` goes to ``Axes.stairs`` (1-D) or ``Axes.pcolormesh`` (2-D). Returns the
    matplotlib ``Axes``.
    """
    try:
        import matplotlib  # noqa: F401  (the hint names the extra)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(_PLOT_HINT) from exc
    if h.ndim > 2:
        raise ValueError(f"plot: draws 1-D and 2-D histograms, this one is {h.ndim}-D")
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.gca()
    if h.ndim == 1:
        kw.setdefault("label", h.label)
        ax.stairs(h.values(), h.axes[0].edges, **kw)
    else:
        x, y = h.axes
        mesh = ax.pcolormesh(x.edges, y.edges, h.values().T, **kw)
        ax.figure.colorbar(mesh, ax=ax)
        if y.label:
            ax.set_ylabel(y.label)
        if h.label:
            ax.set_title(h.label)
    if h.axes[0].label:
        ax.set_xlabel(h.axes[0].label)
    return ax


_W, _H = 320, 120  # the inline plot's size, in CSS pixels
_COLUMNS = 1000  # at most this many columns (bins, or groups of bins) are drawn


def _groups(n: int, most: int):
    """Starts of groups of neighbouring bins, at most ``most`` of them."""
    k = -(-n // most)
    return np.arange(0, n, k), k


def _steps(h) -> str:
    """A 1-D histogram as an SVG step outline: bin ``i``'s top is at ``y = H - v_i / max * H``
    (values below zero go below the baseline); more bins than :data:`_COLUMNS` are drawn a
    group of neighbours per column, at the group's largest value."""
    v = np.nan_to_num(h.values().astype(np.float64), posinf=0.0, neginf=0.0)
    e = h.axes[0].edges.astype(np.float64)
    starts, k = _groups(v.size, _COLUMNS)
    if k > 1:
        v, e = np.maximum.reduceat(v, starts), np.r_[e[starts], e[-1]]
    span = e[-1] - e[0]
    x = (e - e[0]) / span * _W if np.isfinite(span) and span > 0 else np.linspace(0, _W, e.size)
    lo, hi = min(v.min(), 0.0), max(v.max(), 0.0)
    y = _H - (v - lo) / ((hi - lo) or 1.0) * _H
    base = _H - (0 - lo) / ((hi - lo) or 1.0) * _H
    steps = [p for i in range(v.size) for p in ((x[i], y[i]), (x[i + 1], y[i]))]
    points = " ".join(f"{a:.2f},{b:.2f}" for a, b in [(x[0], base), *steps, (x[-1], base)])
    return (f'<polyline class="hotbin-steps" points="{points}" fill="#4c72b0" fill-opacity="0.25" '
            'stroke="#4c72b0" stroke-width="1"/>')


def _cells(h) -> str:
    """A 2-D histogram as SVG cells (x right, y up), each as opaque as its value is large."""
    v = np.nan_to_num(h.values().astype(np.float64), posinf=0.0, neginf=0.0)
    for axis in (0, 1):
        starts, k = _groups(v.shape[axis], 100)
        if k > 1:
            v = np.add.reduceat(v, starts, axis=axis)
    nx, ny = v.shape
    top = np.abs(v).max() or 1.0
    w, hh = _W / nx, _H / ny
    return "".join(f'<rect x="{i * w:.2f}" y="{_H - (j + 1) * hh:.2f}" width="{w:.2f}" height="{hh:.2f}" '
                   f'fill="#4c72b0" fill-opacity="{abs(v[i, j]) / top:.3f}"/>'
                   for i in range(nx) for j in range(ny) if v[i, j])


def _labels(h) -> str:
    """The x axis' ends and label under the plot; the largest value (1-D) or the y range (2-D)."""
    x = h.axes[0]
    e = x.edges
    text = '<text x="{}" y="{}" text-anchor="{}" font-size="10" font-family="sans-serif" fill="#444">{}</text>'
    middle = x.label or ""
    if h.ndim == 2:
        y = h.axes[1]
        middle += f" (x), {y.label or 'y'} over [{y.edges[0]:g}, {y.edges[-1]:g}] (up)"
    out = [text.format(0, _H + 13, "start", escape(f"{e[0]:g}")),
           text.format(_W, _H + 13, "end", escape(f"{e[-1]:g}")),
           text.format(_W / 2, _H + 13, "middle", escape(middle.strip()))]
    if h.ndim == 1:
        out.append(text.format(3, 11, "start", escape(f"{np.nan_to_num(h.values().astype(float)).max():g}")))
    return "".join(out)


def html(h) -> str:
    """The notebook view: an inline SVG plot (a step outline in 1-D, cells in 2-D) beside a
    table of kind, label, axes, in-range and flow totals. Well-formed XHTML, no scripts."""
    kind = "deterministic weighted" if h.deterministic else "weighted" if h.weighted else "count"
    rows = [("kind", kind)] + ([("label", h.label)] if h.label else [])
    for i, ax in enumerate(h.axes):
        e = ax.edges
        name = f"axis {i}" + (f" ({ax.label})" if ax.label else "")
        rows.append((name, f"{e.size - 1} bins over [{e[0]}, {e[-1]}] ({e.dtype})"))
    total, flow = h.values().sum(), h.values(flow=True).sum()
    rows += [("sum", f"{total}"), ("outside (flow bins)", f"{flow - total}")]
    cells = "".join(f"<tr><th style='text-align:left'>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>"
                    for k, v in rows)
    table = f"<table><caption>hotbin.Histogram</caption>{cells}</table>"
    if h.ndim > 2:
        return f"<div>{table}</div>"
    body = _steps(h) if h.ndim == 1 else _cells(h)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" class="hotbin-plot" width="{_W}" height="{_H + 16}" '
           f'viewBox="0 0 {_W} {_H + 16}" style="flex:none">{body}{_labels(h)}'
           f'<rect class="hotbin-frame" width="{_W}" height="{_H}" fill="none" stroke="#888" '
           'stroke-width="0.5"/></svg>')
    return f'<div style="display:flex;gap:1em;align-items:flex-start">{svg}{table}</div>'
