"""spatial.cu's axis rule, host side, without CuPy or a GPU (runs everywhere).

The 2-D kernels take hist_common.cuh's nearest-edge rule (``Axis`` mode 3) for every
axis whose guess is trusted (kernel_rule mode 2): one compare of a value with the
edge of its table nearest to the guess ``x = (v - lo) * scale``, no range test. Here
that arithmetic is emulated in NumPy (one rounding per operation, the guess's
dtype, the table and arguments :mod:`hotbin.backend.cuda.spatial` builds) and every
value must land in the cell :meth:`BinRule.index` gives: random values, every edge
and its neighbours in both dtypes, NaN of both signs, infinities, subnormals, huge
and far values, heatmap cells open at their upper end and ranges closed at it.
"""
import numpy as np
import pytest

from hotbin.core import binning
from hotbin.backend.cuda import rule as crule
from hotbin.core.binning import histogram_rule


def _round_guess(x, cap):
    """hist_common.cuh round_guess: ``(index, r)``: r = rint(x) by adding 1.5 * 2^(mantissa
    bits), the index the bits of x + M less those of M as unsigned, clamped to ``cap``."""
    m = x.dtype.type(1.5 * 2.0 ** np.finfo(x.dtype).nmant)
    y = x + m
    ib = np.dtype(f"i{x.dtype.itemsize}")
    j = (y.view(ib).astype(object) - int(np.array(m).view(ib))) % (1 << (8 * x.dtype.itemsize))
    return np.minimum(j, cap).astype(np.int64), y - m


def _axis_cells(rule, v, shortcut=True):
    """spatial.cu ``Axis::find`` in mode 3 on the host's arguments: the cell, or -1."""
    kdt, edges, g = crule.axis_args(rule, v.dtype)
    assert crule.axis_mode(g.mode, rule.nbins) == crule.MODE_NEAREST
    table = crule.edge_table(edges)
    tau = g.eps if shortcut else type(g.eps)(0.5)
    G = type(g.lo)
    vk = v.astype(kdt)
    nb = rule.nbins
    with np.errstate(all="ignore"):
        x = (vk.astype(G) - g.lo) * g.scale
        j, r = _round_guess(x, nb + 1)
        t = x - r
        below = np.where(np.abs(t) > tau, t < 0, vk < table[j])
    b = j - below
    return np.where((b >= 0) & (b < nb), b, -1)


def _rules(rng, dt):
    """Random linspace rules of ``dt`` (histogram ranges, closed) and heatmap cells (open)."""
    for _ in range(40):
        mag = 10.0 ** rng.uniform(-30, 30)
        lo = rng.uniform(-1, 1) * mag
        width = mag * 10.0 ** rng.uniform(-6, 1)
        nb = int(rng.choice([1, 2, 3, 7, 100, 256, 1000, 1024, 4097]))
        try:
            with np.errstate(all="ignore"):
                yield histogram_rule(np.zeros(1, dt), nb, (lo, lo + width))
        except ValueError:  # NumPy: too many bins for the range in this dtype
            pass
        yield binning.cell_rule(nb, lo, lo + width, "w")
    yield binning.cell_rule(1024, 0.0, 1.0, "w")
    yield binning.cell_rule(1024, 0.0, 1.0, "w", closed=True)
    yield binning.cell_rule(10, -1.0, 1.0, "w")  # an edge exactly at 0


def _values(rule, rng, dt):
    e = rule.edges.astype(np.float64)
    lo, hi = e[0], e[-1]
    with np.errstate(all="ignore"):
        ed = e.astype(dt)
        near = [e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf),
                ed, np.nextafter(ed, dt(np.inf)), np.nextafter(ed, dt(-np.inf))]
        rand = rng.uniform(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo), 4000)
        info = np.finfo(dt)
        hostile = np.array([np.nan, -np.nan, np.inf, -np.inf, info.max, -info.max, info.tiny, -info.tiny,
                            info.smallest_subnormal, -info.smallest_subnormal, 0.0, -0.0,
                            hi * 2, lo - (hi - lo), 1e30, -1e30, hi * 3 + 1])
        v = np.concatenate([np.asarray(a, np.float64) for a in near] + [rand, hostile]).astype(dt)
    return v


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shortcut", [True, False])
def test_nearest_edge_axis_gives_the_cell(dt, shortcut):
    rng = np.random.default_rng(17)
    checked = 0
    for rule in _rules(rng, dt):
        kdt, edges, g = crule.axis_args(rule, dt)
        if crule.axis_mode(g.mode, rule.nbins) != crule.MODE_NEAREST:
            continue
        v = _values(rule, rng, dt)
        np.testing.assert_array_equal(_axis_cells(rule, v, shortcut), rule.index(v),
                                      err_msg=f"{rule.edges[[0, -1]]} {rule.nbins} bins")
        checked += 1
    assert checked > 30


def test_axis_table_layout():
    """e[0] .. e[nb - 1], the closed end's successor, the closed end (rule.kernel_edges' layout)."""
    rule = binning.cell_rule(4, 0.0, 1.0, "w")  # open at 1: the closed end is the float below 1
    kdt, edges, _ = crule.axis_args(rule, np.float32)
    t = crule.edge_table(edges)
    assert t.dtype == np.float32 and t.size == rule.nbins + 2
    np.testing.assert_array_equal(t[:4], edges[:4])
    assert t[5] == edges[-1] and t[4] == np.nextafter(edges[-1], np.float32(np.inf))
    assert t[4] == np.float32(1.0)  # the open end itself: 1.0 is out, its predecessor in
    ints = histogram_rule(np.zeros(1, np.int64), np.array([0, 2, 4, 8]))
    kdt, edges, _ = crule.axis_args(ints, np.int64)
    assert crule.edge_table(edges)[-2] == edges[-1]


def test_axis_mode():
    """Trusted guesses (mode 2) take the nearest-edge rule below rule.SHORTCUT_BINS bins; search
    (0) and guess-then-walk (1) stay."""
    assert crule.axis_mode(2, 1024) == crule.MODE_NEAREST
    assert crule.axis_mode(2, crule.SHORTCUT_BINS) == 2
    assert crule.axis_mode(1, 1024) == 1 and crule.axis_mode(0, 1024) == 0
    for dt in (np.float32, np.float64):
        g = crule.axis_args(binning.cell_rule(1024, 0.0, 1.0, "w"), dt)[2]
        assert crule.axis_mode(g.mode, 1024) == crule.MODE_NEAREST
    ex = binning.histogram2d_rules(np.zeros(1), np.zeros(1), bins=[np.array([0.0, 0.5, 2.0]), np.array([0.0, 1.0])])[0]
    assert crule.axis_mode(crule.axis_args(ex, np.float64)[2].mode, ex.nbins) == 0
