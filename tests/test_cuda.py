"""The cuda backend against the cpu backend, bit for bit, and its array-type contract.

Skips cleanly without CuPy or without a CUDA device.
"""
import numpy as np
import pytest

import hotbin
from hotbin.core import fixedpoint, reductions, scan_order
from hotbin.backend import cpu as cpub
from hotbin.core.binning import histogram2d_rules, histogram_rule

cp = pytest.importorskip("cupy")
from hotbin.backend import cuda as cb  # noqa: E402
from hotbin.backend.cuda import scan as cscan, tuning  # noqa: E402

if not cb.available():
    pytest.skip("cuda backend: no CUDA device", allow_module_level=True)

# bool data warns as NumPy does (tests/test_histogram.py checks the warning itself)
pytestmark = [pytest.mark.cuda,
              pytest.mark.filterwarnings("ignore:Converting input from bool:RuntimeWarning")]

DTYPES = [np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.int32, np.uint32, np.int64,
          np.uint64, np.float16, np.float32, np.float64]


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


def nasty(dtype, rng, n=20000):
    """Random values plus edge-case values of ``dtype``: extremes, NaN, inf, neighbours."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        v = rng.integers(lo, hi, n, endpoint=True).astype(dt)
        return np.concatenate([v, np.array([info.min, info.max, 0, 1], dt)])
    v = rng.normal(0, 3, n).astype(dt)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 5.0, -5.0], dt)
    return np.concatenate([v, special])


def with_edges(v, edges):
    """v plus every edge and both float neighbours of each edge, in v's dtype."""
    e = np.asarray(edges)
    if v.dtype.kind == "f":
        e = e.astype(v.dtype)
        extra = np.concatenate([e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf)])
    elif v.dtype.kind in "iu":
        info = np.iinfo(v.dtype)
        k = np.clip(np.round(e.astype(np.float64)), info.min, info.max).astype(v.dtype)
        extra = np.concatenate([k, np.clip(k.astype(np.float64) + 1, info.min, info.max).astype(v.dtype)])
    else:
        extra = np.zeros(0, v.dtype)
    return np.concatenate([v, extra.astype(v.dtype)])


def both(fn, *args, **kw):
    return (fn(*args, backend="cpu", **kw), fn(*args, backend="cuda", **kw))


# --- array types ---------------------------------------------------------------------

def test_cupy_in_cupy_out(rng):
    a = cp.asarray(rng.random(1000, dtype=np.float32))
    h, e = hotbin.histogram(a, bins=16)
    assert isinstance(h, cp.ndarray) and isinstance(e, cp.ndarray)
    assert h.dtype == np.int64
    ref, re = np.histogram(a.get(), bins=16)
    np.testing.assert_array_equal(h.get(), ref)
    np.testing.assert_array_equal(e.get(), re)
    assert isinstance(hotbin.cumsum(a), cp.ndarray)
    assert isinstance(hotbin.bincount(cp.arange(5)), cp.ndarray)


def test_numpy_with_backend_cuda_gives_numpy(rng):
    a = rng.random(1000)
    h, e = hotbin.histogram(a, bins=7, backend="cuda")
    assert isinstance(h, np.ndarray) and isinstance(e, np.ndarray)
    np.testing.assert_array_equal(h, np.histogram(a, bins=7)[0])
    c = hotbin.cumsum(np.arange(10, dtype=np.int32), backend="cuda")
    assert isinstance(c, np.ndarray) and c.dtype == np.int64


def test_torch_in_torch_out(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.rand(3000, device="cuda")[::3]  # non-contiguous, zero-copy view
    h, e = hotbin.histogram(t, bins=10, range=(0, 1))
    assert isinstance(h, torch.Tensor) and h.is_cuda and h.dtype == torch.int64
    assert isinstance(e, torch.Tensor) and e.is_cuda
    ref, _ = np.histogram(t.cpu().numpy(), bins=10, range=(0, 1))
    np.testing.assert_array_equal(h.cpu().numpy(), ref)
    c = hotbin.cumsum(torch.arange(100, device="cuda", dtype=torch.int32))
    assert isinstance(c, torch.Tensor) and c.is_cuda
    np.testing.assert_array_equal(c.cpu().numpy(), np.cumsum(np.arange(100, dtype=np.int32)))
    b = hotbin.bincount(torch.tensor([0, 3, 3], device="cuda"))
    assert isinstance(b, torch.Tensor) and b.tolist() == [1, 0, 0, 2]


# --- bit for bit with the cpu backend -------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bins,range_", [(10, None), (256, (-5, 5)), (3, (0, 1)), (4096, (-100, 100)),
                                         ([-3, -1, 0, 0.5, 2, 7], None), ([0, 1, 2, 100], None)])
