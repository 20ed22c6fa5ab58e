"""The wgpu backend against the exact references: equal results, bit for bit.

The references are NumPy's (``np.histogram``, ``np.bincount``, ``np.cumsum``) and
:meth:`hotbin.core.binning.BinRule.index`, the rule every backend implements, so equality here is
equality with the cpu backend (which the backend matrix checks against the same references)
without paying numba's compile time on a cold CI machine. The cases the wgpu module answers
NotImplemented for are checked to be answered so, and to come back from the loaded backend
(``hotbin.backend.load("wgpu")``) as the cpu backend's result (those tests compile cpu kernels).

Runs on any WebGPU adapter (lavapipe in CI); skipped cleanly without wgpu-py or an adapter.
Edge cases: values on edges and their float neighbours, NaN, +-inf, -0.0, out of range,
every kernel dtype, comparisons in float64 and int64, inputs larger than the workgroup grid,
inputs split across several storage bindings (the device's chunk_bytes lowered), hot bins and cells.
"""
import sys

import numpy as np
import pytest

import hotbin
from hotbin.core import reductions
from hotbin.backend import cpu as C
from hotbin.core.binning import check_data, histogram2d_rules, histogram_rule

pytest.importorskip("wgpu", reason="wgpu-py not installed")
from hotbin.backend import wgpu as W  # noqa: E402
from hotbin.backend.wgpu import device as D, counts as H, luma as L, memory as M  # noqa: E402

if not W.available():
    pytest.skip("no WebGPU adapter (install mesa-vulkan-drivers for lavapipe)", allow_module_level=True)

pytestmark = pytest.mark.wgpu

from wgpu_counters import counters  # noqa: E402,F401  (autouse)


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


@pytest.fixture
def small_chunks(monkeypatch):
    """Force every input across several storage bindings."""
    monkeypatch.setattr(D.gpu(), "chunk_bytes", 4096)


@pytest.fixture
def few_groups(monkeypatch):
    """Three workgroups: every invocation strides over many items."""
    monkeypatch.setattr(D.gpu(), "workgroups", 3)


def minmax(a):
    return a.min(), a.max()


def reference(a, rule):
    """Counts under the reference rule (BinRule.index), NumPy only."""
    i = rule.index(np.asarray(a).reshape(-1))
    return np.bincount(i[i >= 0], minlength=rule.nbins).astype(np.int64)


def same(a, bins=10, range=None, numpy=True):
    """wgpu == the reference rule (== NumPy, unless NumPy itself cannot run the case)."""
    rule = histogram_rule(a, bins, range, minmax=minmax)
    got = W.histogram(a, rule)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, reference(a, rule), err_msg=f"bins={bins} range={range}")
    if numpy:
        np.testing.assert_array_equal(got, np.histogram(a, bins, range)[0])
    return got


def same_hist(a, bins=10, range=None):
    return same(check_data(a), bins, range)  # bool -> uint8, as the API does


def neighbours(values, dtype):
    v = np.asarray(values, dtype)
    return np.concatenate([v, np.nextafter(v, dtype(-np.inf)), np.nextafter(v, dtype(np.inf))])


# --- the registry and the adapter --------------------------------------------------

def test_listed_and_described():
    assert "wgpu" in hotbin.backends()
    assert W.devices() and all(isinstance(d, str) for d in W.devices())


def test_missing_package_names_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "wgpu", None)
    with pytest.raises(ModuleNotFoundError, match=r'pip install "hotbin\[wgpu\]"'):
        W.require()


def test_adapter_choice(monkeypatch):
    import wgpu
    monkeypatch.setenv(W.ENV_ADAPTER, "no-such-adapter-anywhere")
    with pytest.raises(RuntimeError, match="matches no WebGPU adapter"):
        D.pick_adapter(wgpu)
    monkeypatch.setenv(W.ENV_ADAPTER, "0")
    assert D.pick_adapter(wgpu) is not None
    name = D.describe(D.gpu().adapter).split(" (")[0]
    monkeypatch.setenv(W.ENV_ADAPTER, name.upper())
    assert D.describe(D.pick_adapter(wgpu)).split(" (")[0] == name


# --- 1-D histograms -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.int32,
                                   np.uint32, np.float32, np.float16, np.bool_])
@pytest.mark.parametrize("bins,range", [(10, None), (256, (0, 256)), (7, (-3.5, 100.25)),
                                        ([-1000, -3, 0, 0.5, 7, 99.99, 1e3], None),
                                        (1, None)])
