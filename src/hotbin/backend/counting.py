"""Counts that follow every property of a bin rule, whatever the backend's kernels implement.

:class:`hotbin.backend.Backend` wraps each counting primitive (``histogram``,
``histogram_rows``, ``histogram2d``) with :func:`counting`, so every front door
(``histogram``, ``hist`` and its ``fill``, batches, heatmaps, Dask chunks) gets the
same bins from the same rule.
"""
from __future__ import annotations

from dataclasses import replace

from ..core.arrays import xp
from ..core.binning import exact_counts
from ..core.reductions import COUNT

__all__ = ["counting"]


def counting(count, op: str):
    """``count`` (the primitive ``op``) made to follow two properties of a rule that kernels do
    not implement, in the one place every front door's counts pass through:

    * :attr:`~hotbin.core.binning.BinRule.exact` (int64/uint64 data over integer range ends of
      magnitude 2**53 or more, which NumPy compares exactly): the bins kernels get wrong are
      counted again under the rule's integer sub-rule (:func:`~hotbin.core.binning.exact_counts`);
    * :attr:`~hotbin.core.binning.BinRule.tail` (cells of zero width at an open end): kernels count
      under :attr:`~hotbin.core.binning.BinRule.counted` and the empty cells are padded on.
    """
    if op == "histogram2d":
        def count2d(x, y, rx, ry, *args, **kwargs):
            if rx.exact is not None or ry.exact is not None:  # no builder makes one (NumPy's
                # histogram2d compares its ends in the edges' dtype): refuse rather than miscount
                raise ValueError("histogram2d: rules with exact integer range ends are 1-D only")
            if not (rx.tail or ry.tail):
                return count(x, y, rx, ry, *args, **kwargs)
            args, kwargs, red = _trim_center(args, kwargs, (rx.counted.nbins, ry.counted.nbins))
            grid, kept = count(x, y, rx.counted, ry.counted, *args, **kwargs)
            return _pad(grid, red, (rx.nbins, ry.nbins)), kept
        count2d.__doc__ = count.__doc__
        return count2d

    def count1d(a, rule, *args, **kwargs):
        if rule.tail:
            args, kwargs, red = _trim_center(args, kwargs, (rule.counted.nbins,))
            out = count(a, rule.counted, *args, **kwargs)
            return _pad(out, red, (rule.nbins,))
        out = count(a, rule, *args, **kwargs)
        return exact_counts(rule, out, lambda sub: count(a, sub, *args, **kwargs))

    count1d.__doc__ = count.__doc__
    return count1d


def _trim_center(args, kwargs, shape):
    """``(args, kwargs, red)`` of a counting call (``weights, red, ...`` after the rules) with a
    centred reduction's centers cut to the counted bins ``shape``."""
    args = list(args)
    red = args[1] if len(args) > 1 else kwargs.get("red", COUNT)
    if red.center is not None:
        cut = tuple(slice(0, k) for k in shape)
        red = replace(red, center=red.center[(Ellipsis, *cut)])
        if len(args) > 1:
            args[1] = red
        else:
            kwargs = {**kwargs, "red": red}
    return tuple(args), kwargs, red


def _pad(out, red, shape):
    """The partial ``out`` of fewer bins on its last axes grown to ``shape``: the bins added hold
    ``red``'s identity (they count nothing). Columns past the bins of a 1-D partial (a checked
    partial's, :func:`hotbin.core.reductions.with_seen`) stay last."""
    x = xp(out)
    nd = len(shape)
    counted = tuple(out.shape[-nd:])
    if nd == 1 and red.check:
        counted = (out.shape[-1] - 1,)
        shape = (shape[0] + 1,)
    full = x.zeros(tuple(out.shape[:-nd]) + tuple(shape), out.dtype)
    for row, v in enumerate(red.identity):
        full[row] = v
    full[(Ellipsis, *(slice(0, k) for k in counted))] = out[(Ellipsis, *(slice(0, k) for k in counted))]
    if counted != tuple(out.shape[-nd:]):  # the seen column
        full[..., -1] = out[..., -1]
    return full
