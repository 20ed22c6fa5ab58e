"""The cuda backend at its limits (issue #8): staged inputs, out-of-memory, huge counts and sizes.

Slabs are forced small (``tuning.forced(stage_bytes=...)``) so every primitive's staged path
runs on test-sized data and must equal the one-shot result bit for bit; the
out-of-memory tests fill the device for real. The size tests need ~40 GiB of GPU
memory and skip on smaller devices.
"""
import gc

import numpy as np
import pytest

import hotbin

cp = pytest.importorskip("cupy")
from hotbin.backend import cuda as cb  # noqa: E402
from hotbin.core import arrays  # noqa: E402
from hotbin.backend.cuda import hist1d, quick, rule, runtime, stage, tuning  # noqa: E402

if not cb.available():
    pytest.skip("cuda backend: no CUDA device", allow_module_level=True)

pytestmark = pytest.mark.cuda
GiB = 1 << 30


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


@pytest.fixture
def small_slabs():
    """Slabs of 64 KiB: host arrays above it stay on the host and go slab by slab."""
    with tuning.forced(stage_bytes=1 << 16):
        yield


def free_bytes():
    cp.get_default_memory_pool().free_all_blocks()
    return cp.cuda.runtime.memGetInfo()[0]


def needs(nbytes):
    if free_bytes() < nbytes:
        pytest.skip(f"needs {nbytes / GiB:.0f} GiB of free GPU memory")


# --- staged slab by slab equals one shot, bit for bit ----------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float16, np.float32, ">f8", np.int64])
def test_staged_histogram(dtype, small_slabs, rng):
    a = (rng.normal(0, 40, 300_001)).astype(dtype)
    assert isinstance(cb.asarray(a), np.ndarray)  # over the slab size: stays on the host
    for bins, rng_ in [(256, (-100, 100)), (37, None)]:
        h, e = hotbin.histogram(a, bins, rng_, backend="cuda")
        h0, e0 = np.histogram(a, bins, rng_)
        np.testing.assert_array_equal(h, h0)
        np.testing.assert_array_equal(e, e0)


def test_staged_weighted_and_deterministic(small_slabs, rng):
    a = rng.random(200_003)
    w = rng.standard_normal(a.size)
    strided = np.stack([a, a]).T[:, 0]  # non-contiguous: sliced per slab on the host
    ref = hotbin.histogram(a, 50, (0, 1), weights=w, deterministic=True, backend="cpu")[0]
    got = hotbin.histogram(strided, 50, (0, 1), weights=w, deterministic=True, backend="cuda")[0]
    assert got.tobytes() == ref.tobytes()
    np.testing.assert_allclose(hotbin.histogram(a, 50, (0, 1), weights=w, backend="cuda")[0], ref,
                               rtol=1e-9, atol=1e-9)
    iw = rng.integers(-5, 5, a.size)
    np.testing.assert_array_equal(hotbin.histogram(a, 50, (0, 1), weights=iw, backend="cuda")[0],
                                  np.histogram(a, 50, (0, 1), weights=iw)[0])


def test_staged_device_array_needing_a_copy(small_slabs, rng):
    """Device data the kernels cannot read in place (strided float16) is converted slab by slab."""
    a = rng.normal(0, 1, (400, 1000)).astype(np.float16)
    d = cp.asarray(a)[:, ::2]
    h, _ = hotbin.histogram(d, 64, (-3, 3))
    np.testing.assert_array_equal(h.get(), np.histogram(a[:, ::2], 64, (-3, 3))[0])


def test_staged_rows_bincount_minmax(small_slabs, rng):
    a = rng.integers(0, 1000, (5, 40_000)).astype(np.int32)  # each row is bigger than one slab
    rows, _ = hotbin.histogram(a, 16, (0, 1000), axis=1, backend="cuda")
    np.testing.assert_array_equal(rows, [np.histogram(r, 16, (0, 1000))[0] for r in a])
    many = rng.integers(0, 1000, (3000, 50)).astype(np.int32)  # slabs of whole rows
    rows, _ = hotbin.histogram(many, 16, (0, 1000), axis=1, backend="cuda")
    np.testing.assert_array_equal(rows, [np.histogram(r, 16, (0, 1000))[0] for r in many])
    x = rng.integers(0, 300, 100_000)
    np.testing.assert_array_equal(hotbin.bincount(x, backend="cuda"), np.bincount(x))
    w = rng.random(x.size)
    np.testing.assert_allclose(hotbin.bincount(x, w, backend="cuda"), np.bincount(x, w), rtol=1e-12)
    f = rng.random(100_000)
    f[90_000] = np.nan  # in a late slab
    lo, hi = cb.minmax(f)
    assert np.isnan(lo) and np.isnan(hi)
    lo, hi = cb.minmax(f[:80_000])
    assert (lo, hi) == (f[:80_000].min(), f[:80_000].max())


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32, np.float64])
@pytest.mark.parametrize("exclusive", [False, True])
def test_staged_scan_is_bitwise_one_pass(dtype, exclusive, rng):
    a = (rng.random(1_000_003) * 100).astype(dtype)
    one = hotbin.cumsum(cp.asarray(a), exclusive=exclusive).get()  # one pass on the device
    with tuning.forced(stage_bytes=1 << 18):
        got = hotbin.cumsum(a, exclusive=exclusive, backend="cuda")  # host in, slab by slab, host out
    assert isinstance(got, np.ndarray) and got.dtype == one.dtype
    assert got.tobytes() == one.tobytes()
    if a.dtype.kind in "iu":
        ref = np.cumsum(a)
        np.testing.assert_array_equal(got, np.concatenate([[0], ref[:-1]]) if exclusive else ref)


