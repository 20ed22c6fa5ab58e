"""Large NumPy inputs on a machine with a GPU, ``backend=None`` (issue #17 item 3), for real.

At the cuda backend's measured thresholds (``tuning.OFFLOAD_BYTES``) the call runs on the
device and returns NumPy results equal to the cpu backend's bit for bit; below them, with
``HOTBIN_BACKEND=cpu`` and for float sums without ``deterministic``, the cpu backend runs.
tests/test_backend_select.py tests the choice itself without a GPU.
"""
import numpy as np
import pytest

import hotbin
from hotbin import backend as registry

cp = pytest.importorskip("cupy")
from hotbin.backend import cuda as cb  # noqa: E402
from hotbin.backend.cuda import tuning  # noqa: E402

if not cb.available():
    pytest.skip("cuda backend: no CUDA device", allow_module_level=True)

pytestmark = pytest.mark.cuda


@pytest.fixture
def chosen(monkeypatch):
    """The backends the calls load (a spy on the registry: the real backends run)."""
    monkeypatch.delenv(registry.ENV, raising=False)
    names = []
    load = registry.load

    def spy(name):
        names.append(name)
        return load(name)

    monkeypatch.setattr(registry, "load", spy)
    return names


def points(nbytes, seed=3):
    """float32 values in [0, 1), a tenth of them on one spot (never all zeros)."""
    v = np.random.default_rng(seed).random(nbytes // 4, np.float32)
    v[::10] = np.float32(0.25)
    return v


def test_probe_finds_the_device():
    assert registry.gpu_usable()


def test_histogram_at_the_threshold_runs_on_the_gpu(chosen):
    x = points(tuning.OFFLOAD_BYTES["histogram"])
    h, e = hotbin.histogram(x, 256, (0.0, 1.0))
    assert chosen == ["cuda"]
    assert isinstance(h, np.ndarray) and isinstance(e, np.ndarray)
    want, want_e = np.histogram(x, 256, (0.0, 1.0))
    np.testing.assert_array_equal(h, want)
    np.testing.assert_array_equal(e, want_e)
    # range from the data, integer weights: still the device, still exact
    w = (np.arange(x.size) % 7).astype(np.int32)
    h, e = hotbin.histogram(x, 100, weights=w)
    np.testing.assert_array_equal(h, np.histogram(x, 100, weights=w.astype(np.int64))[0])
    np.testing.assert_array_equal(e, np.histogram_bin_edges(x, 100))
    assert chosen == ["cuda", "cuda"]


def test_below_the_threshold_and_float_sums_stay_on_cpu(chosen, monkeypatch):
    x = points(tuning.OFFLOAD_BYTES["histogram"] // 2)
    hotbin.histogram(x, 256, (0.0, 1.0))
    big = points(tuning.OFFLOAD_BYTES["histogram"])
    hotbin.histogram(big, 256, (0.0, 1.0), weights=big)  # float64 atomics: bits would differ
    monkeypatch.setenv(registry.ENV, "cpu")
    hotbin.histogram(big, 256, (0.0, 1.0))
    assert chosen == ["cpu", "cpu", "cpu"]


def test_deterministic_sums_are_the_cpus_bits(chosen):
    x = points(tuning.OFFLOAD_BYTES["histogram"])
    w = np.random.default_rng(4).normal(size=x.size).astype(np.float32)
    got, _ = hotbin.histogram(x[: x.size // 2], 64, (0.0, 1.0), weights=w[: x.size // 2],
                              deterministic=True)  # half the bytes of x and w: the threshold
    want, _ = hotbin.histogram(x[: x.size // 2], 64, (0.0, 1.0), weights=w[: x.size // 2],
                               deterministic=True, backend="cpu")
    assert chosen[0] == "cuda"
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def test_heatmap_runs_on_the_gpu_histogram2d_stays(chosen):
    n = tuning.OFFLOAD_BYTES["heatmap"] // 8  # x and y float32
    x, y = points(4 * n, 5), points(4 * n, 6)
    hm = hotbin.heatmap(x, y, width=1024, height=1024)
    ref = hotbin.heatmap(x, y, width=1024, height=1024, backend="cpu")
    np.testing.assert_array_equal(hm.counts, ref.counts)
    assert hm.dropped == ref.dropped == 0 and isinstance(hm.counts, np.ndarray)
    w = np.random.default_rng(7).normal(size=n).astype(np.float32)
    hmax = hotbin.heatmap(x, y, w, agg="max", width=1024, height=1024)
    np.testing.assert_array_equal(hmax.values, hotbin.heatmap(x, y, w, agg="max", width=1024, height=1024,
                                                              backend="cpu").values)
    hotbin.heatmap(x, y, width=64, height=64)  # a small grid: the 1-D histogram's threshold
    half = tuning.OFFLOAD_BYTES["histogram"] // 2
    x, y = points(half, 8), points(half, 9)
    H, xe, ye = hotbin.histogram2d(x, y, 64, [(0, 1), (0, 1)])  # never moved
    np.testing.assert_array_equal(H, np.histogram2d(x, y, 64, [(0, 1), (0, 1)])[0])
    assert chosen == ["cuda", "cpu", "cuda", "cpu", "cpu", "cpu"]
