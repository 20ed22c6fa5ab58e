"""bincount and cumsum against NumPy, on every backend."""
import numpy as np
import pytest

import hotbin
from conftest import to_numpy


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.int32, np.int64, np.uint32])
def test_bincount(backend, dtype, rng):
    x = rng.integers(0, 2 if dtype == np.bool_ else 120, 30_000).astype(dtype)
    got = to_numpy(hotbin.bincount(x, backend=backend))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.bincount(x))
    np.testing.assert_array_equal(to_numpy(hotbin.bincount(x, minlength=500, backend=backend)),
                                  np.bincount(x, minlength=500))
    w = rng.standard_normal(x.size)
    np.testing.assert_allclose(to_numpy(hotbin.bincount(x, weights=w, backend=backend)),
                               np.bincount(x, weights=w), rtol=1e-12, atol=1e-12)


def test_bincount_hot_and_empty(backend):
    x = np.full(100_000, 3, np.int64)
    np.testing.assert_array_equal(to_numpy(hotbin.bincount(x, backend=backend)), [0, 0, 0, 100_000])
    np.testing.assert_array_equal(to_numpy(hotbin.bincount(np.array([], np.int64), minlength=2, backend=backend)), [0, 0])


@pytest.mark.parametrize("x, kw, exc, match", [
    (np.array([1, -1, 2]), {}, ValueError, "negative"),
    (np.array([1.5, 2.0]), {}, TypeError, "safe"),
    (np.array([[1, 2]]), {}, ValueError, "too deep"),
    (np.array([1, 2]), {"minlength": -1}, ValueError, "minlength"),
    (np.array([1, 2]), {"weights": np.ones(3)}, ValueError, "same length"),
    (np.array([1, 2], np.float32), {}, TypeError, "safe"),
])
def test_bincount_errors(backend, x, kw, exc, match):
    with pytest.raises(exc, match=match):
        hotbin.bincount(x, **kw, backend=backend)
    with pytest.raises(exc):
        np.bincount(x, **kw)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
def test_cumsum_integers_exact(backend, dtype, rng):
    n = 1_000_003  # several scan blocks, not a multiple of any block size
    x = rng.integers(0, 2 if dtype == np.bool_ else 100, n).astype(dtype)
    if np.dtype(dtype).kind == "i":
        x = (x - 50).astype(dtype)
    got = to_numpy(hotbin.cumsum(x, backend=backend))
    want = np.cumsum(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    ex = to_numpy(hotbin.cumsum(x, exclusive=True, backend=backend))
    np.testing.assert_array_equal(ex, np.concatenate([[0], want[:-1]]).astype(want.dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cumsum_floats(backend, dtype, rng):
    x = rng.standard_normal(777_777).astype(dtype)
    got = to_numpy(hotbin.cumsum(x, backend=backend))
    want = np.cumsum(x.astype(np.float64))
    assert got.dtype == dtype
    tol = 2e-3 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * np.sqrt(x.size))
    np.testing.assert_array_equal(got, to_numpy(hotbin.cumsum(x, backend=backend)))  # reproducible


def test_cumsum_shapes_and_edge_cases(backend, rng):
    x = rng.integers(-5, 5, (31, 17)).astype(np.int32)
    np.testing.assert_array_equal(to_numpy(hotbin.cumsum(x, backend=backend)), np.cumsum(x))
    np.testing.assert_array_equal(to_numpy(hotbin.cumsum(x[:, ::2], backend=backend)), np.cumsum(x[:, ::2]))
    assert to_numpy(hotbin.cumsum(np.array([], np.int32), backend=backend)).size == 0
    np.testing.assert_array_equal(to_numpy(hotbin.cumsum(np.array([7], np.int32), exclusive=True, backend=backend)), [0])
    with pytest.raises(TypeError, match="a:"):
        hotbin.cumsum(np.array(["x"]), backend=backend)


# --- cumsum as numpy.cumsum: axis, dtype, errors (issue #13) -----------------------

def _block_order(a, axis, block):
    """The documented float order (hotbin.backend.cpu.cumsum), one scalar add at a time."""
    x = np.moveaxis(np.asarray(a), axis, -1)
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        lane, zero = x[idx], x.dtype.type(-0.0)
        offset = zero
        for lo in range(0, lane.size, block):
            run, total = offset, zero
            for i in range(lo, min(lane.size, lo + block)):
                run, total = run + lane[i], total + lane[i]
                out[idx + (i,)] = run
            offset = offset + total
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.uint64, np.float16,
                                   np.float32, np.float64, np.complex64, ">f2", ">i4", ">f8"])
def test_cumsum_axis_matches_numpy_bitwise(backend, dtype, rng):
    a = (rng.standard_normal((4, 5, 6)) * 40).astype(dtype)
    for axis in (None, 0, 1, 2, -1, -3):
        for x in (a, a[:, ::-2, 1:]):  # lanes shorter than a block are NumPy's sequential scan
            want = np.cumsum(x, axis=axis)
            got = to_numpy(hotbin.cumsum(x, axis, backend=backend))
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes(), (axis, x.strides)
            ex = to_numpy(hotbin.cumsum(x, axis=axis, exclusive=True, backend=backend))
            k = 0 if axis is None else axis
            shifted = np.concatenate([np.zeros_like(np.take(want, [0], k)), np.delete(want, -1, k)], k)
            assert ex.dtype == want.dtype and ex.tobytes() == shifted.tobytes()