def test_dtypes(rng, dtype, bins, range):
    a = (rng.normal(size=20011) * 60).astype(dtype)
    same_hist(a, bins, range)


def test_float32_edges_neighbours_nan_inf():
    a = neighbours([0, 0.1, 0.25, 0.5, 0.7, 1, -0.0, 2, -1], np.float32)
    a = np.concatenate([a, np.float32([np.nan, np.inf, -np.inf, -0.0, 0.0, 3e38, -3e38])])
    for bins, rng_ in [(4, (0.0, 1.0)), (10, (np.float64(0.1), np.float64(0.7))),
                       (10, (np.float32(0.1), np.float32(0.7))), (3, (-0.0, 0.0)),
                       ([0.1, 0.2, 0.3, 0.7], None), (np.float32([0.1, 0.2, 0.3, 0.7]), None),
                       ([-np.inf, 0, 0.5, np.inf], None), ([1e39, 1e40], None),
                       ([-1e300, -3.4028235e38, 0.5], None)]:
        same(a, bins, rng_)


def test_float32_edges_between_floats():
    """float64 edges that are not float32 values: no value is rounded into another bin."""
    e = np.float64(1.0) + np.arange(6) * 2.0 ** -30  # all round to 1.0 in float32
    a = neighbours([1.0, 1.0000001], np.float32)
    assert same(a, e).tolist() == [2, 0, 0, 0, 0]  # the two 1.0s; 1.0000001 is above the top edge


def test_int32_extremes_and_wide_edges():
    i = np.iinfo(np.int32)
    a = np.array([i.min, i.min + 1, -1, 0, 1, 5, i.max - 1, i.max], np.int32)
    for bins in [np.array([i.min, 0, i.max], np.int64), np.array([-2.0**40, -0.5, 0.5, 2.0**40]),
                 np.array([-2**40, 3, 2**40], np.int64), np.array([2**35, 2**36], np.int64),
                 np.array([-2**36, -2**35], np.int64), np.array([0.5, 0.75]),
                 np.array([i.max - 0.5, 2.0**31, 2.0**32]), 4]:
        same(a, bins)


def test_uint32_extremes():
    a = np.array([0, 1, 2**31, 2**32 - 2, 2**32 - 1], np.uint32)
    for bins in [np.array([0, 2**31, 2**32 - 1], np.uint64), np.array([0, 2**63], np.uint64),
                 np.array([2**32, 2**33], np.uint64), 3, np.array([-1.5, 0.5, 2.0**32])]:
        same(a, bins)


def test_layouts_and_byte_order(rng):
    a = rng.normal(size=(301, 7)).astype(np.float32)
    same_hist(a[:, ::2], 13)
    same_hist(a.astype(">f4"), 13)
    same_hist((a * 100).astype(">i2"), 13)


def test_hot_bin_larger_than_grid(rng, few_groups):
    a = np.full(300_001, 7, np.uint8)
    a[::97] = rng.integers(0, 256, a[::97].size)
    same_hist(a, 256, (0, 256))
    f = np.where(rng.random(200_003) < 0.9, np.float32(0.5), rng.random(200_003, np.float32))
    same_hist(f, 64, (0, 1))
    same_hist(f, 20000)  # more bins than workgroup counters: the cached global path


def test_chunked_across_bindings(rng, small_chunks):
    same_hist(rng.integers(0, 256, 100_003).astype(np.uint8), 256, (0, 256))
    same_hist(rng.integers(0, 4000, 30_001).astype(np.uint16), 37)
    same_hist(rng.normal(size=30_001).astype(np.float32), 100)


def test_smallest_workgroup_storage(rng, monkeypatch):
    """WebGPU's guaranteed minimum (16 KiB): fewer copies, and the cached global path sooner."""
    monkeypatch.setattr(D.gpu(), "wg_words", 4096)
    same_hist(rng.integers(0, 256, 50_001).astype(np.uint8), 256, (0, 256))
    same_hist(rng.normal(size=50_001).astype(np.float32), 5000)
    batch = rng.integers(0, 256, (2, 9, 11, 4), dtype=np.uint8)
    np.testing.assert_array_equal(W.luma_histogram(batch), luma_reference(batch))


@pytest.mark.parametrize("unroll", [1, 2, 4])
@pytest.mark.parametrize("mode,wg,copies", [("atomic", 256, 8), ("atomic", 64, 32), ("private", 16, None),
                                            ("private", 32, None)])