def test_staged_heatmap_and_histogram2d(small_slabs, rng):
    x, y = rng.normal(0, 1, (2, 150_001))
    x[:50_000] = 0.01  # a hot cell across slabs
    w = rng.standard_normal(x.size)
    ref = hotbin.heatmap(x, y, w, width=64, height=32, deterministic=True, backend="cpu")
    got = hotbin.heatmap(x, y, w, width=64, height=32, deterministic=True, backend="cuda")
    assert got.counts.tobytes() == ref.counts.tobytes() and got.dropped == ref.dropped
    H, _, _ = hotbin.histogram2d(x, y, 40, backend="cuda")
    np.testing.assert_array_equal(H, np.histogram2d(x, y, 40)[0])


def test_staged_luma(small_slabs, rng):
    img = rng.integers(0, 256, (3, 100, 200, 4), dtype=np.uint8)  # slabs of rows of one image
    ref = hotbin.luminance_histogram(img, backend="cpu")
    np.testing.assert_array_equal(hotbin.luminance_histogram(img, backend="cuda"), ref)
    wide = rng.integers(0, 256, (2, 2, 20_000, 3), dtype=np.uint8)  # pieces of one row
    np.testing.assert_array_equal(hotbin.luminance_histogram(wide, backend="cuda"),
                                  hotbin.luminance_histogram(wide, backend="cpu"))


def test_staged_images(small_slabs, rng):
    """Host images above the slab size stay on the host while the counts come from the device."""
    rgb = rng.integers(0, 256, (150, 200, 3), dtype=np.uint8)  # 90 KB: over the 64 KiB slabs
    gray16 = rng.integers(0, 65536, (200, 200), dtype=np.uint16)
    for img in (rgb, gray16):
        for fn in (hotbin.luminance_histogram, hotbin.channel_histograms, hotbin.equalize):
            got, ref = fn(img, backend="cuda"), fn(img, backend="cpu")
            assert isinstance(got, np.ndarray)
            np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(hotbin.percentiles(img, [5, 50, 95], backend="cuda"),
                                      hotbin.percentiles(img, [5, 50, 95], backend="cpu"))


# --- host data through the pinned buffers ------------------------------------------------------

@pytest.fixture
def small_pins(monkeypatch):
    """Pinned buffers of 256 KiB (chunks from 64 KiB): a 12 MB host array takes ~50 of them."""
    monkeypatch.setattr(stage, "PIN_BYTES", 1 << 18)
    monkeypatch.setattr(stage, "PIN_MIN_CHUNK", 1 << 16)
    monkeypatch.setattr(stage, "PIN_MIN_BYTES", 1 << 16)


@pytest.mark.parametrize("slab", [None, 1 << 20])
def test_host_data_through_pinned_buffers(small_pins, slab, rng):
    """Host arrays many pinned buffers long, uploaded whole (slab None) or counted region by
    region while the next region is copied (1 MiB slabs), answer as the device arrays do."""
    x = rng.normal(0.5, 0.3, 3_000_001).astype(np.float32)
    y = rng.random(x.size).astype(">f8")  # swapped to native order on the way
    w = rng.standard_normal(x.size)
    dx, dy, dw = cp.asarray(x), cp.asarray(y.astype(np.float64)), cp.asarray(w)
    with tuning.forced(stage_bytes=slab):
        assert isinstance(cb.asarray(x), np.ndarray if slab else cp.ndarray)
        got = [hotbin.histogram(x, 256, (0, 1), backend="cuda")[0],
               hotbin.histogram(x, 100, backend="cuda")[0],  # the range from a pass of its own
               hotbin.histogram(np.stack([x, x], 1)[:, 1], 256, (0, 1), backend="cuda")[0],
               hotbin.histogram(x, 64, (0, 1), weights=w, deterministic=True, backend="cuda")[0],
               hotbin.heatmap(x, y, w, width=64, height=32, deterministic=True, backend="cuda").counts,
               hotbin.cumsum(x, backend="cuda")]
    want = [hotbin.histogram(dx, 256, (0, 1))[0], hotbin.histogram(dx, 100)[0],
            hotbin.histogram(dx, 256, (0, 1))[0],
            hotbin.histogram(dx, 64, (0, 1), weights=dw, deterministic=True)[0],
            hotbin.heatmap(dx, dy, dw, width=64, height=32, deterministic=True).counts, hotbin.cumsum(dx)]
    for g, r in zip(got, want):
        assert isinstance(g, np.ndarray) and g.dtype == r.dtype and g.tobytes() == r.get().tobytes()


