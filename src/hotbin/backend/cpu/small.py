"""Small inputs on the cpu without numba: the kernels' answers, bit for bit, through NumPy.

What: counts, float64 and int64 sums (1-D, 2-D, by category), bincount
and prefix sums of inputs up to :data:`SMALL` elements, computed by NumPy calls; and the
common small histogram of a NumPy array whole (:func:`call`), which skips the front door's plan.

Why: a new process's first small histogram would otherwise import numba and load compiled
kernels from the cache, each more than the whole first call's budget; below SMALL elements
NumPy costs little more than the kernels (results/probes-cpu.md, small.py; benchmarks/start_cpu.py).

How it stays bitwise equal to the kernels: bins by the kernels' comparisons (values
widened to :attr:`BinRule.kernel_cmp`'s dtype, compared against those edges, the
last edge closed; a few bins' counts by the same comparisons, each edge searched for among
the sorted values); counts are integers; float64 and int64 sums are added point by
point in input order, as a kernel with one partial adds them (inputs under
``2 * MIN_PER_THREAD`` get one partial), 1-D float64 sums into the kernel's interleaved
copies (:mod:`.copies`). ``tests/test_small.py`` checks both paths against each other.
"""
from __future__ import annotations

import numpy as np

from ...core.binning import histogram_rule, plain_rule
from ...core.scan_order import scan_numpy
from .chunks import kernel_dtype
from .copies import SUM_SUBS, add_rows, copies
from .parallel import MIN_PER_THREAD
from .strategy import cpu_rule

__all__ = ["SMALL", "takes", "rule", "codes", "histogram", "histogram2d", "bincount", "cumsum"]

# --- tuning (benchmarks/cpu_suite.py --start) -----------------------------------
#: inputs of at most this many elements take the NumPy path (one kernel partial below it)
SMALL = 1 << 14
assert SMALL < 2 * MIN_PER_THREAD

#: rules of at most this many edges count by sorting the values (:func:`_sorted_counts`);
#: beyond it a search of the sorted values for each edge costs more than a guess for each
#: value (results/cpu-zen5.md, small calls)
SORTED_EDGES = 257

#: the accumulators computed here: what ``np.bincount`` / ``np.add.at`` add in point order
_ACCS = ("count", "f64", "i64")


def takes(n: int, red) -> bool:
    """Whether ``n`` elements reduced by ``red`` take this path."""
    return n <= SMALL and red.acc in _ACCS and red.center is None


def _widened(v, e) -> np.ndarray:
    """``v`` flat, widened as a kernel widens it to compare against the edges ``e``."""
    v = np.asarray(v)
    return v.reshape(-1).astype(kernel_dtype(v.dtype), copy=False).astype(e.dtype, copy=False)


def _multiplies(rule) -> bool:
    """Whether :func:`_inside` finds bins by multiplying (float edges whose
    :attr:`CpuRule.exact_scale` is set, or uniform ones whose guess is
    within a bin of every edge): a binary search of values in random order mispredicts its
    branches at every step, several times the multiply's cost."""
    e = rule.kernel_cmp
    return e.dtype.kind == "f" and bool(cpu_rule(rule).exact_scale or (rule.uniform and rule.slack < 1))


def _inside(c, rule) -> np.ndarray:
    """The bins of the widened values ``c``, all inside the edges, for a rule that
    :func:`_multiplies`: ``floor(c * exact_scale)``, or the kernels' float64 guess
    ``(c - lo) * scale`` moved a bin down where ``c`` lies below its bin's first edge and up
    where it reaches the next; a slack under one bin leaves the guess at most one bin off."""
    e = rule.kernel_cmp
    nb = e.size - 1
    s = cpu_rule(rule).exact_scale
    if s:
        g = (c * s).astype(np.intp)  # exact: every edge but the closed last is i / s
    else:
        t = c.astype(np.float64, copy=False) - rule.lo
        t *= rule.scale
        g = t.astype(np.intp)
        np.minimum(g, nb - 1, out=g)  # the guess is above -1: truncated, it is at least 0
        g -= c < e.take(g)
        g += c >= e[1:].take(g)
    return np.minimum(g, nb - 1, out=g)  # the closed last edge's values: the last bin


def codes(v, rule) -> np.ndarray:
    """int64 bin of each value of ``v`` under ``rule`` as the kernels compare, nbins for none."""
    e = rule.kernel_cmp
    nb = e.size - 1
    c = _widened(v, e)
    if nb == 0:
        return np.zeros(c.size, np.int64)
    if _multiplies(rule):
        keep = (c >= e[0]) & (c <= e[-1])
        i = np.full(c.size, nb, np.int64)
        i[keep] = _inside(c[keep], rule)
        return i
    i = np.searchsorted(e, c, side="right") - 1  # -1 below the edges; nb above them, on the last, NaN
    i[c == e[-1]] = nb - 1
    i[i < 0] = nb
    return i


