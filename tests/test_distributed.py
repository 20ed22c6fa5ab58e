"""Dask (issue #7) on a real two-process cluster: NumPy parity, dataframe columns, determinism
under any chunking, the range pass, and an exact result after a worker is killed mid-job."""
import os
import signal
import sys
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import hotbin  # noqa: E402
import dask  # noqa: E402
from hotbin.core.arrays import is_dask  # noqa: E402


def _tree(fn):
    """``fn`` with dask's ``split_every`` (partials merged per tree node) set for the call."""
    def call(*args, split_every=None, **kwargs):
        if split_every is None:
            return fn(*args, **kwargs)
        with dask.config.set(split_every=split_every):
            return fn(*args, **kwargs)
    return call


class hd:  # the public functions on dask input, with the tree's fan-in as a test parameter
    histogram = _tree(hotbin.histogram)
    histogram2d = _tree(hotbin.histogram2d)
    bincount = _tree(hotbin.bincount)
    heatmap = _tree(hotbin.heatmap)
    luminance_histogram = _tree(hotbin.luminance_histogram)


def _bits(a):
    return np.ascontiguousarray(a).tobytes()


@pytest.fixture(scope="module")
def client():
    import cloudpickle

    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)  # the workers cannot import this test module
    try:
        # one numba thread per single-threaded worker: no oversubscription on small CI machines
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                      dashboard_address=":0",  # a free port: test runs may overlap
                                      env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
                distributed.Client(cluster) as c:
            yield c
    finally:
        cloudpickle.unregister_pickle_by_value(module)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    n = 20_000
    x = np.concatenate([rng.normal(size=n - 2000), np.full(2000, 0.25)])  # a hot bin
    rng.shuffle(x)
    y = rng.exponential(size=n)
    w = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4, n)
    return x, y, w


def _chunked(a, chunks):
    return da.from_array(a, chunks=chunks)


# --- NumPy parity ----------------------------------------------------------------------------

@pytest.mark.parametrize("chunks", [20_000, 1_500, 777])
def test_histogram_equals_numpy(client, data, chunks):
    x, _, w = data
    h, edges = hd.histogram(_chunked(x, chunks), bins=25, range=(-3, 3))
    assert isinstance(h, da.Array)  # lazy, edges known
    ref, ref_edges = np.histogram(x, bins=25, range=(-3, 3))
    np.testing.assert_array_equal(h.compute(), ref)
    assert h.dtype == np.int64 and edges.dtype == ref_edges.dtype
    np.testing.assert_array_equal(edges, ref_edges)
    hw, _ = hd.histogram(_chunked(x, chunks), bins=[-2, -0.5, 0.25, 0.5, 3], weights=_chunked(w, chunks),
                         split_every=3)
    np.testing.assert_allclose(hw.compute(), np.histogram(x, [-2, -0.5, 0.25, 0.5, 3], weights=w)[0],
                               rtol=1e-9, atol=1e-9)


def test_nd_array_and_dtypes(client, data):
    x, _, _ = data
    img = (x.reshape(100, 200) * 40).astype(np.int16)
    h, e = hd.histogram(_chunked(img, (30, 70)), bins=17)
    ref, ref_e = np.histogram(img, bins=17)
    np.testing.assert_array_equal(h.compute(), ref)
    np.testing.assert_array_equal(e, ref_e)
    f32 = x.astype(np.float32)
    h, e = hd.histogram(_chunked(f32, 3000), bins=9, density=True)
    ref, ref_e = np.histogram(f32, bins=9, density=True)
    assert e.dtype == np.float32
    np.testing.assert_allclose(h.compute(), ref, rtol=1e-12)


def test_histogram2d_and_bincount(client, data):
    x, y, w = data
    H, xe, ye = hd.histogram2d(_chunked(x, 2500), _chunked(y, 2500), bins=(8, 6), split_every=2)
    ref, rxe, rye = np.histogram2d(x, y, bins=(8, 6))
    np.testing.assert_array_equal(H.compute(), ref)
    np.testing.assert_array_equal(xe, rxe)
    np.testing.assert_array_equal(ye, rye)
    Hw, _, _ = hd.histogram2d(_chunked(x, 2500), _chunked(y, 4000), bins=5, range=[(-1, 1), (0, 2)],
                              weights=_chunked(w, 3000))
    np.testing.assert_allclose(Hw.compute(), np.histogram2d(x, y, 5, [(-1, 1), (0, 2)], weights=w)[0],
                               rtol=1e-9, atol=1e-9)
    ints = (y * 10).astype(np.int64)
    np.testing.assert_array_equal(hd.bincount(_chunked(ints, 3000)).compute(), np.bincount(ints))
    np.testing.assert_allclose(hd.bincount(_chunked(ints, 3000), weights=_chunked(w, 3000),
                                           minlength=200).compute(),
                               np.bincount(ints, w, 200), rtol=1e-9, atol=1e-9)


