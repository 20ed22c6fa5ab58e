"""The wgpu device's buffer pool and transfers (backend/wgpu/memory.py) against the data as written
and NumPy: buffers reused across calls of other sizes and dtypes, uploads and read-backs in many
pieces, read-backs of odd sizes, several results read in one map.

Runs on any WebGPU adapter (lavapipe in CI); skipped cleanly without wgpu-py or an adapter.
"""
import numpy as np
import pytest

from hotbin.core import reductions
from hotbin.core.binning import histogram2d_rules, histogram_rule

pytest.importorskip("wgpu", reason="wgpu-py not installed")
from hotbin.backend import wgpu as W  # noqa: E402
from hotbin.backend.wgpu import device as D, memory as M  # noqa: E402

if not W.available():
    pytest.skip("no WebGPU adapter (install mesa-vulkan-drivers for lavapipe)", allow_module_level=True)

pytestmark = pytest.mark.wgpu


@pytest.fixture
def rng():
    return np.random.default_rng(20261205)


@pytest.fixture
def made(monkeypatch):
    """The sizes of the storage and staging buffers the device creates while the test runs (not
    the uniform parameters of a new bind group)."""
    g = D.gpu()
    sizes = []
    create = g.device.create_buffer

    def counted(**kw):
        if not kw["usage"] & g.usage.UNIFORM:
            sizes.append(kw["size"])
        return create(**kw)
    monkeypatch.setattr(g.device, "create_buffer", counted)
    return sizes


@pytest.fixture
def pieces(monkeypatch):
    """Every upload through the staging ring and every read-back through the read ring, in
    pieces of 4 KiB, host copies on 3 threads of 1 KiB at least."""
    g = D.gpu()
    monkeypatch.setattr(M, "UPLOAD_STAGE_FROM", 16)
    monkeypatch.setattr(M, "UPLOAD_PIECE", 4096)
    monkeypatch.setattr(M, "READ_PIECE", 4096)
    monkeypatch.setattr(M, "COPY_PIECE", 1024)
    monkeypatch.setattr(g, "copy_threads", 3)


def test_size_classes():
    """A class holds the request, wastes at most a quarter above 4 KiB, moves whole words."""
    for n in [0, 1, 15, 16, 17, 4095, 4096, 4097, 5000, 40_000, (1 << 20) + 1, 3 << 27, (1 << 30) - 3]:
        c = M.size_class(n)
        assert c >= max(n, 16) and c % 4 == 0
        assert c <= max(4096, 1.25 * n + 4)


def test_calls_reuse_buffers_across_sizes_and_dtypes(rng, made):
    """Calls of other sizes and dtypes, interleaved, twice: each answer NumPy's; the second round
    takes every buffer from the pool (a larger buffer left over from a larger call, its old bytes
    past the new data and its old counts, changes nothing)."""
    rounds = []
    for _ in range(2):
        made.clear()
        for n, dt in ((50_000, np.float32), (47_000, np.float32), (9_999, np.int16), (60_001, np.uint8),
                      (60_000 - 7, np.uint8), (33_333, np.int32)):
            a = (rng.normal(size=n) * 100).astype(dt)
            rule = histogram_rule(a, 37, (-150, 150))
            np.testing.assert_array_equal(W.histogram(a, rule), np.histogram(a, 37, (-150, 150))[0])
            c = rng.integers(-1000, 1000, n).astype(dt if dt != np.float32 else np.int32)
            np.testing.assert_array_equal(W.cumsum(c, None, np.int64), np.cumsum(c, dtype=np.int64))
            x, y = rng.random(n, np.float32), rng.random(n, np.float32)
            rx, ry = histogram2d_rules(x, y, (20, 30), [(0, 1), (0, 1)])
            grid, kept = W.histogram2d(x, y, rx, ry)
            np.testing.assert_array_equal(grid, np.histogram2d(x, y, (20, 30), [(0, 1), (0, 1)])[0])
            assert kept == n
        rounds.append(len(made))
    assert rounds[0] > 0 and rounds[1] == 0


def test_pool_keeps_at_most_its_bytes(rng, monkeypatch):
    """Past pool_bytes the oldest idle buffers go; the calls still count right, also after the
    pool is emptied."""
    g = D.gpu()
    monkeypatch.setattr(g, "pool_bytes", 64 << 10)
    for n in (40_000, 20_000, 70_000, 10_000):
        a = rng.integers(0, 256, n, dtype=np.uint8)
        np.testing.assert_array_equal(W.histogram(a, histogram_rule(a, 256, (0, 256))),
                                      np.bincount(a, minlength=256))
        assert g._idle_bytes <= 64 << 10
        assert sum(s for _, s, _ in g._idle) == g._idle_bytes
        if n == 70_000:
            g.release_idle()
            assert g._idle == [] and g._idle_bytes == 0


@pytest.mark.parametrize("n", [1, 3, 4, 5, 4093, 4096, 4099, 10_001])
def test_read_back_odd_sizes(rng, pieces, n):
    """The first n bytes of a buffer, for sizes that are no whole word or piece, alone, into a
    given array, and as one part of a read-back of several buffers (one map per piece)."""
    g = D.gpu()
    data = rng.integers(0, 256, n + 13, dtype=np.uint8)
    other = rng.integers(0, 256, 777, dtype=np.uint8)
    buf, buf2 = g.with_data(data), g.with_data(other)
    np.testing.assert_array_equal(g.read(buf, n), data[:n])
    out = np.full(n, 7, np.uint8)
    assert g.read(buf, n, out=out).base is not None
    np.testing.assert_array_equal(out, data[:n])
    a, b, c = g.read_many([(buf2, 5, None), (buf, n, None), (buf2, None, None)])
    np.testing.assert_array_equal(a, other[:5])
    np.testing.assert_array_equal(b, data[:n])
    np.testing.assert_array_equal(c[:777], other)
    with pytest.raises(ValueError, match="out"):
        g.read(buf, n, out=np.empty(n + 1, np.uint8))


