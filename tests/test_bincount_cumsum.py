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
