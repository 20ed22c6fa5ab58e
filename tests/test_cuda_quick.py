"""The common count planned once (backend/cuda/quick.py) against the cpu backend, bit for bit,
the public call's path for it (exec.local.device_histogram), the results zeroed in advance, and the
device copies of cached edges (arrays.shared_copy) that the public call returns.

Skips cleanly without CuPy or without a CUDA device.
"""
import threading

import numpy as np
import pytest

import hotbin
from hotbin import backend as backends
from hotbin.core import reductions
from hotbin.backend import cpu as cpub
from hotbin.core.binning import histogram_rule
from hotbin.exec.local import device_histogram

cp = pytest.importorskip("cupy")
from hotbin.backend import cuda as cb  # noqa: E402
from hotbin.backend.cuda import quick, tuning  # noqa: E402

if not cb.available():
    pytest.skip("cuda backend: no CUDA device", allow_module_level=True)

pytestmark = pytest.mark.cuda


def _values(dtype, rng, n=40001):
    """Random values, every edge of the rules below and their neighbours, NaN and infinities."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        e = np.concatenate([np.linspace(-3, 3, 8), np.linspace(0, 256, 257)]).astype(dt)
        special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dt)
        v = np.concatenate([rng.normal(0, 3, n).astype(dt), rng.uniform(0, 256, n).astype(dt), e,
                            np.nextafter(e, dt.type(np.inf)), np.nextafter(e, dt.type(-np.inf)), special])
    else:
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -300), min(info.max, 300), 2 * n, endpoint=True).astype(dt)
        v = np.concatenate([v, np.array([info.min, info.max, 0, 1], dt)])
    rng.shuffle(v)
    return v


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.uint64, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", ["1-D", "unaligned", "2-D"])
@pytest.mark.parametrize("override", [{}, {"layout": "windows"}, {"shortcut": False}], ids=str)
def test_quick_counts_equal_the_cpu_backend(dtype, shape, override, rng):
    """One launch from a plan kept per rule: the cpu backend's counts, int64, the bins' length;
    taken for whole C-contiguous device arrays of the dtypes the kernels read as they are."""
    v = _values(dtype, rng)
    a = cp.asarray(v)
    if shape == "unaligned":
        a = a[3:]
    elif shape == "2-D":
        a = a[:a.size // 4 * 4].reshape(4, -1)
    with tuning.forced(**override):
        for bins, r in [(7, (-3, 3)), (256, (0, 256)), (100, (0.5, 99.5)), (3, (0, 1))]:
            rule = histogram_rule(a, bins, r)
            got = quick.counts(a, rule, tuning.current())
            want = cpub.histogram(a.get().reshape(-1), rule, None, reductions.COUNT)
            np.testing.assert_array_equal(cb.histogram(a, rule).get(), want, err_msg=f"{bins} over {r}")
            if a.dtype.itemsize == 1 and override.get("layout") == "windows":
                assert got is None  # the value counts are folded by a second kernel
                continue
            assert got is not None, f"{bins} over {r}: not taken"
            assert got.dtype == cp.int64 and got.shape == (bins,)
            np.testing.assert_array_equal(got.get(), want, err_msg=f"{bins} over {r}")


def test_quick_counts_leave_the_rest_to_the_general_path(rng):
    """Host data, strided or converted dtypes, 16-bit values (two kernels) and empty arrays
    answer None; the general path counts them."""
    v = rng.integers(0, 1000, 10000)
    rule = histogram_rule(v, 10, (0, 1000))
    tune = tuning.current()
    d = cp.asarray(v)
    assert quick.counts(v, rule, tune) is None
    assert quick.counts(d[::2], rule, tune) is None
    assert quick.counts(d.astype(cp.uint16), rule, tune) is None
    assert quick.counts(d.astype(cp.float16), rule, tune) is None
    assert quick.counts(d[:0], rule, tune) is None
    np.testing.assert_array_equal(cb.histogram(d[::2], rule).get(), np.histogram(v[::2], 10, (0, 1000))[0])


def test_edges_are_fresh_copies_of_kept_uploads(rng):
    """The edges of a cached rule (read-only, a view for integer data) and edges the caller
    passed come back as new device arrays with NumPy's values, also after the caller changes
    them: device copies are found by identity or by contents, never by a stale key."""
    v = rng.integers(0, 256, 100000).astype(np.uint8)
    a = cp.asarray(v)
    for _ in range(2):
        h, e = hotbin.histogram(a, 256, (0, 256))
        ref_h, ref_e = np.histogram(v, 256, (0, 256))
        assert isinstance(e, cp.ndarray) and e.dtype == ref_e.dtype
        np.testing.assert_array_equal(e.get(), ref_e)
        np.testing.assert_array_equal(h.get(), ref_h)
        e[:] = -1  # the caller's copy: the next call's edges are unchanged
    edges = np.array([0.0, 10, 100, 256])
    for k in (50.0, 60.0):
        h, e = hotbin.histogram(a, edges)
        np.testing.assert_array_equal(e.get(), edges)
        np.testing.assert_array_equal(h.get(), np.histogram(v, edges)[0])
        edges[1] = k


@pytest.mark.parametrize("dtype,bins,r", [(np.uint16, 4096, (0, 65536)), (np.uint16, 65536, (0, 65536)),
                                          (np.int16, 4096, (-32768, 32768)), (np.int16, 512, (0, 32768))])
@pytest.mark.parametrize("shape", ["1-D", "unaligned", "2-D"])
def test_quick_shift_counts(dtype, bins, r, shape, rng):
    """16-bit values whose bins are a shift of the value: one launch of hist_shift, the cpu
    backend's counts."""
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, 300001, endpoint=True).astype(dtype)
    a = cp.asarray(v)
    if shape == "unaligned":
        a = a[3:]
    elif shape == "2-D":
        a = a[:a.size // 4 * 4].reshape(4, -1)
    rule = histogram_rule(a, bins, r)
    got = quick.counts(a, rule, tuning.current())
    assert got is not None and got.dtype == cp.int64 and got.shape == (bins,)
    want = cpub.histogram(a.get().reshape(-1), rule, None, reductions.COUNT)
    np.testing.assert_array_equal(got.get(), want)
    with tuning.forced(layout="windows"):  # another layout forced: the value counts, not hist_shift
        assert quick.counts(a, rule, tuning.current()) is None
        np.testing.assert_array_equal(cb.histogram(a, rule).get(), want)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.uint64,
                                   np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_device_histogram_equal_numpy(dtype, rng):
    """The common call on a CuPy array at once (exec.local.device_histogram, which the public call takes
    first): NumPy's counts and edges, value for value and dtype for dtype, each a new array."""
    v = _values(dtype, rng)
    a = cp.asarray(v)
    rules = [(7, (-3, 3)), (256, (0, 256)), (100, (0.5, 99.5)), (3, (0, 1)), (4, (2, 2)), (5, (-0.0, 0.0))]
    for bins, r in rules + ([(4096, (0, 65536))] if dtype != np.float16 else []):
        found = device_histogram(None, a, bins, r)
        assert found is not None, f"{bins} over {r}: not taken"
        ref_h, ref_e = np.histogram(v, bins, r)
        for h, e in (found, hotbin.histogram(a, bins, r), hotbin.histogram(a[::1], bins, r, backend="cuda")):
            assert isinstance(h, cp.ndarray) and h.dtype == cp.int64 and e.dtype == ref_e.dtype
            np.testing.assert_array_equal(h.get(), ref_h, err_msg=f"{bins} over {r}")
            np.testing.assert_array_equal(e.get(), ref_e, err_msg=f"{bins} over {r}")
        h2, _ = device_histogram("cuda", a[::2], bins, r)  # strided: the general cuda path
        np.testing.assert_array_equal(h2.get(), np.histogram(v[::2], bins, r)[0])


@pytest.mark.parametrize("wdtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_device_histogram_float_sums(dtype, wdtype, rng):
    """Float weights summed in float64 at once (exec.local.device_histogram's SUM_F64):
    NumPy's sums and edges, float64 CuPy results. Weights that are multiples of 1/8 below 2^20 sum
    exactly in any order, so the atomics' order cannot hide a wrong bin; NaN weights make their
    bin NaN, as in NumPy. Other weights (integers, bool, float16, complex, another shape, host
    arrays) and ``density`` take the general path, with its results."""
    v = _values(dtype, rng)
    w = (rng.integers(-2 ** 23, 2 ** 23, v.size) / 8).astype(wdtype)
    w[::997] = np.nan
    a, dw = cp.asarray(v), cp.asarray(w)
    for bins, r in [(7, (-3, 3)), (256, (0, 256)), (100, (0.5, 99.5))]:
        found = device_histogram(None, a, bins, r, dw)
        assert found is not None, f"{bins} over {r}: not taken"
        ref_h, ref_e = np.histogram(v, bins, r, weights=w.astype(np.float64))
        for h, e in (found, hotbin.histogram(a, bins, r, weights=dw)):
            assert isinstance(h, cp.ndarray) and h.dtype == cp.float64 and e.dtype == ref_e.dtype
            np.testing.assert_array_equal(h.get(), ref_h, err_msg=f"{bins} over {r}")
            np.testing.assert_array_equal(e.get(), ref_e, err_msg=f"{bins} over {r}")
    finite = np.nan_to_num(w).astype(np.float64)
    df = cp.asarray(finite)
    general = [df.astype(cp.int32), df > 0, df.astype(cp.float16), df.astype(cp.complex128), dw[:-1], w]
    for other in general:
        assert device_histogram(None, a, 256, (0, 256), other) is None, other.dtype
    for other in (general[0], general[3]):  # (NumPy sums bool and float16 weights in their own dtype)
        h, _ = hotbin.histogram(a, 256, (0, 256), weights=other)
        ref = np.histogram(v, 256, (0, 256), weights=other.get())[0]
        np.testing.assert_allclose(h.get(), ref, rtol=1e-12, err_msg=str(other.dtype))
    h, _ = hotbin.histogram(a, 256, (0, 256), weights=df, density=True)
    np.testing.assert_allclose(h.get(), np.histogram(v, 256, (0, 256), weights=finite, density=True)[0],
                               rtol=1e-12)


def test_device_histogram_leave_the_rest_to_the_general_path(rng, monkeypatch):
    """Other inputs, bins and ranges, other backends, and int64 ranges that NumPy tests exactly
    answer None: the general path answers them (bool with NumPy's warning)."""
    v = rng.integers(0, 100, 1000)
    a = cp.asarray(v)
    none = [(v, 10, (0, 100), None), (a, 10, (0, 100), "cpu"), (a, 10, (0, 100), "no-such-backend"),
            (a > 50, 2, (0, 2), None), (a, [0, 10, 100], None, None), (a, 10, None, None),
            (a, 10, (np.float64(0), 100), None), (a, 10, (100, 0), None), (a, 10, (0, float("nan")), None),
            (a, True, (0, 100), None), (a, 0, (0, 100), None), (a, 10, (0, 2 ** 62), None),
            (a.astype(cp.complex64), 10, (0, 100), None)]
    for x, bins, r, be in none:
        assert device_histogram(be, x, bins, r) is None, (bins, r, be)
    monkeypatch.setenv(backends.ENV, "cpu")
    assert device_histogram(None, a, 10, (0, 100)) is None
    monkeypatch.delenv(backends.ENV)
    assert device_histogram(None, a, 10, (0, 100)) is not None
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        h, _ = hotbin.histogram(a > 50, 2, (0, 2))
    np.testing.assert_array_equal(h.get(), np.histogram((v > 50).astype(np.uint8), 2, (0, 2))[0])
    big = np.array([0, 2 ** 62, 2 ** 62 + 1, 2 ** 62 + 600], np.int64)
    h, e = hotbin.histogram(cp.asarray(big), 10, (0, 2 ** 62))
    ref_h, ref_e = np.histogram(big, 10, (0, 2 ** 62))
    np.testing.assert_array_equal(h.get(), ref_h)
    np.testing.assert_array_equal(e.get(), ref_e)


@pytest.mark.parametrize("spare", [True, False])
def test_results_zeroed_in_advance_are_fresh(spare, rng, monkeypatch):
    """Each call's result is its own zeroed array (quick.SPARE: zeroed after the launch before),
    also after the caller writes into an earlier one, on another stream, in another thread."""
    monkeypatch.setattr(quick, "SPARE", spare)
    v = rng.integers(0, 256, 1 << 20).astype(np.uint8)
    a = cp.asarray(v)
    ref = np.histogram(v, 256, (0, 256))[0]
    kept = []
    for _ in range(4):
        h, _ = hotbin.histogram(a, 256, (0, 256))
        np.testing.assert_array_equal(h.get(), ref)
        assert all(h.data.ptr != k.data.ptr for k in kept)
        h[:] = 7  # the caller's result: the next one is zeroed regardless
        kept.append(h)
    for s in (cp.cuda.Stream(non_blocking=True), cp.cuda.Stream()):
        with s:
            hs = [hotbin.histogram(a, 256, (0, 256))[0] for _ in range(3)]
        s.synchronize()
        for h in hs:
            np.testing.assert_array_equal(h.get(), ref)
    errors = []

    def count():
        try:
            with cp.cuda.Stream(non_blocking=True) as s:
                for _ in range(20):
                    h, _ = hotbin.histogram(a, 256, (0, 256))
                    s.synchronize()
                    np.testing.assert_array_equal(h.get(), ref)
        except Exception as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=count) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_no_spare_while_capturing(rng):
    """A stream being captured into a graph neither takes nor leaves a result zeroed outside the
    graph (quick._here): where this CuPy cannot capture these calls, nothing to check."""
    v = rng.integers(0, 256, 4096).astype(np.uint8)
    a = cp.asarray(v)
    hotbin.histogram(a, 256, (0, 256))  # planned, a spare left on the null stream
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        hotbin.histogram(a, 256, (0, 256))  # a spare on s
        try:
            s.begin_capture()
        except Exception:
            pytest.skip("no stream capture here")
        try:
            assert quick._here(cp) is None
            try:
                h, _ = hotbin.histogram(a, 256, (0, 256))
            except Exception:
                h = None  # this CuPy's pool cannot allocate while capturing
        finally:
            try:
                g = s.end_capture()
            except Exception:
                g = None
        if h is not None and g is not None:
            for _ in range(2):  # each replay zeroes the result it counts into
                g.launch(s)
            s.synchronize()
            np.testing.assert_array_equal(h.get(), np.histogram(v, 256, (0, 256))[0])