def test_histogram_equals_cpu(dtype, bins, range_, rng):
    v = nasty(dtype, rng)
    if np.dtype(dtype).kind == "f" and range_ is None and not isinstance(bins, list):
        v = v[np.isfinite(v)]  # a range from the data must be finite
    try:
        np.histogram(v[:1].astype(np.uint8) if v.dtype == np.bool_ else v[:1], bins, range_)  # no bool warning
    except ValueError:  # e.g. float16 edges too close: NumPy refuses, so must we
        with pytest.raises(ValueError):
            hotbin.histogram(v, bins=bins, range=range_, backend="cuda")
        return
    if isinstance(bins, list) or range_ is not None:
        edges = np.histogram_bin_edges(np.empty(0), bins, range_)
        v = with_edges(v, edges)
    (h0, e0), (h1, e1) = both(hotbin.histogram, v, bins=bins, range=range_)
    np.testing.assert_array_equal(h1, h0)
    np.testing.assert_array_equal(e1, e0)
    assert h1.dtype == np.int64


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64, np.int64])
def test_non_contiguous_and_big_endian(dtype, rng):
    v = nasty(dtype, rng, 30000)
    v = v[np.isfinite(v)] if v.dtype.kind == "f" else v
    m = v[: (v.size // 6) * 6].reshape(-1, 6).T[:, ::2]  # transposed and strided
    (h0, _), (h1, _) = both(hotbin.histogram, m, bins=33, range=(-50, 50))
    np.testing.assert_array_equal(h1, h0)
    be = v.astype(np.dtype(dtype).newbyteorder(">"))
    (h0, _), (h1, _) = both(hotbin.histogram, be, bins=17, range=(-20, 20))
    np.testing.assert_array_equal(h1, h0)
    d = cp.asarray(v)[1::3]  # device array, unaligned and strided
    h2, _ = hotbin.histogram(d, bins=17, range=(-20, 20))
    np.testing.assert_array_equal(h2.get(), np.histogram(v[1::3], bins=17, range=(-20, 20))[0])


def test_uniform_float32_on_edges(rng):
    """The multiply shortcut: random values and every edge and neighbour, 256 bins."""
    for lo, hi, nb in [(0.0, 1.0, 256), (-3.5, 7.25, 256), (0.1, 0.7, 1000), (1e5, 1e5 + 3, 64)]:
        rule = histogram_rule(np.empty(0, np.float32), nb, (lo, hi))
        v = with_edges(rng.uniform(lo, hi, 100000).astype(np.float32), rule.edges)
        np.testing.assert_array_equal(cb.histogram(cp.asarray(v), rule).get(), cpub.histogram(v, rule))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("override", [{}, {"shortcut": False}, {"layout": "copies", "copies": 2},
                                      {"layout": "global"}], ids=str)
def test_values_on_edges_equal_numpy(dtype, override, rng):
    """Values on edges, which hist_common.cuh's RuleBin compares with the edge nearest their guess:
    NumPy's bins, counted and summed (hist_sum takes the same rule), with and without the shortcut."""
    k = rng.integers(0, 257, 50000)
    cases = [(np.tile(np.arange(100), 30), 100, (0, 100)),  # whole numbers 0-99 in 100 unit bins
             (np.arange(101), 100, (0, 100)),  # and the closed end
             (np.full(4099, 0.5), 256, (0, 1)),  # a constant on an edge
             (k / 256, 256, (0, 1)),  # k/256: every edge of 256 bins
             (rng.integers(-50, 51, 50000), 10, (-50, 50)),  # whole numbers, ten to a bin
             (k / 256 * 0.3 - 0.1, 77, (-0.1, 0.2))]  # near the edges of a rule with inexact edges
    with tuning.forced(**override):
        for v, bins, r in cases:
            v = v.astype(dtype)
            h, e = hotbin.histogram(cp.asarray(v), bins=bins, range=r)
            ref, ref_e = np.histogram(v, bins, r)
            np.testing.assert_array_equal(h.get(), ref, err_msg=f"{bins} bins over {r}")
            np.testing.assert_array_equal(e.get(), ref_e)
            s, _ = hotbin.histogram(cp.asarray(v), bins=bins, range=r, weights=cp.ones(v.size, cp.int64))
            np.testing.assert_array_equal(s.get(), ref, err_msg=f"sums, {bins} bins over {r}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("override", [{}, {"shortcut": False}, {"layout": "copies", "copies": 2},
                                      {"layout": "windows"}, {"layout": "global"}, {"unroll": 1}], ids=str)
def test_nearest_rule_hostile_values_equal_numpy(dtype, override, rng):
    """hist1d.cu's nearest-edge binners (BIN_NEAREST, BIN_NEAREST_ALL) have no range test of
    their own: values below, above and just past the closed end, NaN of both signs, infinities,
    huge, tiny and subnormal values land where NumPy puts them; bincount's values past the
    length go to the lanes layout's spare slot and are not counted. 5000 float32 bins: the
    edge table is not staged and the general rule counts."""
    info = np.finfo(dtype)
    hostile = np.array([np.nan, -np.nan, np.inf, -np.inf, info.max, -info.max, info.tiny, -info.tiny,
                        info.smallest_subnormal, -info.smallest_subnormal, 0.0, -0.0, 1e30, -1e30,
                        3.0, -3.0, 2.0 ** 22, 2.0 ** 23 + 1, -(2.0 ** 22)], dtype)
    for bins, r in ((256, (0.0, 1.0)), (100, (0.0, 100.0)), (7, (-1e-30, 1e-30)), (5000, (-0.5, 0.5)),
                    (256, (1e30, 3e30))):
        e = np.linspace(r[0], r[1], bins + 1).astype(dtype)
        v = np.concatenate([rng.uniform(r[0] - (r[1] - r[0]), r[1] + (r[1] - r[0]), 30000).astype(dtype),
                            e, np.nextafter(e, dtype(np.inf)), np.nextafter(e, dtype(-np.inf)), hostile])
        rng.shuffle(v)
        with tuning.forced(**override):
            h, _ = hotbin.histogram(cp.asarray(v), bins=bins, range=r)
        np.testing.assert_array_equal(h.get(), np.histogram(v, bins, r)[0], err_msg=f"{bins} over {r}")
    k = rng.integers(0, 1000, 50000)
    with tuning.forced(**override):
        c = cb.bincount(cp.asarray(k), 200)
    np.testing.assert_array_equal(c.get(), np.bincount(k[k < 200], minlength=200))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("override", [{}, {"layout": "copies", "copies": 1}, {"layout": "windows"},
                                      {"layout": "global"}, {"unroll": 8}], ids=str)
def test_8bit_value_table_in_the_flush(dtype, override, rng):
    """8-bit values are counted by value and folded into bins by the value table as each block
    flushes (one launch); layouts without that flush ("global", "windows") fold afterwards."""
    v = rng.integers(0, 256, 300001).astype(np.uint8).view(dtype) if dtype != np.bool_ else \
        rng.integers(0, 2, 300001).astype(bool)
    v = v[1:]  # an unaligned start: the kernel's scalar head
    lo, hi = (0, 1) if dtype == np.bool_ else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max) + 1)
    cases = [(256, (lo, hi)), (10, (lo - 100.5, hi + 100.5)), (3, (0.25, 0.75))]
    if dtype != np.bool_:
        cases.append((7, (lo + 3, hi - 50)))
    with tuning.forced(**override):
        for bins, r in cases:
            h, _ = hotbin.histogram(cp.asarray(v), bins=bins, range=r)
            ref = np.histogram(v, bins, r)[0]
            np.testing.assert_array_equal(h.get(), ref, err_msg=f"{bins} over {r}")