@pytest.mark.parametrize("spin", [0.0, 0.002])
def test_uploads_and_read_backs_in_pieces(rng, pieces, monkeypatch, spin):
    """Inputs larger than one upload piece (with a size no whole word), results larger than one
    read piece (the ring of staging buffers comes round several times), the maps waited for
    either way (spin: polled from this thread first): NumPy's answers."""
    monkeypatch.setattr(D.gpu(), "spin_s", spin)
    for n in (30_001, 3):
        u8 = rng.integers(0, 256, 5 * n + 3, dtype=np.uint8)
        np.testing.assert_array_equal(W.histogram(u8, histogram_rule(u8, 256, (0, 256))),
                                      np.bincount(u8, minlength=256))
        c = rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int64).astype(np.int32)
        np.testing.assert_array_equal(W.cumsum(c, None, np.int64), np.cumsum(c, dtype=np.int64))
        f = rng.normal(size=n).astype(np.float32)
        x, y = rng.random(n, np.float32), rng.random(n, np.float32)
        rx, ry = histogram2d_rules(x, y, (64, 48), [(0, 1), (0, 1)])
        part, kept = W.histogram2d(x, y, rx, ry, f, reductions.MAX)
        want = np.full((64, 48), -np.inf)
        i = rx.index(x) * 48 + ry.index(y)  # the reference rule: every point lands in a cell here
        np.maximum.at(want.reshape(-1), i, f.astype(np.float64))
        np.testing.assert_array_equal(part[0], want)
        np.testing.assert_array_equal(part[1], np.bincount(i, minlength=64 * 48).reshape(64, 48))
        assert kept == n


def test_threaded_copy(rng, monkeypatch):
    """copy_into on several threads: the bytes as written, for sizes that split unevenly."""
    monkeypatch.setattr(M, "COPY_PIECE", 1000)
    for n in (999, 1000, 4001, 10_007):
        src = rng.integers(0, 256, n, dtype=np.uint8)
        dst = np.zeros(n, np.uint8)
        M.copy_into(dst, src, 4)
        np.testing.assert_array_equal(dst, src)


def test_calls_from_several_threads(rng):
    """Threads calling at once (dask's threads do) share the pool and the upload ring: each
    thread's answers are NumPy's for its own data."""
    from concurrent.futures import ThreadPoolExecutor

    data = [rng.integers(-500, 500, 20_000 + 4096 * k, dtype=np.int32) for k in range(6)]

    def work(a):
        for _ in range(3):
            np.testing.assert_array_equal(W.cumsum(a, None, np.int64), np.cumsum(a, dtype=np.int64))
            rule = histogram_rule(a, 50, (-500, 500))
            np.testing.assert_array_equal(W.histogram(a, rule), np.histogram(a, 50, (-500, 500))[0])
        return True

    with ThreadPoolExecutor(3) as ex:
        assert all(ex.map(work, data))


def test_host_extremes_in_pieces(rng, monkeypatch):
    """minmax and max_abs split over threads: NumPy's one pass, NaN wherever it lies, every dtype."""
    monkeypatch.setattr(M, "COPY_PIECE", 256)
    monkeypatch.setattr(D.gpu(), "copy_threads", 4)
    for dt in (np.float32, np.float64, np.int16, np.uint8, np.int64):
        a = (rng.normal(size=10_001) * 50).astype(dt)
        a[7] = 0
        lo, hi = W.minmax(a)
        assert (lo, hi) == (a.min(), a.max()) and type(lo) is a.dtype.type
        assert W.max_abs(a) == max(float(a.max()), -float(a.min()))
    b = rng.integers(0, 2, 5000).astype(bool)
    assert W.minmax(b) == (0, 1)
    for at in (0, 2500, 9999):
        f = rng.normal(size=10_000).astype(np.float32)
        f[at] = np.nan
        assert all(np.isnan(v) for v in W.minmax(f)) and np.isnan(W.max_abs(f))
    z = np.zeros(4000, np.float32)
    z[3000] = -0.0
    assert [np.signbit(v) for v in W.minmax(z)] == [np.signbit(v) for v in (z.min(), z.max())]


def test_uploads_without_a_writable_mapped_view(rng, pieces, monkeypatch):
    """Where wgpu-py hands out no writable view of mapped memory (no such method, or a read-only
    one), uploads go through its write_mapped: the same answers."""
    import wgpu

    cls = type(D.gpu().device.create_buffer(size=16, usage=wgpu.BufferUsage.MAP_WRITE))
    a = rng.integers(0, 256, 50_001, dtype=np.uint8)
    want = np.bincount(a, minlength=256)
    real = cls._experimental_get_mapped_range
    for fake in (None, lambda self, o, n: real(self, o, n).toreadonly()):
        if fake is None:
            monkeypatch.delattr(cls, "_experimental_get_mapped_range")
        else:
            monkeypatch.setattr(cls, "_experimental_get_mapped_range", fake, raising=False)
        np.testing.assert_array_equal(W.histogram(a, histogram_rule(a, 256, (0, 256))), want)
