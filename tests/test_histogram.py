"""histogram, histogram2d, histogramdd against the NumPy oracle, on every backend (the `backend` fixture)."""
import contextlib
import decimal

import numpy as np
import pytest

import hotbin
from hotbin.core import binning
from conftest import to_numpy

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.float16, np.float32, np.float64]


def oracle(a, bins=10, range=None, weights=None):
    """Exact-rule reference: NumPy's edges, BinRule.index, integer bincount."""
    a = np.asarray(a)
    rule = binning.histogram_rule(binning.check_data(a), bins, range,
                                  minmax=lambda v: (v.min(), v.max()))
    idx = rule.index(a.reshape(-1))
    keep = idx >= 0
    w = None if weights is None else np.asarray(weights).reshape(-1)[keep]
    if w is not None and w.dtype.kind in "biu":
        out = np.zeros(rule.nbins, np.int64)
        np.add.at(out, idx[keep], w.astype(np.int64))
        return out, rule.edges
    return np.bincount(idx[keep], weights=w, minlength=rule.nbins), rule.edges


def bool_warning(a):
    """NumPy's warning for bool values (hotbin gives it too), else nothing expected."""
    if np.asarray(a).dtype != np.bool_:
        return contextlib.nullcontext()
    return pytest.warns(RuntimeWarning, match=r"^Converting input from bool to <class 'numpy.uint8'> "
                                              r"for compatibility\.$")


def check(backend, a, bins=10, range=None, weights=None, numpy_too=True):
    with bool_warning(a):
        h, e = hotbin.histogram(a, bins, range, weights=weights, backend=backend)
    h, e = to_numpy(h), to_numpy(e)
    ho, eo = oracle(a, bins, range, weights)
    np.testing.assert_array_equal(e, eo)
    assert e.dtype == eo.dtype
    if weights is None:
        assert h.dtype == np.int64
        np.testing.assert_array_equal(h, ho)
    else:
        np.testing.assert_allclose(h, ho, rtol=1e-12)
    if numpy_too:
        an = a.astype(np.uint8) if a.dtype == np.bool_ else a  # NumPy's own conversion, without its warning
        hn, en = np.histogram(an, bins, range, weights=weights)
        np.testing.assert_array_equal(e, en)
        assert e.dtype == en.dtype
        np.testing.assert_allclose(h, hn, rtol=1e-12)
    return h, e


def sample(dtype, n, rng):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(n) < 0.3
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, n, endpoint=True).astype(dt)
    return (rng.standard_normal(n) * 10).astype(dt)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtypes_auto_range(backend, dtype, rng):
    check(backend, sample(dtype, 20_001, rng), bins=37)


def test_float16_few_values_array_edges(backend, rng):
    """float16 data of a few hundred values repeated, with -0.0, under edges of float64 and
    float32 arrays: the rule's counts (the values widened exactly). NumPy counts array edges by
    sorting each block of values, and its AVX-512 float16 sort (NumPy 2.4.6 on the AMD EPYC VM,
    Zen 5) left such blocks out of order, so np.histogram miscounted (a fuzz of 56 622 calls:
    74 of its 75 differences); the oracle here does not sort. The 75th: 1000 bins over float16
    data's own range (-41, -1), float16 edges 0.04 apart against float16's 2**-5 spacing there,
    where NumPy's float16 guess lands two bins off and its one-bin correction leaves 32 values
    in bins whose edges they are not between; hotbin keeps the edges' rule."""
    a = np.round(rng.uniform(-130, -120, 70_000), 1).astype(np.float16)
    a[::997] = -0.0
    for e in (np.sort(rng.uniform(-131, -119, 12)), np.geomspace(-130.5, -121.5, 40).astype(np.float32),
              np.array([-187.56547092, -129.0, -0.0, 0.0, 1.0])):
        check(backend, a, bins=e, numpy_too=False)
    check(backend, np.random.default_rng(0).uniform(-41, -1, 35_000).astype(np.float16), bins=1000,
          numpy_too=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtypes_given_range_and_edges(backend, dtype, rng):
    a = sample(dtype, 5_000, rng)
    check(backend, a, bins=16, range=(-3.5, 200))
    check(backend, a, bins=[-50, -1, 0, 0.5, 3, 100, 1000])
    check(backend, a, bins=np.array([-7, 0, 2, 9, 400], np.int64))


def test_uint8_full_range(backend, rng):
    a = rng.integers(0, 256, 1 << 20, dtype=np.uint8)
    h, _ = check(backend, a, 256, (0, 256))
    assert h.sum() == a.size
    narrow = (rng.integers(0, 61, 1 << 18) + 100).astype(np.uint8)
    check(backend, narrow, 256, (0, 256))
    const = np.full(1 << 18, 201, np.uint8)
    h, _ = check(backend, const, 256, (0, 256))
    assert h[201] == const.size


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.bool_])
@pytest.mark.parametrize("ways", [(0, 1), (1, 0), (0,), (1,)])
def test_8bit_counted_either_way(dtype, ways, rng, monkeypatch):
    """The cpu backend counts large 8-bit inputs by pairs of bytes or a byte at a time, each
    piece the way its thread timed faster (count1d._byte_counts; ``ways``: tried in this
    order, a thread's first two pieces one each way): every byte once, whatever the size's
    parity, the start's alignment, the stride or the pieces each way counted (a lone byte at
    either end is counted apart)."""
    from hotbin.backend.cpu import count1d, parallel
    monkeypatch.setattr(count1d, "PAIRS_FROM", 8)
    monkeypatch.setattr(count1d, "WAYS", ways)
    monkeypatch.setattr(parallel, "PIECE", 256)  # many pieces: the ways mixed in a call
    a = rng.integers(0, 256, 40_099, dtype=np.uint8).view(dtype) if dtype != np.bool_ else rng.random(40_099) < 0.3
    lo, hi = (-128, 128) if dtype == np.int8 else (0, 256)
    for x in (a, a[1:], a[1:-1], a[2:], a[::3], a[:9], a[:1]):
        for bins, r in ((256, (lo, hi)), (7, (lo + 3.5, hi - 40))):
            check("cpu", x, bins, r)
    hot = np.full(50_001, 201, np.uint8).view(dtype)[1:]  # bool: a mask of 201s, all True
    check("cpu", hot, 256, (lo, hi))