def test_count_plans_follow_the_rule(rng):
    """Launch plans are kept per rule: rules of the same size with other edges get their own."""
    v = cp.asarray(rng.random(10000))
    for bins in ([0, 0.5, 1], [0, 0.25, 1], [0, 0.5, 1]):
        h, _ = hotbin.histogram(v, bins=bins)
        np.testing.assert_array_equal(h.get(), np.histogram(v.get(), bins)[0])


@pytest.mark.parametrize("override", [{"layout": "lanes"}, {"layout": "copies", "copies": 3},
                                      {"layout": "windows"}, {"layout": "windows", "windows": 4},
                                      {"layout": "global"}, {"lut": False}, {"shortcut": False},
                                      {"unroll": 1}, {"unroll": 4}], ids=str)
@pytest.mark.parametrize("dtype,bins", [(np.uint16, 5), (np.uint8, 256), (np.float32, 300),
                                        (np.int16, 65536), (np.float64, 70000)])
def test_every_layout(override, dtype, bins, rng):
    v = nasty(dtype, rng, 100000)
    if v.dtype.kind == "f":
        v = with_edges(v, np.linspace(-7, 7, bins + 1))
    k = rng.integers(0, 70000, 100000)
    with tuning.forced(**override):
        (h0, _), (h1, _) = both(hotbin.histogram, v, bins=bins, range=(-7, 7))
        np.testing.assert_array_equal(h1, h0)
        c1 = cb.bincount(cp.asarray(k), 70000)
    np.testing.assert_array_equal(c1.get(), cpub.bincount(k, 70000))


