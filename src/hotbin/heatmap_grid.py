"""A heatmap's cells: its ranges (given, or from the data), their closure and the grid size.

:func:`hotbin.heatmap` asks here for the two cell rules before it aggregates; the
rules come from :func:`hotbin.core.binning.cell_rule` over the ranges of
:mod:`hotbin.core.ranges`, with the data's extent (or exact percentiles, ``clip=``)
found by the executor in one pass.
"""
from __future__ import annotations

from .core.binning import cell_rule, positive_int
from .core.ranges import check_cells, check_clip, check_closed, data_range, given_range

__all__ = ["cells_over"]


def cells_over(ex, xa, ya, x_range, y_range, closed, clip, width, height, weighted, layers):
    """``(x_range, y_range, x_closed, y_closed, width, height, rx, ry)`` of a heatmap of the
    points ``xa``, ``ya`` (arguments as :func:`hotbin.heatmap` takes them; ``layers``: grids
    of categories, for the size check)."""
    given = [given_range(r, f"{a}_range") if r is not None else None
             for a, r in (("x", x_range), ("y", y_range))]
    xc, yc = check_closed(closed, given)
    pct = check_clip(clip)
    auto = [i for i, r in enumerate(given) if r is None]
    arrays = [(xa, ya)[i] for i in auto]
    found = ex.percentiles(arrays, pct) if pct is not None else ex.finite_extents(arrays)
    for i, ext in zip(auto, found):
        given[i] = (0.0, 1.0) if ext is None else data_range(*ext, "xy"[i])
    xr, yr = given
    if height is None:  # square cells: the height follows the ranges' aspect
        height = max(1, round(positive_int(width, "width") * (yr[1] - yr[0]) / (xr[1] - xr[0])))
    width, height = check_cells(width, height, weighted=weighted, layers=layers)
    rx, ry = cell_rule(width, *xr, "width", xc), cell_rule(height, *yr, "height", yc)
    return xr, yr, xc, yc, width, height, rx, ry