def test_dataframe_column(client, data):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    x, y, w = data
    df = pd.DataFrame({"x": x, "y": y, "w": w, "i": (y * 10).astype(np.int64)})
    ddf = dd.from_pandas(df, npartitions=6)
    h, e = hd.histogram(ddf["x"], bins=12)
    np.testing.assert_array_equal(h.compute(), np.histogram(x, bins=12)[0])
    sub = ddf[ddf["y"] > 1.0]  # partitions of unknown length
    keep = y > 1.0
    h, e = hd.histogram(sub["x"], bins=12, weights=sub["w"], deterministic=True)
    ref, ref_e = hotbin.histogram(x[keep], bins=12, weights=w[keep], deterministic=True)
    assert _bits(h.compute()) == _bits(ref)
    np.testing.assert_array_equal(e, ref_e)
    H, _, _ = hd.histogram2d(sub["x"], sub["y"], bins=4)
    np.testing.assert_array_equal(H.compute(), np.histogram2d(x[keep], y[keep], bins=4)[0])
    np.testing.assert_array_equal(hd.bincount(sub["i"]).compute(), np.bincount(df["i"][keep]))
    with pytest.raises(ValueError, match="partitions"):
        hd.histogram(ddf["x"], weights=dd.from_pandas(df, npartitions=5)["w"])


# --- determinism ---------------------------------------------------------------------------------

def test_deterministic_bitwise_under_any_chunking(client, data):
    x, y, w = data
    ref, _ = hotbin.histogram(x, bins=30, weights=w, deterministic=True)
    ref2, _, _ = hotbin.histogram2d(x, y, bins=7, weights=w, deterministic=True)
    for chunks, split_every in [(20_000, None), (1_000, 2), (3_331, 5)]:
        h, _ = hd.histogram(_chunked(x, chunks), bins=30, weights=_chunked(w, chunks),
                            deterministic=True, split_every=split_every)
        assert _bits(h.compute()) == _bits(ref)
        H, _, _ = hd.histogram2d(_chunked(x, chunks), _chunked(y, chunks), bins=7,
                                 weights=_chunked(w, chunks), deterministic=True, split_every=split_every)
        assert _bits(H.compute()) == _bits(ref2)


# --- the range pass -----------------------------------------------------------------------------

def test_missing_range(client, data):
    x, y, _ = data
    h, e = hd.histogram(_chunked(y, 1234), bins=11)  # one extra pass finds (min, max)
    ref, ref_e = np.histogram(y, bins=11)
    np.testing.assert_array_equal(e, ref_e)
    np.testing.assert_array_equal(h.compute(), ref)
    const = np.full(100, 3, np.int32)
    h, e = hd.histogram(_chunked(const, 7), bins=4)
    np.testing.assert_array_equal(e, np.histogram(const, bins=4)[1])
    h, e = hd.histogram(_chunked(np.empty(0), 5), bins=3)
    np.testing.assert_array_equal(e, np.histogram(np.empty(0), bins=3)[1])
    np.testing.assert_array_equal(h.compute(), [0, 0, 0])
    with pytest.raises(ValueError, match="not finite"):
        hd.histogram(_chunked(np.array([1.0, np.nan, 2.0]), 2), bins=3)
    with pytest.raises(ValueError, match="string rule"):
        hd.histogram(_chunked(x, 5000), bins="auto")


# --- the public API routes dask inputs here ------------------------------------------------------

def test_public_api_routes_dask(client, data):
    x, y, w = data
    out = hotbin.histogram(_chunked(x, 5000), bins=10, weights=_chunked(w, 5000), deterministic=True)
    if not is_dask(out[0]):
        pytest.skip("hotbin.api does not route dask inputs to hotbin.exec.dask yet")
    ref, _ = hotbin.histogram(x, bins=10, weights=w, deterministic=True)
    assert _bits(out[0].compute()) == _bits(ref)
    H, _, _ = hotbin.histogram2d(_chunked(x, 5000), _chunked(y, 5000), bins=3)
    np.testing.assert_array_equal(H.compute(), np.histogram2d(x, y, 3)[0])
    ints = (y * 10).astype(np.int64)
    np.testing.assert_array_equal(hotbin.bincount(_chunked(ints, 5000)).compute(), np.bincount(ints))


def test_hist_object_from_dask(client, data):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    x, y, w = data
    ref = hotbin.hist(x, bins=14, weights=w, deterministic=True)
    h = hotbin.hist(_chunked(x, 4000), bins=14, weights=_chunked(w, 3000), deterministic=True)
    assert h.deterministic and _bits(h.values()) == _bits(ref.values())
    assert _bits(h.variances()) == _bits(ref.variances())
    ddf = dd.from_pandas(pd.DataFrame({"x": x, "y": y}), npartitions=3)
    h2 = hotbin.hist2d(ddf["x"], ddf["y"], bins=5)
    np.testing.assert_array_equal(h2.values(), np.histogram2d(x, y, 5)[0])
    assert [ax.label for ax in h2.axes] == ["x", "y"]
    # partials of two dask pieces, one scale: bitwise the whole
    bounds = (np.abs(w).max(), x.size)
    parts = [hotbin.hist(_chunked(x[s], 2500), 14, (-5, 5), _chunked(w[s], 2500), deterministic=True,
                         bounds=bounds) for s in (slice(0, 7000), slice(7000, None))]
    whole = hotbin.hist(x, 14, (-5, 5), w, deterministic=True, bounds=bounds)
    assert _bits(sum(parts).values()) == _bits(whole.values())


