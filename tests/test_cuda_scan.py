"""Float prefix sums on the cuda backend: bit for bit the cpu backend's block order.

scan.cu's lane kernels take whole 16-byte vectors when every lane block of a warp is
aligned and whole vectors long, value by value otherwise; lane_chain chains the block
offsets on the device in chunks of 512. The cases below reach every path: flat and along
an axis (inner == 1 and inner > 1), aligned and not, one block and many (more than one
chain chunk), carries from host slabs, exclusive scans. Skips without CuPy or a device.
"""
import numpy as np
import pytest

import hotbin
from hotbin.core import scan_order

cp = pytest.importorskip("cupy")
from hotbin.backend import cuda as cb  # noqa: E402
from hotbin.backend.cuda import scan as cscan, tuning  # noqa: E402

if not cb.available():
    pytest.skip("cuda backend: no CUDA device", allow_module_level=True)

pytestmark = pytest.mark.cuda
FLOATS = [np.float32, np.float64]
B = scan_order.SCAN_BLOCK


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)


@pytest.fixture(params=[True, False], ids=["chain_in_scan", "chain_launch"])
def chained(request, monkeypatch):
    """One lane's offsets chained by lane_scan_chained's first block, or by lane_chain."""
    monkeypatch.setattr(cscan, "CHAIN_IN_SCAN", request.param)
    return request.param


def values(rng, shape, dtype):
    """Mixed magnitudes and signs, subnormals and signed zeros: rounding shows any reordering."""
    a = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 7, shape)
    a = a.astype(dtype)
    flat = a.reshape(-1)
    tiny = np.finfo(dtype).smallest_subnormal
    flat[::97] = tiny * 3
    flat[5::101] = -0.0
    flat[7::211] = 0.0
    return a


def check(a, axis=None, exclusive=False):
    got = hotbin.cumsum(cp.asarray(a), axis=axis, exclusive=exclusive)
    ref = hotbin.cumsum(a, axis=axis, exclusive=exclusive, backend="cpu")
    assert isinstance(got, cp.ndarray) and got.dtype == ref.dtype == a.dtype
    assert got.get().tobytes() == ref.tobytes()
    return got


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 3, 5, B - 1, B, B + 1, 32 * B, 32 * B + 3, 33 * B + 5, 515 * B + 7])
@pytest.mark.parametrize("exclusive", [False, True])
def test_flat(dtype, n, exclusive, rng, chained):
    check(values(rng, n, dtype), exclusive=exclusive)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("skip", [1, 2, 3])
def test_unaligned_start(dtype, skip, rng, chained):
    """A view starting off 16 bytes (float32 1-3, float64 1 and 3): the value-by-value path."""
    a = values(rng, 40 * B + 11, dtype)
    d = cp.asarray(a)[skip:]
    assert d.data.ptr % 16 == skip * a.itemsize % 16
    got = hotbin.cumsum(d).get()
    assert got.tobytes() == hotbin.cumsum(a[skip:], backend="cpu").tobytes()


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,axis", [((3, 5001), 1), ((4, 8192), 1), ((37, 3 * B + 4), 1), ((5000, 3), 0),
                                        ((2, 4099, 3), 1), ((2, 3, 2 * B + 1), 2), ((2 * B + 9, 2, 2), 0),
                                        ((64, 17), 1), ((6, 40), -1)])
@pytest.mark.parametrize("exclusive", [False, True])
def test_axis(dtype, shape, axis, exclusive, rng):
    check(values(rng, shape, dtype), axis=axis, exclusive=exclusive)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_small_blocks(dtype, rng, monkeypatch, chained):
    """Blocks of 64 values: many blocks per lane, the chain over several chunks, lane ends mid-warp."""
    monkeypatch.setattr(scan_order, "SCAN_BLOCK", 64)
    check(values(rng, 64 * 1500 + 9, dtype))
    check(values(rng, (7, 64 * 600 + 3), dtype), axis=1)
    check(values(rng, (64 * 40 + 1, 5), dtype), axis=0, exclusive=True)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("outer,inner", [(3, 2), (1, 1), (4, 1)])
def test_lane_totals_and_carry(dtype, outer, inner, rng, chained):
    """_lane_scan from a device carry: its totals and each block's offset are those chained on
    the host (scan_order.block_offsets), the first block's offset the carry itself."""
    m = 5 * B + 17
    a = values(rng, (outer, m, inner), dtype)
    carry = np.array([1.5, -2.25, 0.0, -0.0, 1e3, 3e-7], dtype)[:outer * inner].reshape(outer, inner)
    out, total = cscan._lane_scan(cp.asarray(a), cp.asarray(carry), True)
    nblk = -(-m // B)
    sums = np.stack([np.cumsum(a[:, b * B:(b + 1) * B], axis=1)[:, -1] for b in range(nblk)], axis=1)
    offsets, after = scan_order.block_offsets(sums, carry)
    assert total.shape == (outer, inner) and total.get().tobytes() == after.tobytes()
    got = out.get()
    for b in range(nblk):  # each block from its offset, left to right
        blk = np.cumsum(np.concatenate([offsets[:, b][:, None], a[:, b * B:(b + 1) * B]], axis=1), axis=1)[:, 1:]
        assert got[:, b * B:(b + 1) * B].tobytes() == blk.tobytes(), b


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("exclusive", [False, True])
def test_host_slabs_equal_one_pass(dtype, exclusive, rng, chained):
    a = values(rng, 300 * B + 5, dtype)
    one = hotbin.cumsum(cp.asarray(a), exclusive=exclusive).get()
    with tuning.forced(stage_bytes=1 << 18):  # slabs of whole blocks, each from the last total
        got = hotbin.cumsum(a, exclusive=exclusive, backend="cuda")
    assert isinstance(got, np.ndarray) and got.tobytes() == one.tobytes()


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_one_block_is_numpy_and_signs(dtype, rng):
    a = values(rng, (5, B), dtype)
    got = hotbin.cumsum(cp.asarray(a), axis=1).get()
    assert got.tobytes() == np.cumsum(a, axis=1).tobytes()
    z = cp.full(3 * B + 1, -0.0, dtype)
    assert bool(cp.all(cp.signbit(hotbin.cumsum(z))))  # -0.0 + -0.0 ... stays -0.0
    assert hotbin.cumsum(cp.empty(0, dtype)).size == 0


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("vecs,threads", [(8, 128), (16, 64), (32, 32), (8, 256)])
def test_tile_shapes(dtype, vecs, threads, rng):
    """Every tile shape the sweep (benchmarks/probes/scan_block_sweep.py) may pick adds the same way."""
    a = cp.asarray(values(rng, 70 * B + 13, dtype))
    ref = hotbin.cumsum(a)
    x = a.reshape(1, -1, 1)
    n, nblk = a.size, -(-a.size // B)
    args = (x, np.int64(n), np.int64(1), np.int64(nblk), np.int64(B), np.int64(nblk))
    ct = "float" if dtype == np.float32 else "double"
    sums = cp.empty(nblk, dtype)
    grid = -(-nblk // threads)
    cscan.launch(cscan.lane_kernel("sums", ct, threads, vecs), grid, threads, args + (sums,))
    offs, _ = cscan._chain(sums, 1, nblk, 1)
    out = cp.empty_like(x)
    cscan.launch(cscan.lane_kernel("scan", ct, threads, vecs), grid, threads, args + (offs, out))
    assert out.reshape(-1).get().tobytes() == ref.get().tobytes()
