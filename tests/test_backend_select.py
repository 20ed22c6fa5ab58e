"""Which backend a call runs on when ``backend=None`` (issue #17 item 3), without a GPU.

Large NumPy inputs go to the cuda backend when it is usable and the result's bits are
the same there; everything else keeps the old choice. The GPU probe and the thresholds
are faked here (``gpu_usable``, ``_cupy_installed``, ``tuning.OFFLOAD_BYTES``), and the
backend "cuda" is served by the cpu backend, so the choice is what is tested, on any machine.
tests/test_cuda_offload.py runs the real thing on a device.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hotbin
from hotbin import backend as registry
from hotbin.backend.cuda import tuning

MIB = 1 << 20


@pytest.fixture
def gpu(monkeypatch):
    """A machine with a usable GPU (faked) and 2 MiB thresholds; records the backends loaded
    (``gpu.loaded``) and the probes (``gpu.probes``), and runs "cuda" on the cpu backend."""
    class Fake:
        loaded, probes = [], []
    monkeypatch.delenv(registry.ENV, raising=False)
    monkeypatch.setattr(registry, "_cupy_installed", lambda: True)

    def probe():
        Fake.probes.append(1)
        return True

    monkeypatch.setattr(registry, "gpu_usable", probe)
    monkeypatch.setattr(tuning, "OFFLOAD_BYTES", {op: 2 * MIB for op in tuning.OFFLOAD_BYTES})
    load = registry.load

    def fake_load(name):
        Fake.loaded.append(name)
        return load("cpu" if name == "cuda" else name)

    monkeypatch.setattr(registry, "load", fake_load)
    return Fake


def f32(nbytes, seed=1):
    return np.random.default_rng(seed).random(nbytes // 4, np.float32)


def test_small_host_arrays_stay_on_cpu(gpu):
    x = f32(MIB)
    assert registry.name_for(None, x, offload="histogram") == "cpu"
    assert gpu.probes == []  # below the floor nothing is asked of the GPU


def test_large_host_arrays_go_to_the_gpu(gpu):
    x = f32(2 * MIB)
    assert registry.name_for(None, x, offload="histogram") == "cuda"
    # the arrays of a call count together: two 1 MiB coordinates reach 2 MiB
    assert registry.name_for(None, f32(MIB), f32(MIB, 2), None, offload=("heatmap", 64)) == "cuda"
    assert registry.name_for(None, x) == "cpu"  # no operation key: never moved
    assert registry.name_for(None, x, offload="histogram2d") == "cpu"  # not faster there


def test_threshold_is_per_operation_and_grid(gpu, monkeypatch):
    monkeypatch.setattr(tuning, "OFFLOAD_BYTES", {"histogram": 2 * MIB, "heatmap": 8 * MIB})
    x = f32(4 * MIB)
    assert registry.name_for(None, x, offload="histogram") == "cuda"
    assert registry.name_for(None, x, offload=("heatmap", tuning.OFFLOAD_CELLS)) == "cpu"
    # a grid smaller than the one measured takes the 1-D histogram's threshold
    assert registry.name_for(None, x, offload=("heatmap", tuning.OFFLOAD_CELLS - 1)) == "cuda"
    assert tuning.offload_bytes("histogram2d") == float("inf")


def test_environment_and_argument_win(gpu, monkeypatch):
    x = f32(4 * MIB)
    assert registry.name_for("cpu", x, offload="histogram") == "cpu"
    monkeypatch.setenv(registry.ENV, "cpu")
    assert registry.name_for(None, x, offload="histogram") == "cpu"
    h, _ = hotbin.histogram(x, 16, (0, 1))
    assert "cuda" not in gpu.loaded
    np.testing.assert_array_equal(h, np.histogram(x, 16, (0, 1))[0])


def test_no_gpu_keeps_cpu(gpu, monkeypatch):
    monkeypatch.setattr(registry, "gpu_usable", lambda: False)
    assert registry.name_for(None, f32(4 * MIB), offload="histogram") == "cpu"


def test_other_inputs_keep_their_claimant(gpu):
    big_list = [0.5] * (MIB // 2)  # 4 MiB once converted: a list is not moved
    assert registry.name_for(None, big_list, offload="histogram") == "cpu"

    class DeviceArray:  # claimed by the cuda backend, whatever its size
        __cuda_array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (0, True), "version": 3}

    assert registry.name_for(None, DeviceArray(), offload="histogram") == "cuda"
    # a NumPy array next to an array of another kind: the claimant decides
    assert registry.name_for(None, f32(4 * MIB), big_list, offload="histogram") == "cpu"


@pytest.mark.parametrize("kw,moved", [
    ({}, True),
    ({"weights": "int"}, True),
    ({"weights": "bool"}, True),
    ({"weights": "float"}, False),  # float64 atomics: bits may differ from the cpu's
    ({"weights": "float", "deterministic": True}, True),  # fixed point: the same bits
    ({"weights": "complex"}, False),
    ({"axis": 1}, False),  # one histogram per row: not measured, stays
])
def test_histogram_moves_only_portable_results(gpu, rng, kw, moved):
    x = f32(4 * MIB)
    kw = dict(kw)
    kinds = {"int": np.int32, "bool": np.bool_, "float": np.float32, "complex": np.complex64}
    if "weights" in kw:
        kw["weights"] = (rng.random(x.size) * 4).astype(kinds[kw["weights"]])
    xs = x.reshape(2, -1) if "axis" in kw else x
    h, e = hotbin.histogram(xs, 16, (0, 1), **kw)
    assert ("cuda" in gpu.loaded) is moved
    wt = kw.get("weights")
    if wt is not None:  # NumPy sums in the weights' dtype (bools as bools); hotbin never wraps
        wt = wt.astype({"b": np.int64, "i": np.int64, "f": np.float64, "c": np.complex128}[wt.dtype.kind])
    want = np.histogram(x, 16, (0, 1), weights=wt)[0]
    if "axis" in kw:
        want = np.stack([np.histogram(r, 16, (0, 1))[0] for r in xs])
    if kw.get("weights") is not None and kw["weights"].dtype.kind in "fc":
        np.testing.assert_allclose(h, want, rtol=1e-9)
    else:
        np.testing.assert_array_equal(h, want)


def test_histogram2d_stays(gpu):
    """histogram2d was never clearly faster on the GPU from host data: not moved."""
    x, y = f32(2 * MIB), f32(2 * MIB, 2)
    H, _, _ = hotbin.histogram2d(x, y, 8, [(0, 1), (0, 1)])
    assert gpu.loaded == ["cpu"]
    np.testing.assert_array_equal(H, np.histogram2d(x, y, 8, [(0, 1), (0, 1)])[0])


@pytest.mark.parametrize("agg,wkind,det,moved", [
    ("count", None, False, True),
    ("count", np.float32, False, False),
    ("count", np.float32, True, True),
    ("count", np.int16, False, True),
    ("any", np.float32, False, True),
    ("max", np.float32, False, True),
    ("min", np.float64, False, True),
    ("mean", np.float32, False, False),
    ("mean", np.int32, False, False),  # the values are added as floats
    ("mean", np.float32, True, True),
    ("sum", np.int32, True, True),
    ("var", np.float32, False, False),
])
def test_heatmap_moves_only_portable_results(gpu, rng, agg, wkind, det, moved):
    x, y = f32(MIB), f32(MIB, 2)
    w = None if wkind is None else (rng.random(x.size) * 8).astype(wkind)
    hm = hotbin.heatmap(x, y, w, agg=agg, width=16, height=8, x_range=(0, 1), y_range=(0, 1),
                        deterministic=det)
    assert ("cuda" in gpu.loaded) is moved
    assert hm.counts.shape == (8, 16)


def test_cli_heatmap_uses_the_same_choice(gpu, tmp_path, monkeypatch):
    """``hotbin heatmap`` counts each chunk through hotbin.heatmap: chunks over the
    threshold go to the GPU, and HOTBIN_BACKEND=cpu keeps them on the CPU."""
    pytest.importorskip("duckdb")  # the CLI reads files through DuckDB (hotbin[io])
    from hotbin.cli import main

    rng = np.random.default_rng(5)
    n = 200_000
    path = tmp_path / "pts.csv"
    np.savetxt(path, rng.random((n, 2)), delimiter=",", header="x,y", comments="", fmt="%.6f")
    monkeypatch.setattr(tuning, "OFFLOAD_BYTES", {op: MIB for op in tuning.OFFLOAD_BYTES})
    out = tmp_path / "hm.npy"
    args = ["heatmap", str(path), "--x", "x", "--y", "y", "--width", "32", "--height", "32",
            "--x-range", "0,1", "--y-range", "0,1", "-o", str(out)]
    assert main(args) == 0
    assert "cuda" in gpu.loaded  # 2 x 200k float64 = 3.2 MiB in one chunk
    counts = np.load(out)
    assert counts.sum() == n
    gpu.loaded.clear()
    monkeypatch.setenv(registry.ENV, "cpu")
    assert main(args) == 0
    assert "cuda" not in gpu.loaded
    np.testing.assert_array_equal(np.load(out), counts)


def test_probe_is_per_process(monkeypatch):
    """A process forked after the probe cannot use its parent's CUDA: it keeps the CPU."""
    monkeypatch.setattr(registry, "_GPU_PROBE", [os.getpid(), True])
    assert registry.gpu_usable()
    monkeypatch.setattr(registry, "_GPU_PROBE", [os.getpid() + 1, True])
    assert not registry.gpu_usable()


def test_thresholds_are_above_the_floor():
    """Every measured threshold is at least the floor below which nothing is probed, and
    covers the operations the front doors name."""
    assert set(tuning.OFFLOAD_BYTES) == {"histogram", "heatmap"}
    assert all(v >= registry.OFFLOAD_FLOOR for v in tuning.OFFLOAD_BYTES.values())
    # a grid smaller than the one measured is never moved sooner than a 1-D histogram
    assert tuning.offload_bytes("heatmap", 64) == tuning.OFFLOAD_BYTES["histogram"]


def test_small_calls_import_no_gpu_code():
    """NumPy calls below the floor import neither CuPy nor the cuda backend, whatever is
    installed: a fresh process."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import hotbin
        x = np.random.default_rng(0).random(1000)
        hotbin.histogram(x, 10)
        hotbin.histogram2d(x, x, 4)
        hotbin.heatmap(x, x, width=8, height=8)
        hotbin.histogram(np.arange((1 << 17) - 1, dtype=np.float64), 10)  # just under 1 MiB
        bad = [m for m in ("cupy", "hotbin.backend.cuda") if m in sys.modules]
        assert not bad, bad
    """)
    env = {k: v for k, v in os.environ.items() if k != registry.ENV}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