@pytest.mark.parametrize("dtype", [None, np.float32, np.float64, np.int8, np.uint32, np.int64,
                                   np.float16, np.complex128, bool])
def test_cumsum_dtype_casts_as_numpy(backend, dtype):
    for a in (np.array([[1.5, 2.5, -1.25], [200.0, 100.0, 7.0]]), np.array([[3, -4, 120], [9, 100, 100]], np.int8)):
        for axis in (None, 1, 0):
            want = np.cumsum(a, axis=axis, dtype=dtype)
            got = to_numpy(hotbin.cumsum(a, axis=axis, dtype=dtype, backend=backend))
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (a.dtype, axis)


def test_cumsum_errors_as_numpy(backend):
    a = np.ones((2, 3), np.float32)
    for axis in (2, -3):
        with pytest.raises(np.exceptions.AxisError, match="axis"):
            hotbin.cumsum(a, axis=axis, backend=backend)
    for axis in ((0,), 1.0, True, "0"):
        with pytest.raises(TypeError, match="axis"):
            hotbin.cumsum(a, axis=axis, backend=backend)
    for dtype in ("foo", "U8", object):
        with pytest.raises(TypeError, match="dtype"):
            hotbin.cumsum(a, dtype=dtype, backend=backend)
    assert to_numpy(hotbin.cumsum(np.array(5, np.int8), axis=-1, backend=backend)).tolist() == [5]


@pytest.mark.parametrize("dtype", [np.float16, np.complex64, np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("shape,axis", [((0,), None), ((0,), 0), ((0, 3), 0), ((3, 0), 1), ((0, 3), None)])
def test_cumsum_empty_keeps_numpy_shape(backend, dtype, shape, axis):
    """Hostile finding: exclusive scans of empty float16/complex arrays returned [0]."""
    want = np.cumsum(np.zeros(shape, dtype), axis=axis)
    for exclusive in (False, True):
        got = to_numpy(hotbin.cumsum(np.zeros(shape, dtype), axis, exclusive=exclusive, backend=backend))
        assert got.shape == want.shape and got.dtype == want.dtype


def test_cumsum_big_endian_float16(backend, rng):
    """Hostile finding: big-endian float16 raised NotImplementedError."""
    a = rng.standard_normal((3, 50)).astype(">f2")
    for axis in (None, 1):
        want = np.cumsum(a, axis=axis)
        got = to_numpy(hotbin.cumsum(a, axis, backend=backend))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_cumsum_block_order(backend, dtype, rng, monkeypatch):
    """Lanes longer than a block follow the documented order exactly, on every backend."""
    from hotbin.core import scan_order
    monkeypatch.setattr(scan_order, "SCAN_BLOCK", 64)
    a = (rng.standard_normal((3, 301, 2)) * (10 if dtype == np.float16 else 1e4)).astype(dtype)
    for axis in (None, 1, 0):
        x = a.reshape(-1) if axis is None else a
        want = _block_order(x, 0 if axis is None else axis, 64)
        assert to_numpy(hotbin.cumsum(a, axis, backend=backend)).tobytes() == want.tobytes(), axis


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_cpu_cumsum_kernels_block_order(dtype, threaded, rng, monkeypatch):
    """The cpu kernels past the small path: one pass on the calling thread (scans under two
    threads' worth of SCAN_MIN_PER_THREAD) and the two threaded passes, both in the documented
    block order bit for bit, inclusive and exclusive, rows and columns."""
    from hotbin.core import scan_order
    from hotbin.backend.cpu import parallel, scan
    monkeypatch.setattr(scan_order, "SCAN_BLOCK", 64)
    if threaded:
        monkeypatch.setattr(scan, "SCAN_MIN_PER_THREAD", 4096)
        monkeypatch.setattr(parallel, "MIN_PER_THREAD", 4096)
    old = parallel.set_threads(2 if threaded else 1)
    try:
        a = (rng.standard_normal((3, 7001)) * 1e4).astype(dtype)
        for axis, x in ((None, a), (1, a), (0, a.T.copy())):
            want = (np.cumsum(x, axis=axis) if x.dtype.kind == "i" else
                    _block_order(x.reshape(-1) if axis is None else x, 0 if axis is None else axis, 64))
            got = hotbin.cumsum(x, axis, backend="cpu")
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), axis
            ex = hotbin.cumsum(x, axis, exclusive=True, backend="cpu")
            shifted = scan_order.shift_exclusive(want.reshape(-1) if axis is None else want,
                                                 0 if axis is None else axis)
            assert ex.tobytes() == shifted.tobytes(), ("exclusive", axis)
    finally:
        parallel.set_threads(old)