# --- heatmaps and images, computed on the cluster --------------------------------------------------

def test_heatmap_and_luminance(client, data):
    x, y, w = data
    ref = hotbin.heatmap(x, y, w, width=40, height=30, deterministic=True)
    hm = hd.heatmap(_chunked(x, 3000), _chunked(y, 3000), _chunked(w, 3000), width=40, height=30,
                    deterministic=True)
    assert (hm.x_range, hm.y_range, hm.dropped) == (ref.x_range, ref.y_range, ref.dropped)
    assert _bits(hm.counts) == _bits(ref.counts)
    xs, ys = x.copy(), y.copy()
    xs[::97], ys[::89] = np.nan, np.inf
    for kw in ({}, {"x_range": (-1, 1)}, {"weights": w}):
        ref = hotbin.heatmap(xs, ys, width=16, height=12, **kw)
        dkw = dict(kw, weights=_chunked(w, 2500)) if "weights" in kw else kw
        hm = hd.heatmap(_chunked(xs, 2500), _chunked(ys, 2500), width=16, height=12, split_every=2, **dkw)
        assert (hm.x_range, hm.y_range, hm.dropped) == (ref.x_range, ref.y_range, ref.dropped)
        assert hm.counts.dtype == ref.counts.dtype
        np.testing.assert_allclose(hm.counts, ref.counts, rtol=1e-9, atol=1e-9)
    img = (np.abs(x[:19_200]).reshape(4, 40, 40, 3) * 80).clip(0, 255).astype(np.uint8)
    lum = hd.luminance_histogram(_chunked(img, (3, 16, 25, 2)), bins=32)
    np.testing.assert_array_equal(lum.compute(), hotbin.luminance_histogram(img, bins=32))
    np.testing.assert_array_equal(hd.luminance_histogram(_chunked(img[0, :, :, 0], 15), bins=8).compute(),
                                  hotbin.luminance_histogram(img[0, :, :, 0], bins=8))
    with pytest.raises(ValueError, match="channels"):
        hd.luminance_histogram(_chunked(np.zeros((4, 4, 5), np.uint8), 2))
    with pytest.raises(TypeError, match="uint8"):
        hd.luminance_histogram(_chunked(np.zeros((4, 4), np.int32), 2))


# --- a worker dies mid-job ----------------------------------------------------------------------------

def _slow(block):
    time.sleep(0.1)
    return block


def test_worker_killed_mid_job(client, data):
    x, _, w = data
    ref, _ = hotbin.histogram(x, bins=20, range=(-4, 4), weights=w, deterministic=True)
    slow_x = _chunked(x, 500).map_blocks(_slow, dtype=x.dtype)  # 40 tasks of 100 ms
    h, _ = hd.histogram(slow_x, bins=20, range=(-4, 4), weights=_chunked(w, 500), deterministic=True,
                        split_every=4)
    future = client.compute(h)
    deadline = time.monotonic() + 30
    while not any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # partials now held by both workers
    assert not future.done()
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    os.kill(pids[victim], signal.SIGKILL)  # the nanny starts a fresh worker; lost partials rerun
    assert _bits(future.result(timeout=60)) == _bits(ref)
    client.wait_for_workers(2, timeout=30)


# --- CuPy chunks (GPU workers) ---------------------------------------------------------------

@pytest.mark.cuda
def test_cupy_chunks_merge_on_the_device(data):
    """CuPy-backed dask arrays: partials stay on the GPU and merge there, results come back as
    NumPy, equal to the in-memory results (local threaded scheduler: one GPU, no workers)."""
    cp = pytest.importorskip("cupy")
    from hotbin.backend import cuda

    if not cuda.available():
        pytest.skip("no CUDA device")
    import dask

    x, y, w = data
    dx, dy, dw = (da.from_array(cp.asarray(v), chunks=3_001) for v in (x, y, w))
    with dask.config.set(scheduler="threads"):
        hm = hotbin.heatmap(dx, dy, width=40, height=30)
        ref = hotbin.heatmap(x, y, width=40, height=30)
        assert isinstance(hm.counts, np.ndarray) and _bits(hm.counts) == _bits(ref.counts)
        assert hm.dropped == ref.dropped
        h = hd.histogram(dx, bins=25, range=(-3, 3), weights=dw, deterministic=True)[0].compute()
        assert isinstance(h, np.ndarray)
        assert _bits(h) == _bits(hotbin.histogram(x, 25, (-3, 3), weights=w, deterministic=True)[0])
        c = hd.histogram(dx, bins=25)[0].compute()
        np.testing.assert_array_equal(c, np.histogram(x, 25)[0])
        b = hd.bincount(da.from_array(cp.asarray((y * 10).astype(np.int64)), chunks=4_000)).compute()
        np.testing.assert_array_equal(b, np.bincount((y * 10).astype(np.int64)))
