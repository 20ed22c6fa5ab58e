"""Colour-bar ticks of a shaded grid: round numbers at the positions the shading gives them.

A colour bar's axis is the colormap position ``t`` in ``[0, 1]`` that
:func:`hotbin.render.shade.normalize` gives a value, so under ``eq_hist`` equal
steps of value are far from equal steps of the bar. The ticks are chosen on the bar:
``n`` evenly spaced targets, each with a window around it; in each window the
roundest number (a nice number ``1, 2, 5 x 10^k``, else a multiple of the largest such
step that has one there; the one nearest the target) becomes a tick at its true position. Windows do not
touch, so ticks never crowd each other; labels are the shortest decimals that read
back as the tick values, which are distinct. Needs nothing beyond NumPy: ``Heatmap.plot``
and the live viewer can draw the same ticks.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["colorbar_ticks", "label", "TICKS"]

#: ticks on a colour bar
TICKS = 6
#: half-width of each tick's window, in tick spacings (the gap between two ticks is at least
#: 1 - 2 * WINDOW spacings)
WINDOW = 0.3
#: samples of the curve value -> t for linear, log and cbrt (exact positions come from normalize)
SAMPLES = 1025


def colorbar_ticks(grid, occupied=None, how="eq_hist", n=TICKS):
    """``(positions, values)`` of the colour-bar ticks of a shaded grid, increasing.

    ``grid`` and ``occupied`` as :func:`hotbin.render.shade.shade` takes them (the
    non-empty cells: finite, and occupied or else non-zero). ``positions`` are in
    ``[0, 1]``: where the bar shows ``values``. For ``eq_hist``, a value between two
    cells' values sits between their positions, linearly (a cell's own value sits
    exactly at its cell's colour). ``values`` are round numbers (whole numbers when
    every cell is); a grid of one value gets that value, unrounded.
    """
    from .shade import HOWS, normalize

    if how not in HOWS:
        raise ValueError(f"how: expected one of {', '.join(HOWS)}, got {how!r}")
    grid = np.asarray(grid, np.float64)
    mask = np.isfinite(grid) & ((grid != 0) if occupied is None else (np.asarray(occupied) != 0))
    v = grid[mask]
    if v.size == 0:
        return np.array([]), np.array([])
    lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        return np.array([1.0]), np.array([lo])
    if how == "eq_hist":
        xs, first = np.unique(v, return_index=True)
        ts = normalize(grid, how, mask=mask)[mask][first]

        def position(vals):
            return np.interp(vals, xs, ts)
    else:
        f, inverse = _curve(how)
        xs = np.clip(inverse(np.linspace(f(lo), f(hi), SAMPLES)), lo, hi)
        xs[[0, -1]] = lo, hi
        ts = normalize(xs, how, span=(lo, hi), mask=np.ones(xs.shape, bool))

        def position(vals):
            return normalize(np.asarray(vals, np.float64), how, span=(lo, hi), mask=np.ones(len(vals), bool))
    integer = bool(np.all(v == np.rint(v)))
    values = []
    for j in range(n):
        t = j / (n - 1)
        a, b = (np.interp(min(max(t + d * WINDOW / (n - 1), 0.0), 1.0), ts, xs) for d in (-1, 1))
        pick = _roundest(float(a), float(b), float(np.interp(t, ts, xs)), integer)
        if pick is not None and (not values or pick > values[-1]):
            values.append(pick)
    values = np.array(values, np.float64)
    return position(values), values


def _curve(how):
    """``(f, inverse)`` of ``linear``, ``log`` (signed ``log1p``) or ``cbrt``."""
    if how == "linear":
        return (lambda a: a), (lambda a: a)
    if how == "cbrt":
        return np.cbrt, (lambda a: a ** 3)
    return (lambda a: np.sign(a) * np.log1p(np.abs(a))), (lambda a: np.sign(a) * np.expm1(np.abs(a)))


def _roundest(a, b, near, integer):
    """The roundest number in ``[a, b]``, None when there is none (``integer``: whole numbers only).

    First the nice numbers ``0`` and ``+-1, 2, 5 x 10^k``, the one nearest ``near``; else a
    multiple of the largest step ``1, 2, 5 x 10^k`` that has one in ``[a, b]``, the multiple
    nearest ``near``.
    """
    top = max(abs(a), abs(b))
    if top == 0 or a <= 0 <= b:
        return 0.0
    high = math.floor(math.log10(top)) + 1
    low = max(math.floor(math.log10(b - a)) - 1, 0 if integer else -324)
    nice = [float(f"{s * m}e{e}") for e in range(low, high + 1) for m in (1, 2, 5) for s in (-1, 1)]
    inside = [c for c in nice if a <= c <= b]
    if inside:
        return min(inside, key=lambda c: abs(c - near))
    for e in range(high, low - 1, -1):
        for m in (5, 2, 1):
            step = m * 10.0 ** e
            k0, k1 = math.ceil(a / step), math.floor(b / step)
            if k0 <= k1:
                k = min(max(round(near / step), k0), k1)
                return float(f"{k * m}e{e}")  # the decimal, correctly rounded
    return None


def label(v) -> str:
    """The shortest decimal that reads back as ``v`` (whole numbers without a point)."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e16:
        return str(int(v))
    return repr(v)
