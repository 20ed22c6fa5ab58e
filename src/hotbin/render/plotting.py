"""A heatmap drawn by matplotlib: its picture on its extent, and a colorbar of real values.

:func:`plot` draws :meth:`hotbin.Heatmap.shade` (the same pixels as ``to_png``)
north up over ``extent=(*x_range, *y_range)``, the axes labelled with the
columns' names (and the CRS when projected). The colorbar is the shading's own
mapping, not a stand-in: its axis is the colormap position ``t`` in ``[0, 1]``
that :func:`hotbin.render.shade.normalize` gives a value, and its ticks are round
numbers at the positions the shading gives them, evenly spread along the bar
(:func:`hotbin.render.ticks.colorbar_ticks`). A heatmap with categories (``by=``)
gets a legend of the category colours (:func:`hotbin.render.colorize.category_colors`)
instead.
Needs matplotlib (``pip install "hotbin[plot]"``).
"""
from __future__ import annotations

import numpy as np

from .ticks import TICKS, colorbar_ticks, label

__all__ = ["plot", "colorbar_ticks", "TICKS"]


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
    cb.ax.set_yticklabels([label(v) for v in vals])
    cb.set_label(hm.agg if hm.points is hm.counts or hm.agg != "count" else "sum of weights")
    image.hotbin_colorbar = cb
    return image