# --- 16-bit values whose bins are a shift of the value (hist1d.cu hist_shift) -------------------

SHIFT_RULES = [(np.uint16, 4096, (0, 65536)), (np.uint16, 65536, (0, 65536)), (np.uint16, 1, (0, 65536)),
               (np.uint16, 4096, (0, 65535)), (np.uint16, 2048, (32768, 65536)),
               (np.int16, 4096, (-32768, 32768)), (np.int16, 512, (0, 32768))]


@pytest.mark.parametrize("override", [{}, {"copies": 1}, {"layout": "shift16"}, {"layout": "shift16", "copies": 1},
                                      {"layout": "shift32"}, {"unroll": 2}, {"unroll": 8}, {"copies": 2}], ids=str)
def test_shift_rules_equal_numpy(override, rng):
    """hist_shift (16- and 32-bit counters, every number of copies): NumPy's bins for every
    16-bit value, unaligned starts and tails, values outside the range (the spare slot)."""
    for dt, bins, r in SHIFT_RULES:
        rule = histogram_rule(np.zeros(1, dt), bins, r)
        with tuning.forced(**override):
            pol = tuning.shift_policy(bins, cb.hist1d.device_info(0), tuning.current())
            if pol is None:  # 65536 bins with 32-bit counters: the value-count windows
                assert override.get("layout") == "shift32" and bins == 65536
            elif override.get("layout"):
                assert pol.layout == override["layout"]
            info = np.iinfo(dt)
            v = rng.integers(info.min, info.max, 200001, endpoint=True).astype(dt)
            v = np.concatenate([v, np.arange(info.min, info.max + 1, dtype=np.int64).astype(dt)])[3:]
            h, _ = hotbin.histogram(cp.asarray(v), bins=bins, range=r)
            np.testing.assert_array_equal(h.get(), np.histogram(v, bins, r)[0], err_msg=f"{dt} {bins} {r}")
            h2 = cb.histogram(cp.asarray(v)[1:-2], rule)  # the general path, unaligned
            np.testing.assert_array_equal(h2.get(), np.histogram(v[1:-2], bins, r)[0])


@pytest.mark.parametrize("override", [{}, {"copies": 1}, {"layout": "shift16", "copies": 1}, {"layout": "shift16"}],
                         ids=str)
def test_shift_counters_wrap_exactly(override, rng):
    """16-bit counters that wrap many times in every block, both halves of one word (values
    12344 and 12345), alone and together, and counts beyond 2^16 per bin in every copy; runs
    of 8 equal values (one add of 8) next to single values."""
    n = 1 << 25
    k = rng.integers(0, 20, n)
    v = np.where(k < 9, 12344, np.where(k < 18, 12345, rng.integers(0, 65536, n))).astype(np.uint16)
    d = cp.asarray(v)
    with tuning.forced(**override):
        for bins in (4096, 65536):
            h, _ = hotbin.histogram(d, bins=bins, range=(0, 65536))
            np.testing.assert_array_equal(h.get(), np.histogram(v, bins, (0, 65536))[0], err_msg=str(bins))
        c = cp.full(n + 5, 65535, cp.uint16)  # the last slot, a high half
        c[:5] = 0
        h, _ = hotbin.histogram(c, bins=65536, range=(0, 65536))
        assert int(h[65535]) == n and int(h[0]) == 5 and int(h.sum()) == n + 5


# --- weights ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32, np.float64])
def test_weighted(dtype, rng):
    v = nasty(dtype, rng)
    v = v[np.isfinite(v)] if v.dtype.kind == "f" else v
    w = rng.normal(size=v.size)
    (h0, _), (h1, _) = both(hotbin.histogram, v, bins=50, range=(-10, 10), weights=w)
    np.testing.assert_allclose(h1, h0, rtol=1e-12, atol=1e-9)
    wi = rng.integers(-1000, 1000, v.size)
    (h0, _), (h1, _) = both(hotbin.histogram, v, bins=50, range=(-10, 10), weights=wi)
    np.testing.assert_array_equal(h1, h0)
    assert h1.dtype == np.int64


@pytest.mark.parametrize("override", [{}, {"copies": 1}, {"copies": 32, "blocks_per_sm": 1}, {"layout": "global"},
                                      {"shortcut": False}, {"block": 128}], ids=str)
