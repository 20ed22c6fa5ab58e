"""A heatmap drawn by matplotlib: its picture on its extent, and a colorbar of real values.

:func:`plot` draws :meth:`hotbin.Heatmap.shade` (the same pixels as ``to_png``)
north up over ``extent=(*x_range, *y_range)``, the axes labelled with the
columns' names (and the CRS when projected). The colorbar is the shading's own
mapping, not a stand-in: its axis is the colormap position ``t`` in ``[0, 1]``
that :func:`hotbin.render.shade.normalize` gives a value, and its ticks are real cell
values placed where ``normalize`` puts them. For ``eq_hist`` the ticks are the
cells' values at evenly spaced quantiles (so they crowd where the picture
spends its colours on few values); for ``linear``, ``log`` and ``cbrt`` round
values within the span. A heatmap with categories (``by=``) gets a legend of
the category colours (:func:`hotbin.render.colorize.category_colors`) instead.
Needs matplotlib (``pip install "hotbin[plot]"``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["plot", "colorbar_ticks"]

#: ticks on a colorbar
TICKS = 6


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        raise ModuleNotFoundError('Heatmap.plot needs matplotlib: pip install "hotbin[plot]"') from None
    return plt


def plot(hm, ax=None, how="eq_hist", cmap="inferno", colorbar=True, color_key=None, **imshow_kwargs):
    """Draw the heatmap ``hm`` on the matplotlib Axes ``ax`` (default: the current one).

    Parameters
    ----------
    hm : hotbin.Heatmap
    ax : matplotlib.axes.Axes, optional
    how, cmap : as :meth:`hotbin.Heatmap.shade`
    colorbar : bool
        Add a colorbar of real values (a legend of the categories with ``by``).
    color_key : list or dict, optional
        Colours of the categories (:func:`hotbin.render.colorize.category_colors`).
    **imshow_kwargs
        Passed to ``ax.imshow`` (e.g. ``interpolation``, ``alpha``, ``zorder``).

    Returns
    -------
    matplotlib.image.AxesImage
        The image; its ``hotbin_colorbar`` is the colorbar (None without one).
    """
    plt = _pyplot()
    from ..core.arrays import to_host

    ax = plt.gca() if ax is None else ax
    shade_kwargs = {"color_key": color_key} if hm.categories is not None else {"cmap": cmap}
    rgba = hm.shade(how=how, **shade_kwargs)
    kwargs = {"interpolation": "nearest", "aspect": "auto" if hm.crs is None else "equal", **imshow_kwargs}
    image = ax.imshow(rgba, origin="lower", extent=(*hm.x_range, *hm.y_range), **kwargs)
    unit = f" ({hm.crs}, m)" if hm.crs else ""
    ax.set_xlabel(f"{hm.x_name}{unit}")
    ax.set_ylabel(f"{hm.y_name}{unit}")
    image.hotbin_colorbar = None
    if not colorbar:
        return image
    if hm.categories is not None:
        from matplotlib.patches import Patch

        from .colorize import category_colors

        rgb = category_colors(len(hm.categories), color_key, labels=hm.categories) / 255.0
        ax.legend(handles=[Patch(facecolor=c, label=str(lab)) for c, lab in zip(rgb, hm.categories)],
                  title="category", loc="best", fontsize="small")
        return image
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import ListedColormap, Normalize

    from .shade import FLOOR, colormap

    lut = colormap(cmap)
    lut = lut[int(round(FLOOR * (lut.shape[0] - 1))):]  # non-empty cells start at FLOOR
    grid, occupied = hm.shaded()
    pos, vals = colorbar_ticks(np.asarray(to_host(grid), np.float64),
                               None if occupied is None else np.asarray(to_host(occupied)), how)
    sm = ScalarMappable(norm=Normalize(0.0, 1.0), cmap=ListedColormap(lut[:, :3] / 255.0))
    cb = ax.figure.colorbar(sm, ax=ax, ticks=pos)
    cb.ax.set_yticklabels([_label(v) for v in vals])
    cb.set_label(hm.agg if hm.points is hm.counts or hm.agg != "count" else "sum of weights")
    image.hotbin_colorbar = cb
    return image


def colorbar_ticks(grid, occupied=None, how="eq_hist", n=TICKS):
    """``(positions, values)``: colorbar ticks of a shaded grid, ``positions`` in ``[0, 1]`` being
    :func:`hotbin.render.shade.normalize`'s ``t`` of each real ``value``.

    ``eq_hist``: the values of the shaded cells at ``n`` evenly spaced quantiles (cells of the
    grid, so each tick is exactly where that cell's colour is); else round values of the span.
    """
    from .shade import normalize

    mask = np.isfinite(grid) & ((grid != 0) if occupied is None else (occupied != 0))
    v = grid[mask]
    if v.size == 0:
        return np.array([]), np.array([])
    if how == "eq_hist":
        t = normalize(grid, how, mask=mask)[mask]
        order = np.argsort(v, kind="stable")
        pick = order[np.rint(np.linspace(0, 1, n) * (v.size - 1)).astype(np.int64)]
        pos, vals = t[pick], v[pick]
    else:
        lo, hi = float(v.min()), float(v.max())
        vals = _round_values(lo, hi, how, n)
        pos = normalize(vals, how, span=(lo, hi), mask=np.ones(vals.shape, bool))
    keep = np.concatenate([[True], np.diff(vals) > 0]) if vals.size else np.array([], bool)
    return pos[keep], vals[keep]


def _round_values(lo, hi, how, n):
    """Round values in ``[lo, hi]`` for a colorbar (powers of ten for ``log``), the ends included."""
    from matplotlib.ticker import MaxNLocator

    if lo == hi:
        return np.array([lo])
    if how == "log":
        top = int(np.floor(np.log10(max(abs(lo), abs(hi)))))
        powers = [s * 10.0 ** k for s in (-1, 1) for k in range(top + 1)] + [0.0]
        vals = [p for p in powers if lo < p < hi]
        if len(vals) < 2:
            vals = list(MaxNLocator(n - 1).tick_values(lo, hi))
    else:
        vals = list(MaxNLocator(n - 1).tick_values(lo, hi))
    return np.array(sorted({lo, hi, *(v for v in vals if lo < v < hi)}))


def _label(v) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"
