"""Every backend equals the cpu backend bit for bit (issue #8).

Inputs are drawn around the sizes where kernels change behaviour (one block,
the serial/parallel threshold, a code block, a wgpu workgroup grid), with heavy
skew, NaN/inf and values exactly on edges. Counts and deterministic weighted
sums must be bitwise equal; both must also match NumPy where NumPy defines them.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hotbin
from hotbin.core import scan_order
from hotbin.backend import cpu
from conftest import to_numpy

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
SIZES = [0, 1, 31, 255, 256, 257, 2047, 2048, 2049, 4095, 65535, 65537, 2 * cpu.MIN_PER_THREAD + 1]


@st.composite
def skewed(draw, dtype):
    n = draw(st.sampled_from(SIZES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    hot = draw(st.sampled_from([0.0, 0.5, 0.9, 1.0]))
    if np.dtype(dtype).kind == "f":
        a = rng.uniform(-1, 11, n)
        a[rng.random(n) < hot] = 5.0  # 5.0 is an edge of 10 bins over [0, 10]
        special = rng.random(n)
        a[special < 0.01] = np.nan
        a[(special >= 0.01) & (special < 0.02)] = np.inf
        a[(special >= 0.02) & (special < 0.03)] = np.nextafter(np.float64(5.0), 0)
    else:
        a = rng.integers(0, 256, n)
        a[rng.random(n) < hot] = 77
    return a.astype(dtype)


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([np.uint8, np.int32, np.float32, np.float64]))
def test_histogram_counts_agree(backend, data, dtype):
    a = data.draw(skewed(dtype))
    rng_ = (0, 10) if np.dtype(dtype).kind == "f" else (0, 256)
    want = to_numpy(hotbin.histogram(a, 10, rng_, backend="cpu")[0])
    got = to_numpy(hotbin.histogram(a, 10, rng_, backend=backend)[0])
    assert got.tobytes() == want.tobytes()
    an = a[np.isfinite(a)] if np.dtype(dtype).kind == "f" else a
    np.testing.assert_array_equal(want, np.histogram(an, 10, rng_)[0])


@SETTINGS
@given(data=st.data())
def test_deterministic_sums_and_heatmaps_agree(backend, data):
    x = data.draw(skewed(np.float64))
    y = x[::-1].copy()
    w = np.random.default_rng(x.size).standard_normal(x.size) * 1e3
    h0 = to_numpy(hotbin.histogram(x, 10, (0, 10), weights=w, deterministic=True, backend="cpu")[0])
    h1 = to_numpy(hotbin.histogram(x, 10, (0, 10), weights=w, deterministic=True, backend=backend)[0])
    assert h1.tobytes() == h0.tobytes()
    m0 = hotbin.heatmap(x, y, w, width=9, height=7, x_range=(0, 10), y_range=(0, 10),
                        deterministic=True, backend="cpu")
    m1 = hotbin.heatmap(x, y, w, width=9, height=7, x_range=(0, 10), y_range=(0, 10),
                        deterministic=True, backend=backend)
    assert to_numpy(m1.counts).tobytes() == to_numpy(m0.counts).tobytes() and m1.dropped == m0.dropped
    c0 = hotbin.heatmap(x, y, width=9, height=7, x_range=(0, 10), y_range=(0, 10), backend="cpu")
    c1 = hotbin.heatmap(x, y, width=9, height=7, x_range=(0, 10), y_range=(0, 10), backend=backend)
    assert to_numpy(c1.counts).tobytes() == to_numpy(c0.counts).tobytes() and c1.dropped == c0.dropped
    assert int(to_numpy(c0.counts).sum()) + c0.dropped == x.size


@pytest.mark.parametrize("n", SIZES)
def test_scan_and_bincount_agree(backend, n, rng):
    x = rng.integers(0, 300, n).astype(np.int32)
    assert to_numpy(hotbin.cumsum(x, backend=backend)).tobytes() == \
        to_numpy(hotbin.cumsum(x, backend="cpu")).tobytes()
    assert to_numpy(hotbin.bincount(x, minlength=3, backend=backend)).tobytes() == \
        to_numpy(hotbin.bincount(x, minlength=3, backend="cpu")).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES + [scan_order.SCAN_BLOCK - 1, scan_order.SCAN_BLOCK + 1, 3 * scan_order.SCAN_BLOCK + 7])
def test_float_scans_agree_bitwise(backend, dtype, n, rng):
    """Float scans follow one association order on every backend (issue #13): bitwise equal,
    inclusive and exclusive, with NaN/inf and values of very different sizes."""
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(dtype)
    x[rng.random(n) < 0.001] = np.inf
    for exclusive in (False, True):
        want = to_numpy(hotbin.cumsum(x, exclusive=exclusive, backend="cpu"))
        got = to_numpy(hotbin.cumsum(x, exclusive=exclusive, backend=backend))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    if n <= scan_order.SCAN_BLOCK:  # one block: NumPy's sequential scan
        assert want.tobytes() == np.concatenate([[0], np.cumsum(x)[:-1]]).astype(dtype).tobytes() or n == 0


def test_float32_scan_of_millions_agrees(backend, rng):
    """Hostile finding: wgpu's float32 cumsum left the cpu's from index ~16 (38.4 apart at 3e6)."""
    x = rng.random(3_000_000).astype(np.float32)
    assert to_numpy(hotbin.cumsum(x, backend=backend)).tobytes() == \
        to_numpy(hotbin.cumsum(x, backend="cpu")).tobytes()


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([np.int32, np.uint8, np.float32, np.float64]))
def test_scans_along_axes_agree(backend, data, dtype):
    shape = tuple(data.draw(st.lists(st.integers(0, 40), min_size=1, max_size=3)))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    exclusive = data.draw(st.booleans())
    x = (np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).standard_normal(shape) * 50).astype(dtype)
    want = to_numpy(hotbin.cumsum(x, axis, exclusive=exclusive, backend="cpu"))
    got = to_numpy(hotbin.cumsum(x, axis, exclusive=exclusive, backend=backend))
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