@pytest.mark.parametrize("vdt,wdt", [(np.float32, np.float32), (np.float64, np.float32), (np.float32, np.float64),
                                     (np.int32, np.float32)], ids=str)
def test_weighted_sums_every_layout(override, vdt, wdt, rng):
    """hist_sum: float64 sums (close to NumPy's), and fixed-point words equal to the cpu
    backend's bit for bit, for every number of private copies and global atomics; values and
    weights read as vectors of each (and as scalars when their alignments differ); runs of one
    bin (a constant column) summed in registers; NaN weights in a bin make it NaN, outside the
    range they count nowhere; values on every edge."""
    n = 100003
    v = (rng.normal(0, 3, n) if np.dtype(vdt).kind == "f" else rng.integers(-4, 5, n)).astype(vdt)
    v[: n // 3] = 1  # a run of one bin
    edges = np.linspace(-3, 3, 257)
    if np.dtype(vdt).kind == "f":
        v = np.concatenate([v, with_edges(np.zeros(0, vdt), edges)])
    w = (rng.normal(size=v.size) * 10.0 ** rng.integers(-3, 3, v.size)).astype(wdt)
    with tuning.forced(**override):
        for x, ww in ((v, w), (v[1:], w[1:]), (v[1:], w[:-1])):  # aligned alike, unaligned alike, apart
            ref = np.histogram(x, 256, (-3, 3), weights=ww.astype(np.float64))[0]
            h, _ = hotbin.histogram(cp.asarray(x), bins=256, range=(-3, 3), weights=cp.asarray(ww))
            assert h.dtype == cp.float64
            np.testing.assert_allclose(h.get(), ref, rtol=1e-9, atol=1e-9)
            (h0, _), (h1, _) = both(hotbin.histogram, x, bins=256, range=(-3, 3), weights=ww, deterministic=True)
            np.testing.assert_array_equal(h1, h0)  # bitwise
            d, _ = hotbin.histogram(cp.asarray(x), bins=256, range=(-3, 3), weights=cp.asarray(ww),
                                    deterministic=True)
            np.testing.assert_array_equal(d.get(), h0)
        wn = w.copy()
        wn[5] = np.nan  # in bin of v[5] (in the run of ones)
        out = np.flatnonzero((v < -3) | (v > 3))
        wn[out[:3]] = np.nan  # outside the range: counted nowhere
        h, _ = hotbin.histogram(cp.asarray(v), bins=256, range=(-3, 3), weights=cp.asarray(wn))
        ref = np.histogram(v, 256, (-3, 3), weights=wn.astype(np.float64))[0]
        np.testing.assert_array_equal(np.isnan(h.get()), np.isnan(ref))
        np.testing.assert_allclose(h.get()[~np.isnan(ref)], ref[~np.isnan(ref)], rtol=1e-9, atol=1e-9)
        with pytest.raises(ValueError, match="finite"):
            hotbin.histogram(cp.asarray(v), bins=256, range=(-3, 3), weights=cp.asarray(wn), deterministic=True)


def test_deterministic_large_runs_equal_cpu(rng):
    """Fixed-point words of 2^24 weights, most in one bin (low words that carry many times in
    one block and in one thread's run), bitwise the cpu backend's."""
    n = 1 << 24
    v = np.where(rng.random(n) < 0.9, np.float32(0.5), rng.random(n, dtype=np.float32))
    w = rng.random(n, dtype=np.float32) * np.float32(1e3)
    (h0, _), (h1, _) = both(hotbin.histogram, v, bins=256, range=(0, 1), weights=w, deterministic=True)
    np.testing.assert_array_equal(h1, h0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_max_abs_one_pass(dtype, rng):
    """sums.max_abs (max_abs_bits): fixedpoint.max_abs's value, NaN above infinity above
    every finite value, -0.0 and subnormals, unaligned starts."""
    info = np.finfo(dtype)
    w = rng.normal(size=300001).astype(dtype)
    for extra in ([], [-7e3], [info.smallest_subnormal], [np.inf], [-np.inf, 1.0], [np.nan], [-np.nan, np.inf]):
        x = w.copy()
        x[rng.integers(0, x.size, len(extra))] = extra
        for a in (x, x[1:], x[:7]):
            got = cb.sums.max_abs(cp.asarray(a))
            want = fixedpoint.max_abs(a)
            assert (np.isnan(got) and np.isnan(want)) or got == want, (extra, got, want)
    assert cb.sums.max_abs(cp.zeros(5, dtype)) == 0.0
    assert cb.sums.max_abs(cp.asarray(np.array([-0.0, info.smallest_subnormal], dtype))) == info.smallest_subnormal
    assert cb.sums.max_abs(cp.zeros(8, np.float16)) is None
    assert cb.max_abs(cp.asarray(np.array([-3.0, 2.0], np.float16))) == 3.0


@pytest.mark.parametrize("nbins", [7, 256, 20000])  # 20000: words beyond shared memory
def test_deterministic_words_equal_cpu(nbins, rng):
    v = rng.normal(size=300001).astype(np.float32)
    w = rng.normal(size=v.size) * 10.0 ** rng.integers(-3, 3, v.size)
    w[:5] = [0.5, -0.5, 2.5, 1e-300, -1e300 * 0]
    rule = histogram_rule(v, nbins, (-3, 3))
    s = fixedpoint.scale_for(fixedpoint.max_abs(w), w.size)
    ref = fixedpoint.fold(cpub.histogram(v, rule, w, reductions.fixed(s)))
    got = fixedpoint.fold(cb.histogram(cp.asarray(v), rule, cp.asarray(w), reductions.fixed(s)).get())
    np.testing.assert_array_equal(got, ref)
    (h0, _), (h1, _) = both(hotbin.histogram, v, bins=nbins, range=(-3, 3), weights=w,
                            deterministic=True)
    np.testing.assert_array_equal(h1, h0)  # bitwise


def test_fixed_combine_on_the_device_is_the_hosts(rng):
    """fixedpoint.combine of device words: the host's bits at every scale (overflow to inf,
    results in the subnormal range, negative and carried low words)."""
    hi = rng.integers(-(1 << 62), 1 << 62, 4000) >> rng.integers(0, 62, 4000)
    lo = rng.integers(0, 1 << 33, hi.size)
    words = np.stack([hi, lo])
    for s in (-1100, -994, -60, 0, 31, 32, 90, 1074, 1100, 1167, 1200):
        want = fixedpoint.combine(words, s)
        got = fixedpoint.combine(cp.asarray(words), s)
        assert type(got) is cp.ndarray
        np.testing.assert_array_equal(got.get().view(np.int64), want.view(np.int64), err_msg=f"scale {s}")


@pytest.mark.parametrize("path", ["front", "general"])
@pytest.mark.parametrize("wdt", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_guessed_scale_equals_the_whole_datas(wdt, path, rng, monkeypatch):
    """deterministic=True on large device weights guesses the scale from a sample (hist1d.cu
    sample_scale) and confirms it with the max |w| the sums kernel saw (hist_sum's seen), on
    the public call's front door (range given: exec.local.device_histogram) and on the general
    path (range from the data), both through weighted, the guess made on the device:
    right guesses, a largest weight the sample misses (the sums run again), a tail the sample
    cannot bound (no guess), a NaN it misses, the checked partial itself (the words of the
    unchecked kernel and the max |w|), and when the sample guesses."""
    n = cb.sums.SAMPLE_FROM + 3
    v = rng.random(n, dtype=np.float32)
    w = (rng.random(n) * 100).astype(wdt)
    rng_ = (0, 1) if path == "front" else None
    runs = []
    real = cb.sums.sums
    monkeypatch.setattr(cb.sums, "sums", lambda *a, **k: runs.append(1) or real(*a, **k))
    # sums launches on both paths: hit 1, miss 2 (the guessed run, then the exact one), no guess 2
    # (a pass that only finds max |w|, then the exact one)
    want = {"hit": 1, "miss": 2, "tail": 2}
    for case in ("hit", "miss", "tail", "nan"):
        ww = w.copy()
        if case == "miss":
            ww[1] = -1e6  # between the sampled weights 0 and n // SAMPLE
        if case == "tail":
            ww[0], ww[n // cb.sums.SAMPLE] = 1e3, -900  # the top two extrapolate past 1e3's binade
        if case == "nan":
            ww[1] = np.nan
            with pytest.raises(ValueError, match="finite"):
                hotbin.histogram(cp.asarray(v), 64, rng_, weights=cp.asarray(ww), deterministic=True)
            continue
        runs.clear()
        ref, _ = hotbin.histogram(v, 64, rng_, weights=ww, deterministic=True, backend="cpu")
        got, _ = hotbin.histogram(cp.asarray(v), 64, rng_, weights=cp.asarray(ww), deterministic=True)
        assert type(got) is cp.ndarray
        np.testing.assert_array_equal(got.get().view(np.int64), ref.view(np.int64), err_msg=case)
        assert len(runs) == want[case], case
    rule = histogram_rule(v, 64, (0, 1))
    s = fixedpoint.scale_for(fixedpoint.max_abs(w), n)
    part = cb.histogram(cp.asarray(v), rule, cp.asarray(w), reductions.checked(s))
    words, seen = reductions.seen_of(part, 64)
    plain = cb.histogram(cp.asarray(v), rule, cp.asarray(w), reductions.fixed(s))
    np.testing.assert_array_equal(fixedpoint.fold(words.get()), fixedpoint.fold(plain.get()))
    assert seen() == float(np.abs(w).max())
    # the sample's guess: none for small arrays and zeros; a NaN fails; none where the top two
    # sampled values extrapolate past the binade (10 and 9: a tail), else the sample's max
    step = n // cb.sums.SAMPLE
    t = cp.full(n, 0.5, wdt)
    assert cb.sums.sample_max_abs(t[:1000]) is None and cb.sums.sample_max_abs(t * 0) is None
    t[step] = np.nan
    assert np.isnan(cb.sums.sample_max_abs(t))
    t[0], t[step] = -10, 9
    assert cb.sums.sample_max_abs(t) is None
    t[step] = 9.99
    assert cb.sums.sample_max_abs(t) == 10.0


@pytest.mark.parametrize("wdt", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_front_door_deterministic_extremes(wdt, rng):
    """The front door's deterministic sums (device guess, fixed_finish's float64) equal the cpu
    backend's bit for bit at extreme scales: subnormal, tiny, huge weights, mixed signs, with
    values of several dtypes; a zero sample (no guess) too. And the front door is taken."""
    from hotbin.exec.local import device_histogram

    n = cb.sums.SAMPLE_FROM + 5
    mags = (1e-40, 1e-30, 1.0, 1e30) if wdt == np.float32 else (5e-320, 1e-300, 1.0, 1e300)
    for mag in mags + (0.0,):
        w = (rng.standard_normal(n) * mag).astype(wdt)
        if mag == 0.0:
            w[7] = 3.5  # a sample of zeros: no guess, one pass for max |w|
        for vdt in (np.float32, np.float64, np.uint8, np.int32):
            v = (rng.random(n) * (300 if np.dtype(vdt).kind == "f" else 255.9)).astype(vdt)
            ref, _ = hotbin.histogram(v, 37, (0, 256), weights=w, deterministic=True, backend="cpu")
            dv, dw = cp.asarray(v), cp.asarray(w)
            found = device_histogram(None, dv, 37, (0, 256), dw, True)
            assert found is not None, (mag, vdt)
            np.testing.assert_array_equal(found[0].get().view(np.int64), ref.view(np.int64),
                                          err_msg=f"{mag} {np.dtype(vdt).name}")


def test_front_door_deterministic_real_shaped(rng):
    """The public deterministic call on data shaped like real data, bitwise the cpu backend's:
    whole numbers on the edges of unit bins, a 16-bit image's levels (uint16 values), a
    constant on an edge, values outside the range, and weights with one far outlier (the
    sample misses it: the sums run again at its scale)."""
    n = cb.sums.SAMPLE_FROM + 11
    whole = rng.integers(0, 100, n).astype(np.float32)  # every value on a bin edge
    image = rng.normal(3000, 800, n).clip(0, 65535).astype(np.uint16)
    cases = [(whole, 100, (0, 100)), (image, 256, (0, 65536)), (image, 4096, (1000, 5000)),
             (np.full(n, 0.5, np.float32), 64, (0, 1)), (whole * 3 - 50, 100, (0, 100))]
    w = rng.exponential(1.0, n).astype(np.float32)
    w_out = w.copy()
    w_out[n // 3] = 1e9
    for v, bins, rng_ in cases:
        for ww in (w, w_out):
            ref, _ = hotbin.histogram(v, bins, rng_, weights=ww, deterministic=True, backend="cpu")
            got, edges = hotbin.histogram(cp.asarray(v), bins, rng_, weights=cp.asarray(ww), deterministic=True)
            np.testing.assert_array_equal(got.get().view(np.int64), ref.view(np.int64),
                                          err_msg=f"{v.dtype} {bins} {rng_} {ww.max()}")
            np.testing.assert_array_equal(edges.get(), np.histogram_bin_edges(v, bins, rng_))


def test_bincount(rng):
    for dtype in (np.uint8, np.int16, np.int32, np.uint64, np.bool_):
        x = (rng.integers(0, 2 if dtype == np.bool_ else 120, 50000)).astype(dtype)
        np.testing.assert_array_equal(hotbin.bincount(x, backend="cuda"), np.bincount(x))
        w = rng.random(x.size)
        np.testing.assert_allclose(hotbin.bincount(x, w, minlength=300, backend="cuda"),
                                   np.bincount(x, w, minlength=300), rtol=1e-12)


def test_histogram2d_equals_cpu(rng):
    x = nasty(np.float32, rng, 50000)
    y = nasty(np.float64, rng, 50000)[: x.size]
    for bins, range_ in [(10, [[-5, 5], [-3, 3]]), ([5, 7], [[-1, 1], [-2, 2]])]:
        rx, ry = histogram2d_rules(x, y, bins, range_)
        g0, k0 = cpub.histogram2d(x, y, rx, ry)
        g1, k1 = cb.histogram2d(cp.asarray(x), cp.asarray(y), rx, ry)
        np.testing.assert_array_equal(g1.get(), g0)
        assert k1 == k0
    w = rng.normal(size=x.size)
    (H0, *_), (H1, *_) = both(hotbin.histogram2d, x, y, bins=9, range=[[-5, 5], [-3, 3]], weights=w,
                              deterministic=True)
    np.testing.assert_array_equal(H1, H0)


def test_counts_beyond_32_bits():
    """A bin holding more than 2^32 samples (on the device: 4 GiB of uint8)."""
    n = (1 << 32) + 7
    a = cp.full(n, 3, cp.uint8)
    a[:5] = 200
    h, _ = hotbin.histogram(a, bins=256, range=(0, 256))
    assert int(h[3]) == n - 5 and int(h[200]) == 5
    del a, h
    b = cp.full((1 << 31) + 3, 0.25, cp.float32)  # the rule path, 8 GiB
    h, _ = hotbin.histogram(b, bins=4, range=(0, 1))
    assert h.get().tolist() == [0, (1 << 31) + 3, 0, 0]


# --- scan ----------------------------------------------------------------------------------------

TILE_I32 = cscan.tile(np.int32, tuning.TABLES["default"].scan_nvec)


@pytest.mark.parametrize("n", [1, 5, TILE_I32 - 1, TILE_I32, TILE_I32 + 1, 3 * TILE_I32 + 17,
                               (1 << 22) + 3])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("nvec", [4, 8, 16])
def test_scan_int32_exact(n, exclusive, nvec, rng):
    a = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32)  # sums overflow int32, not int64
    with tuning.forced(scan_nvec=nvec):
        got = hotbin.cumsum(cp.asarray(a), exclusive=exclusive).get()
    ref = np.cumsum(a)
    if exclusive:
        ref = np.concatenate([[0], ref[:-1]])
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int16, np.uint16, np.uint32,
                                   np.int64, np.uint64, np.float16])
def test_scan_dtypes(dtype, rng):
    a = nasty(dtype, rng, 100003)
    if a.dtype.kind == "f":
        a = a[np.isfinite(a)]
    got = hotbin.cumsum(a, backend="cuda")
    # floats: the shared block order (bitwise the cpu backend's; NumPy's within one block)
    ref = hotbin.cumsum(a, backend="cpu") if a.dtype.kind == "f" else np.cumsum(a)
    assert got.dtype == ref.dtype == np.cumsum(a[:1]).dtype
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got[:scan_order.SCAN_BLOCK], np.cumsum(a[:scan_order.SCAN_BLOCK]))
    d = cp.asarray(a)[1:]  # unaligned start
    ref = hotbin.cumsum(a[1:], backend="cpu") if a.dtype.kind == "f" else np.cumsum(a[1:])
    np.testing.assert_array_equal(hotbin.cumsum(d).get(), ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scan_float_close_and_reproducible(dtype, rng):
    a = rng.random(5_000_011).astype(dtype)
    d = cp.asarray(a)
    r1 = hotbin.cumsum(d).get()
    r2 = hotbin.cumsum(d).get()
    np.testing.assert_array_equal(r1, r2)  # bitwise, run to run
    ref = np.cumsum(a.astype(np.float64))
    tol = 1e-3 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(r1, ref, rtol=tol)
    assert r1.dtype == dtype


def test_minmax_and_nan(rng):
    a = cp.asarray(rng.random(1000))
    lo, hi = cb.minmax(a)
    assert isinstance(lo, np.float64) and lo == a.min().get()
    a[10] = cp.nan
    lo, hi = cb.minmax(a)
    assert np.isnan(lo) and np.isnan(hi)
    assert np.isnan(cb.max_abs(a))


def test_require_message_names_install(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "cupy":
            raise ImportError("no cupy")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ModuleNotFoundError, match=r'pip install "hotbin\[cuda\]"'):
        cb.require()