# --- out of GPU memory ---------------------------------------------------------------------------

@pytest.fixture
def full_device():
    """Let CuPy's pool grow by only ``leave`` more bytes (its limit); lifted on exit."""
    pool = cp.get_default_memory_pool()

    def fill(leave):
        # Tables cached by earlier calls would be evicted, and their blocks reused, once a
        # call adds its own: start from no cached tables so that the device is really full.
        runtime.device_table.cache_clear()
        rule.device_value_table.cache_clear()
        hist1d._PLANS.clear()  # launch plans hold their rule's device edges
        quick._QUICK.clear()  # and so do the one-launch plans
        arrays._SHARED.clear()  # device copies of shared edges
        gc.collect()
        pool.free_all_blocks()
        pool.set_limit(size=pool.total_bytes() + max(1, leave))  # 0 would mean no limit

    yield fill
    pool.set_limit(size=0)
    pool.free_all_blocks()


def test_out_of_memory_cuts_slabs(full_device):
    """A 2 GiB host array with 600 MiB left on the device: slabs shrink until they fit."""
    a = np.full(2 * GiB, 5, np.uint8)
    a[::4097] = 7
    full_device(600 << 20)
    h, _ = hotbin.histogram(a, 256, (0, 256), backend="cuda")
    sevens = -(-a.size // 4097)
    assert h[7] == sevens and h[5] == a.size - sevens and h.sum() == a.size


def test_out_of_memory_is_a_memory_error(full_device, rng):
    a = rng.random(1 << 20)
    full_device(0)
    with pytest.raises(MemoryError, match="out of GPU memory.*backend='cpu'"):
        hotbin.histogram(a, 10, (0, 1), backend="cuda")
    with pytest.raises(MemoryError, match="out of GPU memory"):
        hotbin.cumsum(a, backend="cuda")


# --- sizes and counts ----------------------------------------------------------------------------

def test_five_billion_in_one_bin():
    """5e9 samples (uint8, 5 GB on the device) in one bin: counts past 2^32 through the API."""
    needs(6 * GiB)
    n = 5_000_000_000
    a = cp.full(n, 3, cp.uint8)
    a[:5] = 200
    h, _ = hotbin.histogram(a, bins=256, range=(0, 256))
    assert int(h[3]) == n - 5 and int(h[200]) == 5
    c = hotbin.bincount(a)
    assert int(c[3]) == n - 5
    del a, h, c


def test_five_billion_from_the_host_in_one_bin():
    """The same from a 5 GB NumPy array: staged a slab at a time, never whole on the device."""
    needs(2 * GiB)
    n = 5_000_000_000
    a = np.full(n, 3, np.uint8)
    a[-5:] = 200
    h, _ = hotbin.histogram(a, bins=256, range=(0, 256), backend="cuda")
    assert isinstance(h, np.ndarray) and h[3] == n - 5 and h[200] == 5


def test_more_than_2_31_points():
    """2^31 + 5 points: a heatmap, a 2-D histogram and a scan past 32-bit indexing."""
    needs(40 * GiB)
    n = (1 << 31) + 5
    x = cp.full(n, 0.25, cp.float32)
    x[-3:] = 0.75
    y = cp.full(n, 0.5, cp.float32)
    hm = hotbin.heatmap(x, y, width=2, height=2, x_range=(0, 1), y_range=(0, 1))
    assert hm.counts.get().tolist() == [[0, 0], [n - 3, 3]] and hm.dropped == 0
    H, _, _ = hotbin.histogram2d(x, y, 2, [[0, 1], [0, 1]])
    assert H.get().tolist() == [[0, n - 3], [0, 3]]
    del x, y, hm, H
    ones = cp.ones(n, cp.int8)
    s = hotbin.cumsum(ones)
    assert s.dtype == np.int64 and int(s[-1]) == n and int(s[(1 << 31) + 1]) == (1 << 31) + 2
    del s, ones
