"""The cpu kernels' bin finders (backend/cpu/rule.py) against NumPy on the values that
break finders: every edge and its float neighbours, whole numbers, a constant on an
edge, for each finder (SCALED, SCALED32, LINEAR, LINEAR32, SPAN32, NEAR, SEARCH). Inputs are larger than the
NumPy path of small inputs (small.SMALL), so the numba kernels answer."""
from __future__ import annotations

import numpy as np
import pytest

import hotbin
from hotbin.backend.cpu import rule as cpu_rule
from hotbin.backend.cpu import reduce, small
from hotbin.backend.cpu.chunks import kernel_dtype
from hotbin.backend.cpu.reduce import minmax
from hotbin.backend.cpu.strategy import cpu_rule as strategy
from hotbin.core.binning import cell_rule, histogram_rule

RNG = np.random.default_rng(18)


def _edge_values(e, dt, n):
    """The edges, their neighbours either side (floats, or integers) and uniform values, ``n`` of them."""
    e = e.astype(dt)
    if np.dtype(dt).kind in "iu":
        near = np.concatenate([e, e - 1, e + 1])
    else:
        near = np.concatenate([e, np.nextafter(e, dt(-np.inf)), np.nextafter(e, dt(np.inf))])
    lo, hi = float(e[0]), float(e[-1])
    fill = RNG.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), n).astype(dt)
    out = np.concatenate([np.tile(near, -(-n // near.size))[:n // 2], fill])[:n]
    return RNG.permutation(out)


CASES = [  # dtype, bins, range (None: from the data), the finder the rule must get
    (np.float64, 256, (0.0, 256.0), cpu_rule.SCALED),  # lo 0, a power-of-2 scale: the guess is exact
    (np.float64, 64, (0.0, 0.5), cpu_rule.SCALED),
    (np.float32, 256, (0.0, 1.0), cpu_rule.SCALED32),
    (np.float32, 100, (0.0, 100.0), cpu_rule.SCALED32),
    (np.float64, 256, (1.0, 257.0), cpu_rule.LINEAR),
    (np.float64, 1000, (-3.7, 11.3), cpu_rule.LINEAR),
    (np.float32, 256, (1.0, 2.0), cpu_rule.LINEAR32),  # float32 arithmetic gives the same edges
    (np.float32, 100, (100.0, 200.0), cpu_rule.LINEAR32),
    (np.float32, 37, (0.0, 100.0), cpu_rule.SPAN32),  # only float64 arithmetic, cast, does
    (np.float32, 1000, (0.0, 7.0), cpu_rule.SPAN32),
    (np.float32, 1000, None, cpu_rule.LINEAR32),
    (np.float32, 37, None, cpu_rule.LINEAR32),
    # float32 ends where one rounding (float64, then cast) and two (float32 arithmetic)
    # give different edges (222 of them): only the float32 arithmetic is right
    (np.float32, 435, np.float32([-13.031572, 14.139103]), cpu_rule.LINEAR32),
    # float32 edges NumPy's linspace computed in float64 from the range's Python floats:
    # recomputed from that float64 start (BinRule.span), not from the float32 first edge,
    # the guess in float32 (SPAN32)
    (np.float32, 37, (-1.3, 2.1), cpu_rule.SPAN32),
    (np.float32, 256, (-3.1, 259.7), cpu_rule.SPAN32),
    (np.float32, 1024, (-74.05, -73.75), cpu_rule.SPAN32),
    (np.float32, 100_000, (-3.0, 3.0), cpu_rule.SPAN32),  # the float32 guess 0.008 bins off
    (np.float32, 60, (1000.3, 1006.3), cpu_rule.SPAN32),  # far from 0: float32(lo) is not lo
    (np.float16, 10, None, cpu_rule.NEAR),
    (np.float16, 37, (-1.3, 2.1), cpu_rule.NEAR),
    (np.float32, 1 << 22, None, cpu_rule.NEAR),  # float32 arithmetic's edges past LINEAR32's bound
    (np.float64, np.array([-1.0, 0.0, 0.5, 2.0, 2.0000001]), None, cpu_rule.SEARCH),
    (np.float64, np.logspace(-2, 2, 301), None, cpu_rule.SEARCH),  # more than one search.SEARCH_LANES block
    (np.float32, np.logspace(-2, 2, 1001), None, cpu_rule.SEARCH),  # float32 values, float64 edges
    (np.float64, np.array([0.0, 1.0, 1.0, 1.0, 2.0, 3.0, 3.0]), None, cpu_rule.SEARCH),  # repeated edges
    (np.float64, np.array([-0.5, 0.25]), None, cpu_rule.SEARCH),  # one bin: no halving
    (np.float64, np.array([-0.5, 0.25, 0.5]), None, cpu_rule.SEARCH),
    (np.int64, np.array([-7, -2, 0, 3, 3, 10, 1000]), None, cpu_rule.SEARCH),
]


@pytest.mark.parametrize("dt, bins, rng, mode", CASES)
def test_finders_on_edges_match_numpy(dt, bins, rng, mode):
    n = 3 * small.SMALL + 17
    base = RNG.normal(0, 3, 1000).astype(dt)
    if isinstance(rng, np.ndarray):  # the ends of data: base holds them, the range comes from it
        base[:2], rng = rng, None
    rule = histogram_rule(base, bins, rng, minmax=minmax)
    kd = kernel_dtype(np.dtype(dt))
    assert cpu_rule.rule_args(rule, kd)[-1] == mode
    a = _edge_values(rule.edges, dt, n)
    if rng is None:  # the data's range is base's: the same rule, the same edges
        a = np.clip(a, base.min(), base.max())
        a[:2] = base.min(), base.max()
        assert cpu_rule.rule_args(histogram_rule(a, bins, rng, minmax=minmax), kd)[-1] == mode
    got, edges = hotbin.histogram(a, bins, rng, backend="cpu")
    want, want_edges = np.histogram(a, bins, rng)
    np.testing.assert_array_equal(edges, want_edges)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_whole_numbers_and_constants_on_edges(dt):
    n = 3 * small.SMALL
    for a, bins, rng in [(RNG.integers(0, 100, n).astype(dt), 100, (0, 100)),
                         (np.full(n, 0.5, dt), 256, (0, 1)),
                         ((RNG.integers(0, 257, n) / 256).astype(dt), 256, (0, 1)),
                         (np.full(n, 1.0, dt), 256, (0, 1))]:  # the closed last edge
        np.testing.assert_array_equal(hotbin.histogram(a, bins, rng, backend="cpu")[0],
                                      np.histogram(a, bins, rng)[0])


def _f32_around(e, n):
    """float32 values at and beside each float64 edge (rounded down and up), and uniform ones."""
    d = e.astype(np.float32)
    near = [d, np.nextafter(d, np.float32(-np.inf)), np.nextafter(d, np.float32(np.inf))]
    near += [np.nextafter(v, np.float32(s)) for v in near[1:] for s in (-np.inf, np.inf)]
    near = np.concatenate(near)
    fill = RNG.uniform(e[0] - 0.1 * (e[-1] - e[0]), e[-1] + 0.1 * (e[-1] - e[0]), n).astype(np.float32)
    return RNG.permutation(np.concatenate([np.tile(near, -(-n // near.size))[:n // 2], fill])[:n])


F64_RULES = [  # float64 ranges for float32 data, and whether float32 edges can stand in
    ((0.0, 1.0), 1024, True),
    ((0.0, 1000.0), 1000, True),
    ((-1.0, 1.0), 256, True),
    ((-74.05, -73.75), 1024, False),  # edges rounded up are no float32 formula: float64
    ((0.1, 0.7), 300, False),
]


@pytest.mark.parametrize("rng, bins, narrowed", F64_RULES)
def test_float32_values_under_float64_rules(rng, bins, narrowed):
    """float32 data binned by float64 edges (a float64 range; heatmap cells): compared in
    float32 against the edges rounded up when that is exact, bin for bin NumPy's."""
    rule = histogram_rule(np.zeros(1, np.float32), bins, tuple(map(np.float64, rng)))
    assert rule.cmp.dtype == np.float64
    mode = cpu_rule.rule_args(rule, np.dtype(np.float32))[-1]
    assert (mode in (cpu_rule.LINEAR32, cpu_rule.SCALED32)) == narrowed  # float32 arithmetic
    a = _f32_around(rule.edges, 3 * small.SMALL + 5)
    got = hotbin.histogram(a, bins, tuple(map(np.float64, rng)), backend="cpu")[0]
    np.testing.assert_array_equal(got, np.histogram(a, bins, tuple(map(np.float64, rng)))[0])
    y = RNG.permutation(a)  # heatmap cells: float64 edges, open at the top unless closed
    H = hotbin.histogram2d(a, y, bins=bins, range=(rng, rng), backend="cpu")[0]
    np.testing.assert_array_equal(H, np.histogram2d(a, y, bins=bins, range=(rng, rng))[0])
    hm = hotbin.heatmap(a, y, width=bins, height=bins, x_range=rng, y_range=rng, backend="cpu")
    a64, y64 = a.astype(np.float64), y.astype(np.float64)  # NumPy 2 compares python floats in float32
    inside = (a64 >= rng[0]) & (a64 < rng[1]) & (y64 >= rng[0]) & (y64 < rng[1])
    want = np.histogram2d(y[inside], a[inside], bins=bins, range=(rng, rng))[0]
    np.testing.assert_array_equal(hm.counts, want)


@pytest.mark.parametrize("rng, bins, narrowed", F64_RULES)
def test_float32_rule_bins_like_its_float64_rule(rng, bins, narrowed):
    """CpuRule.float32 (edges rounded up, the closed end down) puts every float32 value where
    the float64 rule does, also where float32 edges are no formula's."""
    for closed in (True, False):
        rule = cell_rule(bins, *rng, "width", closed=closed)
        a = _f32_around(rule.cmp, 20000)
        np.testing.assert_array_equal(strategy(rule).float32.index(a), rule.index(a))


CELL_AXES = [  # (dtype of the points, cell rule (bins, lo, hi, closed)): the mode rule_args gives
    (np.float32, (1024, 0.0, 1.0, False), cpu_rule.SCALED32),  # heatmap cells: open at the top
    (np.float32, (512, -1.0, 1.0, False), cpu_rule.LINEAR32),
    (np.float32, (256, 0.0, 1.0, True), cpu_rule.SCALED32),
    (np.float32, (300, 0.1, 0.7, True), cpu_rule.LINEAR),  # no float32 formula: float64 edges
    (np.float64, (1000, -3.7, 11.3, False), cpu_rule.LINEAR),
    (np.float64, (64, 0.0, 0.5, True), cpu_rule.SCALED),
    (np.float64, (1024, 0.0, 1024.0, False), cpu_rule.SCALED),  # whole-number pixels, open at the top
]


@pytest.mark.parametrize("ax, ay", [(i, j) for i, a in enumerate(CELL_AXES) for j, b in enumerate(CELL_AXES)
                                     if a[0] == b[0]])  # a kernel bins x and y of one dtype
def test_cells2_matches_each_axis(ax, ay):
    """rule.cells2 (both axes binned and combined in one loop where both rules allow) gives
    each point the cell ``bx * ny + by`` of the axes' reference bins (BinRule.index), on
    every edge and its neighbours, NaN, infinities and points off the grid; also a grid of
    2**24 cells or more, whose float32 cells would round."""
    (dx, (nx, *cx), mx), (dy, (ny, *cy), my) = CELL_AXES[ax], CELL_AXES[ay]
    rx, ry = cell_rule(nx, *cx[:2], "x", closed=cx[2]), cell_rule(ny, *cy[:2], "y", closed=cy[2])
    for big in (False, True):
        if big:  # 2**24 cells or more: float32 cells would round; the fallback combines integers
            if dx != np.float32 or mx not in (cpu_rule.LINEAR32, cpu_rule.SCALED32):
                continue
            ry, ny = cell_rule(2**15, *cy[:2], "y", closed=cy[2]), 2**15
        args = [cpu_rule.rule_args(r, np.dtype(dx)) for r in (rx, ry)]
        assert (args[0][-1], big or args[1][-1]) == (mx, big or my)
        x = _f32_around(rx.cmp, 6000).astype(dx) if dx == np.float32 else _edge_values(rx.cmp, dx, 6000)
        y = _f32_around(ry.cmp, 6000).astype(dy) if dy == np.float32 else _edge_values(ry.cmp, dy, 6000)
        x[:4], y[4:8] = [np.nan, np.inf, -np.inf, 0.0], [np.nan, np.inf, -np.inf, 0.0]
        for cdt in (np.int32, np.int64):
            out, tmp = np.empty(x.size, cdt), np.empty(x.size, cdt)
            none = nx * ny
            dropped = cpu_rule.cells2(x, y, *args, out, tmp, cdt(none))
            bx, by = rx.index(x), ry.index(y)
            want = np.where((bx >= 0) & (by >= 0), bx * ny + by, none)
            np.testing.assert_array_equal(out, want)
            assert dropped == np.count_nonzero(want == none)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8,
                                np.uint8, np.uint16, np.uint32, np.uint64])
def test_minmax_matches_numpy(dt):
    """The cpu range (sortable integer keys for floats, reduce.py) against NumPy's min and max:
    NaN anywhere, infinities, the dtype's extremes, all negative, strided and byte-swapped
    (NumPy's path), small (NumPy's) and large enough for the kernel."""
    n = 2 * reduce.KERNEL_FROM + 3
    kind = np.dtype(dt).kind
    cases = []
    for c in range(6):
        if kind == "f":
            a = (RNG.normal(size=n) * 100).astype(dt)
            if c in (1, 5):  # a NaN, its sign bit clear or set (keys above inf, below -inf)
                a[RNG.integers(n)] = np.copysign(np.nan, 1 - c)
            elif c == 2:
                a[5], a[-7] = np.inf, -np.inf
            elif c == 3:
                a[9], a[-11], a[12] = np.finfo(dt).max, -np.finfo(dt).max, np.finfo(dt).tiny
            elif c == 4:
                a = -np.abs(a) - 1
        else:
            info = np.iinfo(dt)
            a = RNG.integers(info.min, info.max, n, dtype=dt, endpoint=True)
            if c == 1:
                a[3], a[-4] = info.min, info.max
            elif c == 2 and info.min < 0:
                a = RNG.integers(info.min, 0, n, dtype=dt)
        cases += [a, a[::3], a.astype(a.dtype.newbyteorder(">")), a[:100]]
    for a in cases:
        lo, hi = minmax(a)
        assert type(lo) is a.dtype.type and type(hi) is a.dtype.type
        if kind == "f" and np.isnan(a).any():
            assert np.isnan(lo) and np.isnan(hi)
        else:
            assert (lo, hi) == (a.min(), a.max())


def test_minmax_zeros_of_both_signs():
    """NumPy's min of -0.0 and 0.0 depends on their order; the kernel's is -0.0 (max 0.0)."""
    a = np.abs(RNG.normal(size=2 * reduce.KERNEL_FROM))
    a[7], a[8] = 0.0, -0.0
    lo, hi = minmax(a)
    assert lo == 0 and np.signbit(lo)
    a = -a
    lo, hi = minmax(a)
    assert hi == 0 and not np.signbit(hi)


SEARCH_EDGES = [  # SEARCH from the bucket of each value's key (CpuRule.key_buckets)
    np.array([-np.inf, -1.0, -0.0, 0.0, 5e-324, 1e-300, 3.0, 1e300, np.inf]),  # zeros, subnormal, infinities
    np.array([0.0, 1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0]),  # from 0.0: -0.0 is in the first bin
    np.concatenate([1.0 + np.arange(200) * 2.0**-52, [1e300]]),  # crowded in a few keys, one far
    np.array([-5.0, -5.0, -5.0, 0.0, 0.0, 2.0, 2.0]),  # repeated edges
    -np.logspace(3, -3, 300),  # negative, log-spaced
    np.sort(np.concatenate([-np.logspace(-3, 3, 100), np.logspace(-3, 3, 100)])),
]


SPLIT_EDGES = [  # every bucket of keys holds at most one edge: one compare (CpuRule.key_splits)
    np.array([-np.inf, -1e3, -1.0, 0.0, 1.0, 1e3, np.inf]),  # +inf in the last bin, NaN in none
    np.logspace(-3, 3, 65).astype(np.float32),  # float32 edges
    np.concatenate([[0.0], np.logspace(-3, 3, 65), [np.inf]]).astype(np.float32),
]


@pytest.mark.parametrize("edges", SEARCH_EDGES + SPLIT_EDGES)
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_search_by_key_buckets_matches_numpy(edges, dt):
    """Values at every edge and its neighbours, both zeros, infinities, NaN and uniform values
    (of each edge's magnitude), float64 and float32 data, against NumPy; SPLIT_EDGES by one
    compare against each bucket's edge."""
    with np.errstate(over="ignore"):
        e = edges.astype(dt) if dt == np.float32 and np.isfinite(edges.astype(dt)).all() else edges
    near = np.concatenate([e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf), [0.0, -0.0, np.nan]])
    spread = RNG.choice(e[np.isfinite(e)], 3000) * RNG.uniform(0.5, 1.5, 3000)
    with np.errstate(over="ignore", invalid="ignore"):
        a = RNG.permutation(np.tile(np.concatenate([near, spread]), 17)).astype(dt)
    assert a.size > 3 * small.SMALL  # the kernels answer, not NumPy
    rule = histogram_rule(a, edges, None)
    assert cpu_rule.rule_args(rule, kernel_dtype(a.dtype))[-1] == cpu_rule.SEARCH
    assert strategy(rule).key_buckets.size > 0
    assert strategy(rule).key_splits.size > 0 or not any(edges is s for s in SPLIT_EDGES)
    np.testing.assert_array_equal(hotbin.histogram(a, edges, backend="cpu")[0], np.histogram(a, edges)[0])


def test_the_rule_holds_semantics_and_the_cpu_compiles_its_strategies():
    """BinRule says which bin a value lands in; the cpu kernels' strategies (recomputed edges,
    exact multiplies, float32 edges, search tables) are the cpu backend's, built once per rule."""
    from hotbin.core.binrule import BinRule

    for name in ("linear", "slack32", "exact_scale", "float32", "key_buckets", "key_splits"):
        assert not hasattr(BinRule, name), name
    rule = histogram_rule(np.linspace(0, 1, 10), 256, (0, 1))
    assert strategy(rule) is strategy(rule)  # compiled once, kept with the rule
    assert strategy(rule).exact_scale == 256.0 and strategy(rule).linear is not None


def _f16_values(rule, n):
    """float16 values on every edge and either side of it, zeros of both signs, subnormals of
    both signs (the smallest, the largest, between), the largest finite, infinities, NaN and
    normal values around the range: ``n`` of them, shuffled."""
    h = np.float16
    e = rule.edges.astype(h)
    tiny, sub = np.finfo(h).smallest_subnormal, np.finfo(h).smallest_normal
    specials = np.array([0.0, -0.0, tiny, -tiny, 3 * tiny, -5 * tiny, sub - tiny, -(sub - tiny),
                         sub, -sub, np.finfo(h).max, -np.finfo(h).max, np.inf, -np.inf, np.nan], h)
    near = np.concatenate([e, np.nextafter(e, h(-np.inf)), np.nextafter(e, h(np.inf)), specials])
    lo, hi = float(e[0]), float(e[-1])
    top = float(np.finfo(h).max)
    fill = np.clip(RNG.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), n), -top, top).astype(h)
    return RNG.permutation(np.concatenate([np.tile(near, -(-n // near.size))[:n // 2], fill])[:n])


@pytest.mark.parametrize("bins, rng", [(256, (0.0, 1.0)), (10, (-1.3, 2.1)), (1000, (-3.1, 2.9)),
                                       (64, (-1e-5, 1e-5)),  # edges among float16's subnormals
                                       (100, (-30000.0, 30000.0)), (37, None), (256, None)])
def test_float16_on_edges_subnormals_inf_nan_match_numpy(bins, rng):
    """float16 data through hotbin.histogram and histogram2d on the cpu backend (the kernels
    read it as float32 under float16 edges): every edge and its neighbours, subnormals,
    zeros of both signs, the largest finite, infinities and NaN (a range given; a range from
    the data gets finite values) bin as numpy.histogram and the rule's own index do."""
    n = 3 * small.SMALL + 17
    probe = np.array([-2.5, 3.0], np.float16)  # a range from the data: these ends
    rule = histogram_rule(probe if rng is None else np.zeros(1, np.float16), bins, rng, minmax=minmax)
    a = _f16_values(rule, n)
    if rng is None:
        a = np.clip(np.nan_to_num(a, nan=0.0), probe[0], probe[1])
        a[:2] = probe
    assert a.dtype == np.float16 and a.size > small.SMALL  # the kernels answer, not NumPy
    got, edges = hotbin.histogram(a, bins, rng, backend="cpu")
    want, want_edges = np.histogram(a, bins, rng)
    assert edges.dtype == want_edges.dtype == np.float16
    np.testing.assert_array_equal(edges, want_edges)
    idx = rule.index(a)
    np.testing.assert_array_equal(np.bincount(idx[idx >= 0], minlength=rule.nbins), want)  # NumPy is right here
    np.testing.assert_array_equal(got, want)
    y = RNG.permutation(a)
    r2 = None if rng is None else (rng, rng)
    H = hotbin.histogram2d(a, y, bins=bins, range=r2, backend="cpu")[0]
    np.testing.assert_array_equal(H, np.histogram2d(a, y, bins=bins, range=r2)[0])