def _sorted_counts(v, e) -> np.ndarray:
    """The counts of the values ``v`` in the bins of the edges ``e`` (:attr:`BinRule.kernel_cmp`,
    whose dtype they are compared in), by the rule's comparisons: bin ``i`` holds the values
    below ``e[i + 1]`` (the last: at most ``e[-1]``) less those below ``e[i]``, each found by one
    search of the sorted values. NaN sorts last and lies below no edge. Sorting costs no
    branch a value, where a search a value, or a guess corrected by loads of the edges, does."""
    s = np.asarray(v).reshape(-1).astype(e.dtype)  # a copy (exact, as :func:`_widened`), sorted in place
    s.sort()
    below = s.searchsorted(e)
    below[-1] = s.searchsorted(e[-1], "right")
    return below[1:] - below[:-1]


def _counts(v, rule) -> np.ndarray:
    """The counts of :func:`codes`'s bins in fewer passes: by sorting for a few bins
    (:func:`_sorted_counts`), else by multiplying or searched. Searched, ``searchsorted``
    puts the values below the edges at 0 and those on the last edge with those above it
    (and NaN) at ``nbins + 1``; the last edge's values go back to the last bin."""
    e = rule.kernel_cmp
    if e.size <= SORTED_EDGES:
        return _sorted_counts(v, e)
    c = _widened(v, e)
    if _multiplies(rule):
        return np.bincount(_inside(c[(c >= e[0]) & (c <= e[-1])], rule), minlength=e.size - 1)
    out = np.bincount(np.searchsorted(e, c, side="right"), minlength=e.size + 1)[1:e.size]
    if out.size:
        out[-1] += np.count_nonzero(c == e[-1])
    return out


def _extent(a):
    """``(a.min(), a.max())``, NumPy's, as :func:`.reduce.minmax` answers a small array of
    :func:`rule`'s dtypes (without its checks)."""
    return a.min(), a.max()


def rule(a, bins, range):
    """The bin rule of ``hotbin.histogram(a, bins, range)`` for the common small call, built
    without the general path's checks, or None for any other call: ``a`` a NumPy array of at
    most :data:`SMALL` integers or floats (no bool, no long double), ``bins`` an int, ``range``
    None or a pair of Python numbers. The rule is :func:`~hotbin.core.binning.histogram_rule`'s
    (the extent by NumPy's own min and max); the front door runs its op as any other."""
    dt = a.dtype
    if type(bins) is not int or a.size > SMALL or dt.kind not in "iuf" or dt.itemsize > 8:
        return None
    if range is None:
        return histogram_rule(a, bins, None, minmax=_extent)
    return plain_rule(dt, bins, range)


def _reduce(cells, size, weights, red):
    """The partial of ``red`` over ``size`` cells (the last takes the dropped points)."""
    if red.acc == "count":
        return np.bincount(cells, minlength=size)
    w = np.asarray(weights).reshape(-1)
    if red.acc == "f64":  # float64 even when empty (NumPy's bincount then gives int64)
        return np.bincount(cells, weights=w.astype(np.float64, copy=False), minlength=size).astype(np.float64,
                                                                                                  copy=False)
    out = np.zeros(size, np.int64)
    np.add.at(out, cells, w.astype(np.int64, copy=False))
    return out


def histogram(a, rule, weights, red):
    """``red``'s partial over the bins of ``rule`` (the cpu backend's ``histogram``). float64
    sums as the kernel's (:func:`.count1d.part_sum1`, one partial): point k in copy
    ``k % nsub``, each copy summed in point order, the copies added in order."""
    if red.acc == "count":
        return _counts(a, rule)
    cells, size = codes(a, rule), rule.nbins + 1
    if red.acc != "f64":
        return _reduce(cells, size, weights, red)[:rule.nbins]
    w = np.asarray(weights).reshape(-1).astype(np.float64, copy=False)
    nsub = copies(size, 8, SUM_SUBS)
    rows = np.stack([np.bincount(cells[j::nsub], weights=w[j::nsub], minlength=size)
                     for j in range(nsub)]).astype(np.float64, copy=False)  # empty: float64 too
    return add_rows(rows)[:rule.nbins]


def histogram2d(x, y, rx, ry, weights, red, by):
    """``(partial, points in a cell)`` as the cpu backend's ``histogram2d``."""
    nx, ny = rx.nbins, ry.nbins
    ix, iy = codes(x, rx), codes(y, ry)
    inside = (ix < nx) & (iy < ny)
    cells = ix * ny + iy
    ncell = nx * ny
    lead = ()
    if by is not None:
        g = np.asarray(by[0]).reshape(-1)
        ncat = int(by[1])
        g = np.where((g >= 0) & (g < ncat), g, ncat).astype(np.int64)
        cells += g * ncell
        ncell *= ncat + 1
        lead = (ncat + 1,)
    cells[~inside] = ncell
    res = _reduce(cells, ncell + 1, weights, red)[:ncell]
    return res.reshape(lead + (nx, ny)), int(np.count_nonzero(inside))


def bincount(x, length, weights=None):
    """int64 counts (float64 sums with ``weights``) of the non-negative integers ``x < length``."""
    x = np.asarray(x).reshape(-1).astype(np.intp, copy=False)
    if weights is not None:
        weights = np.asarray(weights).reshape(-1).astype(np.float64, copy=False)
    return np.bincount(x, weights, minlength=length)[:length]


def cumsum(a, axis, od, exclusive=False):
    """Prefix sums as the kernels', in the block order of :mod:`hotbin.core.scan_order`."""
    a = np.asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    return scan_numpy(a, axis, np.dtype(od), exclusive)
