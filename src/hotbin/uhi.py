"""A :class:`hotbin.Histogram` as other tools take it: UHI's serialization, matplotlib.

:func:`serialize` is the ``uhi.io`` schema boost-histogram and hist build from;
:func:`plot` draws with matplotlib (``pip install "hotbin[plot]"``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["serialize", "plot", "html"]

_PLOT_HINT = 'plotting needs matplotlib: pip install "hotbin[plot]"'


def serialize(h) -> dict:
    """This histogram in the UHI serialization schema (``uhi.io``), flow bins included.

    Axes are ``variable`` axes of the exact edges (as float64) with underflow and
    overflow; storage ``int`` (counts), ``weighted`` (sums and sums of squares)
    or ``double`` (sums with unknown variances). ``boost_histogram.Histogram(h)``
    and ``hist.Hist(h)`` build from it.
    """
    from . import __version__

    axes = [{"type": "variable", "edges": ax.edges.astype(np.float64), "underflow": True,
             "overflow": True, "circular": False, **({"metadata": {"label": ax.label}} if ax.label else {})}
            for ax in h.axes]
    if not h.weighted:
        storage = {"type": "int", "values": h.values(flow=True)}
    elif h.variances() is None:  # sums whose squares were not kept
        storage = {"type": "double", "values": h.values(flow=True).astype(np.float64)}
    else:
        storage = {"type": "weighted", "values": h.values(flow=True).astype(np.float64),
                   "variances": h.variances(flow=True)}
    out = {"uhi_schema": 1, "writer_info": {"hotbin": {"version": __version__}}, "axes": axes,
           "storage": storage}
    if h.label:
        out["metadata"] = {"label": h.label}
    return out


def plot(h, ax=None, **kw):
    """Draw with matplotlib: a step outline (1-D) or an image with a colorbar (2-D).

    ``kw`` goes to ``Axes.stairs`` (1-D) or ``Axes.pcolormesh`` (2-D). Returns the
    matplotlib ``Axes``.
    """
    try:
        import matplotlib  # noqa: F401  (the hint names the extra)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(_PLOT_HINT) from exc
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


def html(h) -> str:
    """An HTML table summarizing a histogram: kind, label, axes, in-range and flow totals."""
    from html import escape

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
    return f"<table><caption>hotbin.Histogram</caption>{cells}</table>"