def test_u8_kernel_modes(rng, mode, wg, copies, unroll):
    """Both uint8 counting kernels, lane copies and every unrolling, with enough loop trips
    to flush private counters and a last trip that ends inside the unrolled loads."""
    g = D.gpu()
    x = rng.integers(0, 256, (1 << 20) + 16 * 37, dtype=np.uint8)
    x[: 1 << 18] = 9  # a constant stretch: whole 16-byte loads of one value
    x[1 << 18: 1 << 19] = rng.integers(100, 103, 1 << 18)  # narrow
    out = g.storage(256 * 8)
    H.launch_u8(g, g.with_data(x), x.size // 16, out, mode=mode, wg=wg, copies=copies, unroll=unroll,
                groups=3)
    np.testing.assert_array_equal(D.words64(g.read(out)), np.bincount(x, minlength=256))


def test_resident_calls_start_from_zero(rng):
    """Counters come from a pool and staging buffers are reused: each call counts its own
    data only, however the calls interleave with other sizes of result."""
    g = D.gpu()
    x = rng.integers(0, 256, 1 << 16, dtype=np.uint8)
    buf = g.with_data(x)
    want = np.bincount(x, minlength=256)
    for _ in range(3):
        np.testing.assert_array_equal(H.count_u8_resident(buf, x.size // 16), want)
        y = rng.normal(size=1000).astype(np.float32)
        np.testing.assert_array_equal(W.histogram(y, histogram_rule(y, 77, (-3, 3))),
                                      np.histogram(y, 77, (-3, 3))[0])
    half = H.count_u8_resident(buf, x.size // 32)
    np.testing.assert_array_equal(half, np.bincount(x[: x.size // 2], minlength=256))


def test_gpu_tuning_row_counts_exactly(rng, monkeypatch):
    """The discrete-GPU row of the uint8 tuning (whatever adapter runs the tests)."""
    g = D.gpu()
    monkeypatch.setattr(g, "kind", "gpu")
    x = rng.integers(0, 256, (1 << 21) + 48, dtype=np.uint8)
    x[:4096] = 200
    np.testing.assert_array_equal(H.count_u8(x), np.bincount(x, minlength=256))


def test_bind_groups_are_kept_while_their_buffers_live(rng):
    """A dispatch repeated on the same buffers reuses its bind group; new data written into
    a kept buffer is counted; a buffer dropped takes its bind groups (and memory) along."""
    import gc

    g = D.gpu()
    x = rng.integers(0, 256, 1 << 12, dtype=np.uint8)
    buf = g.with_data(x)
    np.testing.assert_array_equal(H.count_u8_resident(buf, x.size // 16), np.bincount(x, minlength=256))
    kept = [k for k in g._binds if any(bid == id(buf) for _, bid in k[2])]
    assert len(kept) == 1
    y = rng.integers(0, 7, x.size, dtype=np.uint8)
    g.upload(buf, y)  # same buffer, same parameters: the kept bind group, the new bytes
    np.testing.assert_array_equal(H.count_u8_resident(buf, x.size // 16), np.bincount(y, minlength=256))
    assert [k for k in g._binds if any(bid == id(buf) for _, bid in k[2])] == kept
    del buf
    gc.collect()
    assert kept[0] not in g._binds and not any(kept[0] in keys for keys in g._bound.values())


def test_counters_carry_past_32_bits():
    """64-bit global counters: a low word that wraps carries into the high word."""
    g = D.gpu()
    out = g.with_data(np.array([0xFFFFFFF0, 5] * 256, np.uint32))
    buf = g.with_data(np.full(4096, 3, np.uint8))
    H.launch_u8(g, buf, 4096 // 16, out)
    counts = D.words64(g.read(out))
    assert counts[3] == (5 << 32) + 0xFFFFFFF0 + 4096
    assert counts[0] == (5 << 32) + 0xFFFFFFF0


def handed_to_cpu(op, *args):
    """``W.<op>`` answers NotImplemented; the loaded backend returns the cpu backend's result."""
    assert getattr(W, op)(*args) is NotImplemented
    got, want = getattr(hotbin.backend.load("wgpu"), op)(*args), getattr(C, op)(*args)
    for g, w in zip(got, want) if op == "histogram2d" else [(got, want)]:
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == np.asarray(w).dtype


def test_delegated_cases_go_to_cpu(rng):
    """float64/int64 data, every reduction but counts, weighted bincounts and float64 scans."""
    a = rng.normal(size=100)
    w = rng.random(100)
    f = a.astype(np.float32)
    rule = histogram_rule(a, 5, (0, 1))
    handed_to_cpu("histogram", a, rule)
    handed_to_cpu("histogram", (a * 10).astype(np.int64), rule)
    handed_to_cpu("histogram", f, rule, w, reductions.SUM_F64)
    handed_to_cpu("histogram", f, rule, w, reductions.fixed(40))
    handed_to_cpu("histogram2d", a, a, rule, rule)
    handed_to_cpu("histogram2d", f, f, rule, rule, w, reductions.SUM_F64)
    handed_to_cpu("bincount", rng.integers(0, 10, 100), 10, w)
    handed_to_cpu("cumsum", a, None, np.dtype(np.float64))


def test_float_scan_blocks_wider_than_a_binding_go_to_cpu(rng, small_chunks):
    """A float32 lane whose blocks do not fit one (lowered) binding: the cpu backend's bits."""
    a = rng.normal(size=(5000, 3)).astype(np.float32)
    handed_to_cpu("cumsum", a[:, 0].copy(), None, np.dtype(np.float32))
    handed_to_cpu("cumsum", a, 0, np.dtype(np.float32))


# --- 2-D ------------------------------------------------------------------------------

@pytest.mark.parametrize("hot", [0.0, 0.9, 1.0])
@pytest.mark.parametrize("bins", [(16, 24), (300, 200)])
def test_histogram2d_hot_cells(rng, hot, bins, few_groups):
    n = 100_003
    x = rng.random(n, np.float32)
    y = rng.random(n, np.float32)
    h = rng.random(n) < hot
    x[h], y[h] = 0.31, 0.77
    x[::1001], y[::1003] = np.nan, 2.0
    rng_ = [[0, 1], [0, 1]]
    got = hotbin.histogram2d(x, y, bins, rng_, backend="wgpu")[0]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.histogram2d(x, y, bins, rng_)[0].astype(np.int64))


def test_histogram2d_dtypes_and_kept(rng, small_chunks):
    x = rng.integers(-50, 50, 20_000).astype(np.int16)
    y = rng.normal(size=20_000).astype(np.float32)
    y[::7] = np.nan
    bins = [9, np.array([-1, 0, 0.1, 2.5])]
    rx, ry = histogram2d_rules(x, y, bins, [(-50, 49), None])
    g, kept = W.histogram2d(x, y, rx, ry)
    want = np.histogram2d(x, y, bins, [[-50, 49], None])[0].astype(np.int64)
    np.testing.assert_array_equal(g, want)
    assert kept == want.sum()


# --- bincount and scans -------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.uint32, np.int64, np.bool_])
def test_bincount(rng, dtype):
    x = rng.integers(0, 2 if dtype == np.bool_ else 120, 30_000).astype(dtype)
    for minlength in (0, 500):
        np.testing.assert_array_equal(hotbin.bincount(x, minlength=minlength, backend="wgpu"),
                                      np.bincount(x, minlength=minlength))
    big = rng.integers(0, 50_000, 30_000)
    np.testing.assert_array_equal(hotbin.bincount(big, backend="wgpu"), np.bincount(big))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64, np.bool_])
def test_cumsum_integers_exact(rng, dtype, small_chunks):
    info = np.iinfo(dtype) if dtype != np.bool_ else np.iinfo(np.uint8)
    a = rng.integers(info.min, int(info.max) + 1, 5_001, dtype=np.int64 if info.min < 0 else np.uint64)
    a = (a % 2).astype(dtype) if dtype == np.bool_ else a.astype(dtype)
    for exclusive in (False, True):
        got = hotbin.cumsum(a, exclusive=exclusive, backend="wgpu")
        want = np.cumsum(a)
        if exclusive:
            want = np.concatenate([np.zeros(1, want.dtype), want[:-1]])
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)  # 64-bit wrap-around included


def test_cumsum_float32(rng):
    for n in (1, 2047, 2048, 70_001):
        a = rng.normal(size=n).astype(np.float32)
        exact = np.cumsum(a.astype(np.float64))
        got = hotbin.cumsum(a, backend="wgpu")
        assert got.dtype == np.float32
        bound = n * np.finfo(np.float32).eps * np.cumsum(np.abs(a.astype(np.float64)))
        assert np.all(np.abs(got - exact) <= bound + 1e-30)
        np.testing.assert_array_equal(got, hotbin.cumsum(a, backend="wgpu"))  # reproducible
    a = np.ones(10_000, np.float32)
    np.testing.assert_array_equal(hotbin.cumsum(a, exclusive=True, backend="wgpu"), np.arange(10_000))


# --- luma -----------------------------------------------------------------------------

def luma_reference(batch):
    px = batch.reshape(batch.shape[0], -1, batch.shape[-1]).astype(np.int64)
    lvl = (2126 * px[..., 0] + 7152 * px[..., 1] + 722 * px[..., 2]) // 10000
    return np.stack([np.bincount(row, minlength=256) for row in lvl])


@pytest.mark.parametrize("channels", [3, 4])
def test_luma_histogram(rng, channels):
    batch = rng.integers(0, 256, (4, 37, 29, channels), dtype=np.uint8)
    batch[0, :5] = 255  # white is level 255
    batch[1, :, :3, :3] = 17  # gray is its own level
    got = W.luma_histogram(batch)
    assert got.shape == (4, 256) and got.dtype == np.int64
    np.testing.assert_array_equal(got, luma_reference(batch))
    np.testing.assert_array_equal(W.luma_histogram(batch[2]), luma_reference(batch[2:3])[0])
    assert got[0, 255] >= 5 * 29


@pytest.mark.parametrize("shape", [(3, 61, 47, 3), (70, 2, 3, 4), (9, 1, 1, 3)])
def test_luma_chunked(rng, shape, small_chunks):
    batch = rng.integers(0, 256, shape, dtype=np.uint8)
    np.testing.assert_array_equal(W.luma_histogram(batch), luma_reference(batch))


def test_luma_rejects_bad_images():
    with pytest.raises(ValueError, match="img"):
        W.luma_histogram(np.zeros((4, 4, 2), np.uint8))
    with pytest.raises(TypeError, match="img"):
        W.luma_histogram(np.zeros((4, 4, 3), np.float32))


@pytest.mark.parametrize("chunk", [1 << 12, 1 << 30])
def test_staged_uploads(rng, monkeypatch, chunk):
    """Inputs copied through the ring of mapped staging buffers (every upload here, in pieces
    of 4 KiB, one chunk or many; twice, so the ring comes round): the cpu backend's answers."""
    g = D.gpu()
    monkeypatch.setattr(M, "UPLOAD_STAGE_FROM", 16)
    monkeypatch.setattr(M, "UPLOAD_PIECE", 4096)
    monkeypatch.setattr(g, "chunk_bytes", chunk)
    n = 30_001
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    w = rng.normal(size=n).astype(np.float32)
    u8 = rng.integers(0, 256, 5 * n, dtype=np.uint8)
    rule = histogram_rule(x, 33, (0, 1))
    rx, ry = histogram2d_rules(x, y, (40, 30), [(0, 1), (0, 1)])
    cat = (rng.integers(0, 3, n), 3)
    for _ in range(2):
        np.testing.assert_array_equal(W.histogram(x, rule), C.histogram(x, rule))
        r8 = histogram_rule(u8, 256, (0, 256))
        np.testing.assert_array_equal(W.histogram(u8, r8), C.histogram(u8, r8))
        for red, ww, by in ((reductions.COUNT, None, cat), (reductions.MAX, w, None),
                            (reductions.words(60), w, cat)):
            got = W.histogram2d(x, y, rx, ry, ww, red, by=by)
            want = C.histogram2d(x, y, rx, ry, ww, red, by=by)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1] == want[1]


def test_more_bins_than_one_binding_go_to_cpu(monkeypatch):
    g = D.gpu()
    monkeypatch.setattr(type(g), "max_binding", property(lambda self: 8 * 100))
    a = np.arange(1000, dtype=np.float32)
    handed_to_cpu("histogram", a, histogram_rule(a, 101, (0, 1000)))
    handed_to_cpu("bincount", a.astype(np.int32), 1000)
    assert W.histogram(a, histogram_rule(a, 100, (0, 1000))).sum() == 1000


def test_luma_too_many_pixels_per_image_go_to_cpu(rng, monkeypatch):
    """Images past luma.wgsl's u32 pixel indices (lowered here): the cpu backend's counts."""
    monkeypatch.setattr(L, "MAX_PIXELS", 16)
    batch = rng.integers(0, 256, (2, 5, 4, 3), dtype=np.uint8)
    handed_to_cpu("luma_histogram", batch)
    np.testing.assert_array_equal(hotbin.backend.load("wgpu").luma_histogram(batch),
                                  luma_reference(batch))
    np.testing.assert_array_equal(W.luma_histogram(batch[:, :3]), luma_reference(batch[:, :3]))