@pytest.mark.parametrize("bins", [7, 256, 1000, 5000])
def test_cpu_weighted_sums_in_copies(bins, rng, monkeypatch):
    """The cpu backend's 1-D weighted sums go to interleaved copies of the bins, 4 points a step
    (count1d.part_sum1; fewer copies for wide histograms): integer weights equal NumPy's sums
    exactly and float weights to rounding, for uniform, narrow and constant data on an edge,
    lengths that leave a remainder, strided weights, several threads and several chunks."""
    from hotbin.backend.cpu import chunks, copies
    monkeypatch.setattr(chunks, "CALL", 3001)  # several calls: each adds to the same copies
    n = 20003
    for x in (rng.random(n) * 1.2 - 0.1, 0.5 + rng.random(n) / 100, np.full(n, 0.25)):
        wi = rng.integers(-1000, 1000, 2 * n)[::2]
        wf = rng.standard_normal(n)
        wf[7] = np.nan if bins == 7 else wf[7]
        for m in (n, n - 1, n - 2, 5):
            h, _ = hotbin.histogram(x[:m], bins, (0, 1), weights=wi[:m], backend="cpu")
            np.testing.assert_array_equal(h, np.histogram(x[:m], bins, (0, 1), weights=wi[:m])[0])
            h, _ = hotbin.histogram(x[:m], bins, (0, 1), weights=wf[:m], backend="cpu")
            np.testing.assert_allclose(h, np.histogram(x[:m], bins, (0, 1), weights=wf[:m])[0], rtol=1e-12,
                                       atol=1e-9)
    assert copies.copies(bins + 1, 8, copies.SUM_SUBS) == (4 if bins <= 1000 else 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_cpu_runs_in_one_bin(dtype, rng):
    """The cpu backend's 1-D counts take a block all in the previous block's bin at once
    (count1d.part_count1, tested against the bin's edges): constants inside a bin, on an edge
    and on the closed last edge, off the range, broken by a NaN, a value off the range or one in the next
    bin, and sorted data whose bins span many blocks, against NumPy."""
    n = 40_000
    for rng_, v in (((0, 1), 0.5), ((0, 1), 0.25), ((0, 1), 1.0), ((-3, 5), 2.0), ((0, 100), 37.0), ((0, 1), 5.0)):
        a = np.full(n, v, dtype)
        for bad in ([], [11_000], [11_000, 25_000, 39_999]):
            b = a.copy()
            for i, k in enumerate(bad):
                b[k] = (np.nan if i == 0 else rng_[1] + 7) if b.dtype.kind == "f" else rng_[1] + 7 + i
            if len(bad) == 3:
                b[30_000:30_500] = b.dtype.type(v - 1)  # the run moves to another bin and back
            for bins in (8, 256):
                check("cpu", b, bins, rng_)
    check("cpu", np.sort(sample(dtype, n, rng)), 16, (-30, 30))
    check("cpu", np.sort(sample(dtype, n, rng))[::-1], 7)
    check("cpu", np.repeat(np.array([5, 1, 5, 0], dtype), n // 4), 8, (0, 1))  # off the range, then the top edge


def test_cpu_runs_of_one_value(rng):
    """1-D counts add RUN values all alike at once (count1d._tally), into one copy of their
    counters (8-bit data by pairs of bytes, 16-bit values, bincount of those, 10000 bins) or
    into interleaved copies (8-bit data a byte at a time, its bincount, 256 bins): runs shorter
    and longer than RUN, across its blocks, broken at their first, middle and last value,
    against NumPy."""
    from hotbin.backend.cpu.count1d import PAIRS_FROM, RUN
    n = PAIRS_FROM + 3 * RUN + 7
    a = np.full(n, 201, np.uint8)
    for k in (0, RUN // 2, RUN - 1, 5 * RUN + 3, 7 * RUN, n - 1):
        a[k] = 9
    b = np.repeat(rng.integers(0, 256, n // 300 + 1), 300)[:n].astype(np.uint8)  # runs of 300 bytes
    c = np.repeat(rng.integers(0, 256, n // 3000 + 1), 3000)[:n].astype(np.uint8)
    for v in (a, b, c, a[1:], c[::-1]):
        np.testing.assert_array_equal(hotbin.histogram(v, 256, (0, 256), backend="cpu")[0],
                                      np.bincount(v, minlength=256))
        w = v.astype(np.uint16) * 257  # 16-bit values: one copy of 65536 counters
        np.testing.assert_array_equal(hotbin.histogram(w, 1000, (0, 65536), backend="cpu")[0],
                                      np.histogram(w, 1000, (0, 65536))[0])
        np.testing.assert_array_equal(hotbin.bincount(w, backend="cpu"), np.bincount(w))
        f = v.astype(np.float64)
        for bins in (10000, 256):
            np.testing.assert_array_equal(hotbin.histogram(f, bins, (0, 256), backend="cpu")[0],
                                          np.histogram(f, bins, (0, 256))[0])
        u = v[:PAIRS_FROM - 1]  # a byte at a time
        np.testing.assert_array_equal(hotbin.histogram(u, 256, (0, 256), backend="cpu")[0],
                                      np.bincount(u, minlength=256))
        np.testing.assert_array_equal(hotbin.bincount(u, backend="cpu"), np.bincount(u))


def test_cpu_keeps_the_last_partials(monkeypatch):
    """kept.keep holds the KEPT_MAX partials kept last (the oldest goes): a partial of another
    shape no longer stops every later one from being kept."""
    from hotbin.backend.cpu import kept
    monkeypatch.setattr(kept, "_KEPT", {})
    arrays = [np.ones((2, k + 1), np.uint32) for k in range(kept.KEPT_MAX + 2)]
    for a in arrays:
        kept.keep(a, [(0, 1)])
    assert kept.partials((2, 1), np.uint32)[1] == []  # the oldest went: a new one, no ranges
    got, dirty = kept.partials(arrays[-1].shape, np.uint32)
    assert got is arrays[-1] and dirty == [(0, 1)]


def test_cpu_counts_fold_before_their_partials_fill(rng, monkeypatch):
    """The cpu backend's uint32 1-D partials are kept over chunks and folded into int64 once
    count1d.FOLD_AT values could have been counted into them: over several chunks and folds,
    with the fold falling inside a chunk's worth, against NumPy."""
    from hotbin.backend.cpu import chunks, count1d
    monkeypatch.setattr(chunks, "CALL", 40_000)
    for fold_at in (40_000, 100_000, 10 ** 9):
        monkeypatch.setattr(count1d, "FOLD_AT", fold_at)
        a = rng.integers(0, 256, count1d.PAIRS_FROM + 3, dtype=np.uint8)
        np.testing.assert_array_equal(hotbin.histogram(a, 256, (0, 256), backend="cpu")[0],
                                      np.bincount(a, minlength=256))
        w = rng.integers(0, 65536, 300_001).astype(np.uint16)
        np.testing.assert_array_equal(hotbin.histogram(w, 100, (0, 65536), backend="cpu")[0],
                                      np.histogram(w, 100, (0, 65536))[0])
        f = rng.random(300_001)
        for bins in (256, 10_000):
            np.testing.assert_array_equal(hotbin.histogram(f, bins, (0, 1), backend="cpu")[0],
                                          np.histogram(f, bins, (0, 1))[0])


@pytest.mark.parametrize("threads", [1, 2, 16])
def test_cpu_counts_wrap_past_their_partials(threads, rng, monkeypatch):
    """The cpu backend counts 2-D points into uint8 partials (wraps.COUNT_PARTIAL) and adds
    each wrap past 255 back at the fold: cells visited in turn (no hot cell: a point at a
    time), a hot cell (its points added at once), blocks all in one cell, points in no cell
    (counted in the last slot: ``dropped``), by category, over several chunks, against NumPy."""
    from hotbin.backend.cpu import chunks, parallel
    monkeypatch.setattr(chunks, "CALL", 40000)  # several calls: the wraps of each are added
    old = parallel.set_threads(threads)
    try:
        n = 100_003
        turn = np.tile((np.arange(16) + 0.5) / 16, -(-n // 16))[:n]  # 16 cells in turn, 6250 points each
        off = np.where(np.arange(n) % 3 == 0, 2.0, turn)  # a third off the grid
        hot = np.where(rng.random(n) < 0.6, 0.3, rng.random(n))
        for x in (turn, off, hot, np.full(n, 0.7), rng.random(n)):
            y = x[::-1] if x is hot else x
            for bins in (16, 1000):
                h = hotbin.histogram2d(x, y, bins=bins, range=((0, 1), (0, 1)), backend="cpu")[0]
                np.testing.assert_array_equal(h, np.histogram2d(x, y, bins=bins, range=((0, 1), (0, 1)))[0])
            hm = hotbin.heatmap(x, y, width=16, height=16, x_range=(0, 1), y_range=(0, 1), backend="cpu")
            assert hm.dropped == np.count_nonzero(x >= 1) and hm.counts.sum() + hm.dropped == n
            codes = np.arange(n) % 3 - (np.arange(n) % 7 == 0)  # by category (part_count_by); -1: none
            hm = hotbin.heatmap(x, y, by=codes, width=16, height=16, x_range=(0, 1), y_range=(0, 1),
                                backend="cpu")
            for i, g in enumerate(hm.categories):
                want = np.histogram2d(y[codes == g], x[codes == g], bins=16, range=((0, 1), (0, 1)))[0]
                np.testing.assert_array_equal(hm.values[i], want)
    finally:
        parallel.set_threads(old)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_cpu_compaction_of_hot_blocks(dtype, rng):
    """compact.others (the cells of a block other than its hot cell, in order; sixteen at a
    time with AVX-512, one at a time elsewhere and for int64 cells) against NumPy: every
    length up to past a block, no hot cell, some, all, and negative cells."""
    from numba import njit
    from hotbin.backend.cpu.compact import others

    @njit
    def run(cx, m, hot, tmp):
        return others(cx, m, hot, tmp)

    for m in list(range(0, 40)) + [2047, 2048]:
        for share in (0.0, 0.3, 0.9, 1.0):
            cx = np.where(rng.random(m) < share, 7, rng.integers(-3, 20, m)).astype(dtype)
            tmp = np.full(m + 16, -9, dtype)
            j = run(cx, m, np.int64(7), tmp)
            np.testing.assert_array_equal(tmp[:j], cx[cx != 7])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_scaled_rules_on_edges(backend, dtype):
    """Ranges whose guess is exact (lo 0, a power-of-2 scale, every edge i / scale: the cpu
    kernels' SCALED mode, no correction): every edge, its neighbours both ways, subnormals,
    -0.0, the closed top edge and beyond, NaN and infinities land as NumPy puts them."""
    from hotbin.backend.cpu.rule import SCALED, SCALED32, rule_args
    for bins, r in ((256, (0, 1)), (100, (0, 100)), (64, (0, 0.5)), (4096, (0, 65536)), (8, (0, 2 ** 40))):
        e = np.histogram_bin_edges(np.empty(0, dtype), bins, r)
        if np.dtype(dtype).kind == "f":
            e = e.astype(dtype)
            t = dtype
            tiny = np.array([np.finfo(t).smallest_subnormal, -np.finfo(t).smallest_subnormal, -0.0,
                             np.nan, np.inf, -np.inf], t)
            vals = np.concatenate([e, np.nextafter(e, t(np.inf)), np.nextafter(e, t(-np.inf)), tiny])
        else:
            e = np.unique(e.astype(dtype))
            vals = np.concatenate([e, e + 1, e - 1])
        assert rule_args(binning.histogram_rule(vals, bins, r), vals.dtype)[-1] in (SCALED, SCALED32), (bins, r)
        check(backend, np.tile(vals, 40000 // vals.size + 1), bins, r)  # past small.SMALL: the kernels


def test_bool_from_other_bytes(backend):
    """A bool array viewed from bytes other than 0 and 1 (a 0/255 image mask) counts as
    NumPy's conversion does: every non-zero byte is True, 1."""
    mask = (np.arange(4096) % 3 == 0).astype(np.uint8) * np.uint8(255)
    check(backend, mask.view(np.bool_), 4, (0, 4))
    check(backend, mask.view(np.bool_), 256, (0, 256))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_on_edges_and_neighbours(backend, dtype):
    edges = np.histogram_bin_edges(np.empty(0, dtype), 7, (-1.3, 2.9))
    e = edges.astype(dtype)
    vals = np.concatenate([e, np.nextafter(e, dtype(-np.inf)), np.nextafter(e, dtype(np.inf))]).astype(dtype)
    check(backend, vals, 7, (-1.3, 2.9))
    # explicit float64 edges with float32 data compare in float64
    check(backend, vals, edges.tolist())


def test_nan_inf(backend):
    a = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, 0.5, np.nan, 1.0], np.float64)
    h, _ = check(backend, a, 4, (0, 1))
    assert h.sum() == 4
    check(backend, a, [-np.inf, 0, 1, np.inf])
    with pytest.raises(ValueError, match="not finite"):
        hotbin.histogram(a, 4, backend=backend)
    with pytest.raises(ValueError, match="not finite"):
        hotbin.histogram(np.array([1.0, np.nan]), 4, backend=backend)


def test_empty_outside_constant(backend):
    check(backend, np.array([], np.float64), 5)
    h, _ = check(backend, np.array([5.0, 6.0, -1.0]), 3, (0, 1))
    assert h.sum() == 0
    h, e = check(backend, np.full(1000, 3.25), 4)  # equal ends widened by 0.5
    assert e[0] == 2.75 and h.sum() == 1000


def test_nonuniform_and_repeated_edges(backend, rng):
    a = rng.random(10_000) * 4
    check(backend, a, [0, 0.1, 0.11, 2, 3.99, 4])
    check(backend, np.array([0, 1, 1, 1, 2, 2.0]), [0, 1, 1, 2, 2])


def test_tiny_bins_float32(backend, rng):
    # many bins over a narrow float32 range: guesses are off, the edges decide
    a = (1 + rng.random(50_000) * 1e-3).astype(np.float32)
    check(backend, a, 997, numpy_too=False)


def test_subnormal_range(backend):
    # nbins / width overflows: the guess must not become NaN (an out-of-bounds index)
    a = np.array([5e-324, 0.0, 5e-324])
    check(backend, a, 1)
    check(backend, a, [0.0, 5e-324])


def test_many_bins(backend, rng):
    a = rng.random(100_000)
    check(backend, a, 1 << 20, (0, 1))


def test_layouts_and_byte_order(backend, rng):
    base = rng.standard_normal((300, 400)).astype(np.float32)
    for a in (base[:, ::3], base.T, base[::-1], base.astype(">f4"), base.astype(">f8")[::2]):
        check(backend, a, 23, (-2, 2))
        w = rng.random(a.shape)
        check(backend, a, 23, (-2, 2), weights=w)


def test_weights_never_wrap(backend, rng):
    a = rng.integers(0, 4, 10_000).astype(np.uint8)
    w = np.full(a.shape, 100, np.int8)
    h, _ = hotbin.histogram(a, 4, (0, 4), weights=w, backend=backend)
    h = to_numpy(h)
    assert h.dtype == np.int64
    np.testing.assert_array_equal(h, np.bincount(a, minlength=4) * 100)
    wf = rng.random(a.shape).astype(np.float32)
    h, _ = hotbin.histogram(a, 4, (0, 4), weights=wf, backend=backend)
    assert to_numpy(h).dtype == np.float64
    np.testing.assert_allclose(to_numpy(h), np.bincount(a, wf.astype(np.float64), 4), rtol=1e-12)
    wc = wf + 1j * wf[::-1]
    h, _ = hotbin.histogram(a, 4, (0, 4), weights=wc, backend=backend)
    np.testing.assert_allclose(to_numpy(h), np.histogram(a, 4, (0, 4), weights=wc.astype(np.complex128))[0])


def test_density(backend, rng):
    a = rng.standard_normal(5000)
    for bins in (13, [-3, -1, 0, 0.5, 4]):
        h, _ = hotbin.histogram(a, bins, density=True, backend=backend)
        np.testing.assert_allclose(to_numpy(h), np.histogram(a, bins, density=True)[0], rtol=1e-14)


def test_string_bins(backend, rng):
    a = rng.standard_normal(3000)
    for rule in ("auto", "fd", "sturges", "sqrt"):
        check(backend, a, rule)


@pytest.mark.parametrize("bad, exc, match", [
    (dict(bins=0), ValueError, "positive"),
    (dict(bins=-3), ValueError, "positive"),
    (dict(bins=[3, 1, 2]), ValueError, "monotonically"),
    (dict(bins=[[1, 2]]), ValueError, "1d"),
    (dict(bins=5, range=(2, 1)), ValueError, "max must be larger"),
    (dict(bins=5, range=(0, np.inf)), ValueError, "not finite"),
    (dict(bins=5, range=(0, np.nan)), ValueError, "not finite"),
    (dict(bins=2.5), TypeError, None),
    (dict(weights=np.ones(3)), ValueError, "same shape"),
])
def test_invalid_arguments(backend, bad, exc, match):
    a = np.arange(10.0)
    kw = dict(bins=10, range=None, weights=None)
    kw.update(bad)
    with pytest.raises(exc, match=match):
        hotbin.histogram(a, **kw, backend=backend)
    with pytest.raises(exc):
        np.histogram(a, **kw)


@pytest.mark.parametrize("data", [np.array([1 + 2j]), np.array(["a", "b"]), np.array([object()])])
def test_invalid_dtypes(backend, data):
    with pytest.raises(TypeError, match="a:"):
        hotbin.histogram(data, backend=backend)


def test_unknown_backend(monkeypatch):
    with pytest.raises(ValueError, match="'nope'"):
        hotbin.histogram([1, 2], backend="nope")
    monkeypatch.setenv("HOTBIN_BACKEND", "nope2")
    with pytest.raises(ValueError, match="'nope2'"):
        hotbin.histogram([1, 2])
    monkeypatch.setenv("HOTBIN_BACKEND", "cpu")
    assert to_numpy(hotbin.histogram([1, 2], 2)[0]).tolist() == [1, 1]
    assert hotbin.backends()[0] == "cpu"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_2_to_24_bins(backend, dtype, rng):
    # the largest bin count of issue #8, on data spread over all of them
    a = rng.random(1 << 20).astype(dtype)
    h = to_numpy(hotbin.histogram(a, 1 << 24, (0, 1), backend=backend)[0])
    np.testing.assert_array_equal(h, np.histogram(a, 1 << 24, (0, 1))[0])
    assert h.sum() == a.size and h.dtype == np.int64


def test_huge_count_in_one_bin():
    # 2**32 + 3 samples (a stride-0 view: no memory) all in one bin: int64, no wrap
    n = (1 << 32) + 3
    a = np.broadcast_to(np.uint8(7), (n,))
    h, _ = hotbin.histogram(a, 4, (0, 8), backend="cpu")
    assert h.tolist() == [0, 0, 0, n]


# --- 2-D ------------------------------------------------------------------------

def check2d(backend, x, y, bins=10, range=None, weights=None, density=False):
    H, xe, ye = hotbin.histogram2d(x, y, bins, range, weights=weights, density=density, backend=backend)
    H, xe, ye = to_numpy(H), to_numpy(xe), to_numpy(ye)
    Hn, xen, yen = np.histogram2d(x, y, bins, range, weights=weights, density=density)
    np.testing.assert_array_equal(xe, xen)
    np.testing.assert_array_equal(ye, yen)
    assert xe.dtype == xen.dtype and ye.dtype == yen.dtype
    if weights is None and not density:
        assert H.dtype == np.int64
        np.testing.assert_array_equal(H, Hn)
    else:
        np.testing.assert_allclose(H, Hn, rtol=1e-12)
    return H


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
def test_2d_matches_numpy(backend, dtype, rng):
    x, y = sample(dtype, 20_000, rng), sample(dtype, 20_000, rng)
    check2d(backend, x, y, 17)
    check2d(backend, x, y, [5, 9], [[-10, 10], [0, 30]])
    check2d(backend, x, y, [[-5, 0, 1, 30], [0, 2, 50]])
    check2d(backend, x, y, 7, weights=rng.random(x.size))
    check2d(backend, x, y, 7, density=True)


def test_2d_closed_last_edge_and_dropped(backend):
    x = np.array([0.0, 1.0, 1.0, 0.5, np.nan, 2.0, -0.1])
    y = np.array([0.0, 1.0, 0.0, 0.5, 0.5, 0.5, 0.5])
    H = check2d(backend, x, y, 2, [[0, 1], [0, 1]])
    assert H.sum() == 4 and H[1, 1] == 2 and H[1, 0] == 1


def test_2d_validation(backend):
    with pytest.raises(ValueError, match="same length"):
        hotbin.histogram2d([1, 2], [1], backend=backend)
    with pytest.raises(ValueError, match="positive"):
        hotbin.histogram2d([1, 2], [1, 2], bins=0, backend=backend)
    with pytest.raises(ValueError, match="monotonically"):
        hotbin.histogram2d([1, 2], [1, 2], bins=[[1, 0], [0, 1]], backend=backend)


# --- batches: one histogram per slice (axis=) ---------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.float32, np.float64])
def test_axis_one_histogram_per_slice(backend, dtype, rng):
    a = sample(dtype, 37 * 501, rng).reshape(37, 501)
    for bins, range_ in ((16, (-3.5, 200)), (256, (0, 256)), ([-50, -1, 0, 3, 1000], None), (9, None)):
        h, e = hotbin.histogram(a, bins, range_, axis=-1, backend=backend)
        h = to_numpy(h)
        edges = np.histogram_bin_edges(a, bins, range_)
        np.testing.assert_array_equal(to_numpy(e), edges)
        want = np.stack([oracle(row, edges)[0] for row in a])
        assert h.shape == (37, edges.size - 1) and h.dtype == np.int64
        np.testing.assert_array_equal(h, want)
    h0 = to_numpy(hotbin.histogram(a, 7, (0, 100), axis=0, backend=backend)[0])
    np.testing.assert_array_equal(h0, np.stack([np.histogram(c, 7, (0, 100))[0] for c in a.T]))


def test_axis_batches_nan_empty_density_and_errors(backend, rng):
    imgs = rng.standard_normal((3, 4, 50))
    imgs[1, 2, :7] = np.nan
    h = to_numpy(hotbin.histogram(imgs, 11, (-2, 2), axis=2, backend=backend)[0])
    np.testing.assert_array_equal(h, np.apply_along_axis(lambda r: np.histogram(r, 11, (-2, 2))[0], 2, imgs))
    d = to_numpy(hotbin.histogram(imgs, 11, (-2, 2), axis=-1, density=True, backend=backend)[0])
    np.testing.assert_allclose(d[0, 0], np.histogram(imgs[0, 0], 11, (-2, 2), density=True)[0])
    assert to_numpy(hotbin.histogram(np.empty((0, 5)), 3, (0, 1), axis=1, backend=backend)[0]).shape == (0, 3)
    assert to_numpy(hotbin.histogram(np.empty((0, 5), np.uint8), 3, (0, 1), axis=1,
                                     backend=backend)[0]).shape == (0, 3)
    with pytest.raises(ValueError, match="axis"):
        hotbin.histogram(imgs, 3, axis=3, backend=backend)
    with pytest.raises(TypeError, match="axis"):
        hotbin.histogram(imgs, 3, axis=1.5, backend=backend)
    with pytest.raises(ValueError, match="weights"):
        hotbin.histogram(imgs, 3, weights=imgs, axis=0, backend=backend)


# --- NumPy's signatures, histogramdd, histogram_bin_edges (issue #13) ----------------------

def test_numpy_positional_order(backend, rng):
    # density is the 4th positional argument and weights the 5th, as in NumPy
    a, w = rng.random(300), rng.random(300)
    h, e = hotbin.histogram(a, 7, (0, 1), True, w, backend=backend)
    np.testing.assert_allclose(to_numpy(h), np.histogram(a, 7, (0, 1), True, w)[0], rtol=1e-12)
    H, xe, ye = hotbin.histogram2d(a, w, 5, None, True, w, backend=backend)
    np.testing.assert_allclose(to_numpy(H), np.histogram2d(a, w, 5, None, True, w)[0], rtol=1e-12)
    s = np.stack([a, w, a[::-1]], axis=1)
    H, _ = hotbin.histogramdd(s, 3, None, True, w, backend=backend)
    np.testing.assert_allclose(to_numpy(H), np.histogramdd(s, 3, None, True, w)[0], rtol=1e-12)


def check_dd(backend, sample, bins=10, range=None, weights=None, density=False, **kw):
    H, edges = hotbin.histogramdd(sample, bins, range, density, weights, backend=backend, **kw)
    Hn, edn = np.histogramdd(sample, bins, range, density, weights)
    assert len(edges) == len(edn)
    for e, en in zip(edges, edn):
        np.testing.assert_array_equal(to_numpy(e), en)
        assert to_numpy(e).dtype == en.dtype
    H = to_numpy(H)
    assert H.shape == Hn.shape
    if weights is None and not density:
        assert H.dtype == np.int64
        np.testing.assert_array_equal(H, Hn)
    else:
        np.testing.assert_allclose(H, Hn, rtol=1e-12)
    return H


@pytest.mark.parametrize("dims", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
def test_histogramdd_matches_numpy(backend, dtype, dims, rng):
    s = np.stack([sample(dtype, 3000, rng) for _ in range(dims)], axis=1)
    check_dd(backend, s, 6)
    check_dd(backend, s, [[-5, 0, 1, 30], 5, [0, 2, 2, 50], 3][:dims])  # edges, counts, repeated edges
    holes = s.copy()
    if s.dtype.kind == "f":
        holes[::97, -1] = np.nan  # dropped, like points outside the range
    check_dd(backend, holes, [3, 4, 5, 6][:dims], [[-10, 10], [0, 30], [-5, 5], [1, 3]][:dims])
    check_dd(backend, s, 4, weights=rng.random(len(s)))
    check_dd(backend, s, 4, weights=rng.integers(-5, 5, len(s)))
    check_dd(backend, s, 4, density=True)
    if dims == 2:  # histogram2d is histogramdd of (x, y)
        H, xe, ye = hotbin.histogram2d(s[:, 0], s[:, 1], 6, backend=backend)
        Hd, (xd, yd) = hotbin.histogramdd(s, 6, backend=backend)
        np.testing.assert_array_equal(to_numpy(H), to_numpy(Hd))
        np.testing.assert_array_equal(to_numpy(xe), to_numpy(xd))


def test_histogramdd_edges_chunks_and_determinism(backend, monkeypatch, rng):
    # values on every edge (the last one closed), just outside, NaN; codes counted in many chunks
    e = np.linspace(0, 1, 5)
    grid = np.array(np.meshgrid(e, e, e, indexing="ij")).reshape(3, -1).T
    s = np.concatenate([grid, [[-1e-9, 0.5, 0.5], [0.5, 1 + 1e-9, 0.5], [0.5, 0.5, np.nan]],
                        rng.random((500, 3))])
    w = rng.standard_normal(len(s))
    H = check_dd(backend, s, 4, [(0, 1)] * 3)
    assert H.sum() == len(s) - 3 and H[-1, -1, -1] >= 1
    ref = to_numpy(hotbin.histogramdd(s, 4, [(0, 1)] * 3, weights=w, deterministic=True, backend=backend)[0])
    monkeypatch.setattr(hotbin.exec.grid, "CODE_CHUNK", 7)
    check_dd(backend, s, [4, e, 3], [(0, 1), None, (-1, 2)])
    p = rng.permutation(len(s))
    got = to_numpy(hotbin.histogramdd(s[p], 4, [(0, 1)] * 3, weights=w[p], deterministic=True,
                                      backend=backend)[0])
    assert got.tobytes() == ref.tobytes()  # bitwise: any order, any chunking
    np.testing.assert_allclose(got, np.histogramdd(s, 4, [(0, 1)] * 3, weights=w)[0], atol=1e-9)
    c = to_numpy(hotbin.histogramdd(s, 4, [(0, 1)] * 3, weights=w * (1 + 2j), backend=backend)[0])
    real = np.histogramdd(s, 4, [(0, 1)] * 3, weights=w)[0]  # NumPy's histogramdd takes no complex weights
    np.testing.assert_allclose(c, real + 2j * real, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int16, np.uint8, np.float16])
def test_cpu_bin_index_is_the_rules_index(dtype, rng, monkeypatch):
    """The cpu backend's bin_index (histogramdd's D >= 3 cells, by the kernels' bin codes) is
    BinRule.index, value for value: every edge and its neighbours, NaN, infinities, values
    off the range, edges from data and given, int64 ends only exact in integers; and a
    D = 3 histogramdd over several code chunks is NumPy's."""
    from hotbin.exec import grid
    from hotbin.backend import cpu
    from hotbin.backend.cpu import small
    n = 3 * small.SMALL + 17
    a = sample(dtype, n, rng)
    for bins, r in ((7, None), (64, (0, 1)), (10, (-3.5, 40)), ([-5, 0, 1, 30], None)):
        rule = binning.histogram_rule(a, bins, r, minmax=cpu.minmax)
        e = rule.edges.astype(a.dtype) if a.dtype.kind == "f" else rule.edges
        v = a.copy()
        if a.dtype.kind == "f":
            near = np.concatenate([e, np.nextafter(e, a.dtype.type(np.inf)), np.nextafter(e, a.dtype.type(-np.inf)),
                                   np.array([np.nan, np.inf, -np.inf], a.dtype)])
            v[:near.size] = near
        np.testing.assert_array_equal(cpu.bin_index(v, rule), rule.index(v))
    big = np.array([2**53 + 1, 2**53 + 3, 2**53 + 4, 2**53 - 1] * (n // 4), np.int64)
    rule = binning.histogram_rule(big, 2, (2**53, 2**53 + 4), minmax=cpu.minmax)
    np.testing.assert_array_equal(cpu.bin_index(big, rule), rule.index(big))
    monkeypatch.setattr(grid, "CODE_CHUNK", small.SMALL + 5)
    s = np.stack([sample(dtype, n, rng) for _ in range(3)], axis=1)
    check_dd("cpu", s, [5, [-5, 0, 1, 30], 3])


def test_histogramdd_sample_forms(backend):
    # an (N, D) array, D 1-D arrays (list or tuple), a 1-D array, a list of numbers, empty
    x, y, z = np.arange(5), np.arange(5.0) * 2, np.arange(5, dtype=np.uint8)
    for s in ([x, y, z], (x, y, z), np.stack([x, y, z], 1), [list(x), list(y), list(z)]):
        check_dd(backend, s, 5)
    check_dd(backend, y, 3)
    check_dd(backend, [0.9999999995, 1.0, 1.0000000001], [[0.0, 0.5, 1.0]])
    check_dd(backend, [[], [], []], 2)
    check_dd(backend, np.zeros((10, 2), int), 2)  # equal ends widened by 0.5
    big = 2 ** 60  # compared as int64, not through float64
    check_dd(backend, (np.array([0]), big + np.array([0])), (np.array([-1, 1]), big + np.array([-1, 1])))
    check_dd(backend, np.array([[True, False], [True, True]]), 2)  # no bool warning: NumPy has none here


@pytest.mark.parametrize("kw, exc, match", [
    (dict(bins=[2, 3]), ValueError, "dimension of bins"),
    (dict(range=[(0, 1)] * 2), ValueError, "one entry per dimension"),
    (dict(bins=[1, 0.99, 1]), ValueError, r"bins\[1\]` must be positive"),
    (dict(bins=[1, 2.5, 1]), TypeError, r"bins\[1\]` must be an integer"),
    (dict(bins=[1, [1, 3, 2], 1]), ValueError, "monotonically"),
    (dict(range=[(0, 1), (1, 0), (0, 1)]), ValueError, "max must be larger"),
    (dict(range=[(0, 1), (0, np.inf), (0, 1)]), ValueError, "not finite"),
    (dict(weights=np.ones(3)), ValueError, "same shape"),
])
def test_histogramdd_errors(backend, kw, exc, match):
    s = np.arange(12.0).reshape(4, 3)
    with pytest.raises(exc, match=match):
        hotbin.histogramdd(s, **kw, backend=backend)
    with pytest.raises(exc):
        np.histogramdd(s, **kw)


def test_histogramdd_bad_samples(backend):
    with pytest.raises(ValueError, match="sample"):
        hotbin.histogramdd(np.zeros((2, 3, 4)), backend=backend)
    with pytest.raises(ValueError, match="sample"):
        hotbin.histogramdd([np.zeros(3), np.zeros(4)], backend=backend)
    with pytest.raises(TypeError, match=r"sample\[1\]"):
        hotbin.histogramdd([np.zeros(3), np.zeros(3, complex)], backend=backend)


@pytest.mark.parametrize("bins, range", [(10, None), (7, (-1, 2)), ([0, 1, 5, 9], None), ("auto", None),
                                         ("fd", (0, 5)), (1, None)])
def test_histogram_bin_edges(backend, bins, range, rng):
    for a in (rng.standard_normal(200), rng.integers(0, 9, 200).astype(np.uint8), np.float32([3.0] * 4)):
        e = to_numpy(hotbin.histogram_bin_edges(a, bins, range, backend=backend))
        en = np.histogram_bin_edges(a, bins, range)
        np.testing.assert_array_equal(e, en)
        assert e.dtype == en.dtype
        np.testing.assert_array_equal(e, to_numpy(hotbin.histogram(a, bins, range, backend=backend)[1]))


def test_histogram_bin_edges_checks_as_numpy():
    a = np.arange(4.0)
    with pytest.raises(TypeError):
        np.histogram_bin_edges(a, "auto", weights=a)
    with pytest.raises(TypeError, match="not supported for weighted data"):
        hotbin.histogram_bin_edges(a, "auto", weights=a)
    with pytest.raises(ValueError, match="same shape"):
        hotbin.histogram_bin_edges(a, 3, weights=a[:2])
    with bool_warning(np.bool_([1])):
        e = hotbin.histogram_bin_edges([True, False, True])
    np.testing.assert_array_equal(e, np.histogram_bin_edges(np.uint8([1, 0, 1])))


def test_bool_warns_as_numpy(backend):
    # NumPy's histogram warns (RuntimeWarning) and counts bool as uint8: the same message here
    with pytest.warns(RuntimeWarning) as numpy_warning:
        hn, en = np.histogram(np.array([True, True, False]))
    with bool_warning(np.bool_([1])) as ours:
        h, e = hotbin.histogram(np.array([True, True, False]), backend=backend)
    assert str(ours[0].message) == str(numpy_warning[0].message)
    assert ours[0].filename == __file__  # points at the caller, as NumPy's does
    np.testing.assert_array_equal(to_numpy(h), hn)
    np.testing.assert_array_equal(to_numpy(e), en)


def test_bincount_empty_and_minlength(backend):
    for x, kw in (([], {}), ([], dict(minlength=3)), ([], dict(weights=[], minlength=2)),
                  (np.array([], np.uint8), dict(minlength=4)), ((), {})):
        got, want = to_numpy(hotbin.bincount(x, **kw, backend=backend)), np.bincount(x, **kw)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype == np.int64
    for bad in (1.5, "3", None, np.float64(2.0), True):
        with pytest.raises(TypeError) as numpy_error:
            np.bincount([1, 2], minlength=bad)
        with pytest.raises(TypeError) as ours:
            hotbin.bincount([1, 2], minlength=bad, backend=backend)
        assert str(ours.value) == str(numpy_error.value)
    with pytest.raises(ValueError, match="must not be negative"):
        hotbin.bincount([], minlength=-1, backend=backend)


def test_numpy_only_inputs_give_numpy_results():
    # dtypes no kernel takes but NumPy histograms: NumPy's own result, through one helper
    v = np.array([1.3, 2.5, 2.3])
    dw = np.array([decimal.Decimal(1), decimal.Decimal(2), decimal.Decimal(3)])
    for bins, range in (([0, 2, 3], None), (2, (1, 3))):
        h, e = hotbin.histogram(v, bins, range, weights=dw)
        hn, en = np.histogram(v, bins, range, weights=dw)
        assert h.dtype == object and list(h) == list(hn)
    dates = np.datetime64("2000-01-01") + np.array([0, 0, 1, 5, 20])
    h, e = hotbin.histogram(dates, bins=dates[[0, 2, 4]])
    np.testing.assert_array_equal(h, [2, 3])  # [0, 1) and [1, 20] days
    assert e.dtype == dates.dtype
    r = np.array([1 + np.finfo(np.longdouble).eps, 2.0], np.longdouble)
    h, e = hotbin.histogram(np.float64([1.0]), 1, r)
    assert e.dtype == np.longdouble and h.tolist() == [0]
    ld = np.array([[0.5, 1.5], [1.5, 0.5]], np.longdouble)
    H, edges = hotbin.histogramdd(ld, 2)
    Hn, edn = np.histogramdd(ld, 2)
    assert H.dtype == np.int64 and edges[0].dtype == edn[0].dtype
    np.testing.assert_array_equal(H, Hn)
    H, xe, ye = hotbin.histogram2d(ld[:, 0], ld[:, 1], 2, weights=[1, 2])
    assert xe.dtype == np.longdouble and H.dtype == np.float64
    np.testing.assert_array_equal(H, np.histogram2d(ld[:, 0], ld[:, 1], 2, weights=[1, 2])[0])
    with pytest.raises(TypeError, match="Cannot cast"):  # NumPy's 2-D histogram takes no object weights
        hotbin.histogram2d(v, v, 2, weights=dw)
    np.testing.assert_array_equal(hotbin.histogram_bin_edges(ld[0], 3), np.histogram_bin_edges(ld[0], 3))
    d = np.array(["2020-01-01"], "datetime64[D]")
    with pytest.raises(ValueError, match="bins"):  # NumPy's IndexError for empty edges, made clear
        hotbin.histogram2d(d, d, [])
    with pytest.raises(TypeError, match="a:"):  # object values stay refused (DESIGN §4)
        hotbin.histogram(np.array([decimal.Decimal(1)]))


def test_numpy_only_reads_each_array_of_a_sample():
    """histogram2d's (x, y) and histogramdd's list of columns are told apart by each array's
    dtype, not by stacking them (np.asarray copied 20M-point x and y on every call): a
    datetime column among numbers is still NumPy's."""
    from hotbin.core import numpy_compat
    x, y = np.zeros(5, np.float32), np.zeros(5, np.int16)
    assert list(numpy_compat._dtypes((x, y))) == [x.dtype, y.dtype]  # stacked: one float32
    dates = np.datetime64("2000-01-01") + np.arange(5)
    assert numpy_compat.numpy_only([x, dates], None, None, 2)
    assert not numpy_compat.numpy_only((x, y), None, None, 2)


@pytest.mark.parametrize("dt, bins, rng_", [(np.uint16, 65536, (0, 65536)), (np.float64, 256, (0.0, 1.0)),
                                            (np.float32, 100, (-1, 1))])
def test_cached_rule_edges_are_read_only_and_own_their_data(dt, bins, rng_):
    """The rule of n bins over a given range is built once and shared: its edges are read-only,
    and own their data, so that arrays.shared_copy finds their device copy by identity (a
    view of 512 KiB was uploaded to the GPU on every call); callers get copies."""
    from hotbin.core.binning import histogram_rule

    r = histogram_rule(np.zeros(3, dt), bins, rng_)
    assert r is histogram_rule(np.zeros(5, dt), bins, rng_)
    assert not r.edges.flags.writeable and r.edges.flags.owndata
    h, e = hotbin.histogram(np.zeros(3, dt), bins, rng_)
    assert e.flags.writeable and np.array_equal(e, np.histogram(np.zeros(3, dt), bins, rng_)[1])
