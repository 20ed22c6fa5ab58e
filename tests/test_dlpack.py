"""Arrays of any library through DLPack: host arrays are read as NumPy without a copy, CUDA arrays
as CuPy without a copy, other devices are refused naming the device; every public function
agrees with NumPy on them."""
import numpy as np
import pytest

import hotbin
from hotbin.backend import load
from hotbin.core.arrays import adapt, dlpack_device, on_gpu, restore, to_host


class DLPackOnly:
    """An array that offers nothing but DLPack (no ``__array__``, no dtype, no shape)."""

    def __init__(self, a, device=None):
        self._a, self._device = a, device

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device or self._a.__dlpack_device__()


CPU = load("cpu").module

RNG = np.random.default_rng(7)
VALUES = RNG.normal(size=1000)
LABELS = RNG.integers(0, 20, size=1000)
WEIGHTS = RNG.integers(-64, 64, size=1000) / 8  # sums exact in any order


def test_host_dlpack_array_is_read_without_a_copy():
    a = np.arange(12.0)
    out = adapt(CPU, DLPackOnly(a))
    assert type(out) is np.ndarray and np.shares_memory(out, a)
    np.testing.assert_array_equal(out, a)


def test_strided_dlpack_array_keeps_its_strides_and_memory():
    a = np.arange(40.0).reshape(5, 8)
    view = a[::2, 1::3]
    out = adapt(CPU, DLPackOnly(view))
    assert np.shares_memory(out, a) and out.strides == view.strides
    np.testing.assert_array_equal(out, view)
    np.testing.assert_array_equal(hotbin.histogram(DLPackOnly(view), 5)[0], np.histogram(view, 5)[0])


def test_array_api_strict_arrays_are_read_without_a_copy():
    xp = pytest.importorskip("array_api_strict")
    x = xp.asarray(VALUES)
    out = adapt(CPU, x)
    assert type(out) is np.ndarray and np.shares_memory(out, np.from_dlpack(x))


@pytest.mark.parametrize("wrap", ["dlpack_only", "array_api_strict"])
def test_public_functions_agree_with_numpy(wrap):
    if wrap == "array_api_strict":
        xp = pytest.importorskip("array_api_strict")
        w = xp.asarray
    else:
        w = DLPackOnly
    x, y, lab = VALUES, WEIGHTS, LABELS
    for got, want in [(hotbin.histogram(w(x), 16), np.histogram(x, 16)),
                      (hotbin.histogram(w(x), 16, weights=w(y)), np.histogram(x, 16, weights=y)),
                      (hotbin.histogram2d(w(x), w(y), 8), np.histogram2d(x, y, 8))]:
        for g, e in zip(got, want):
            assert type(g) is np.ndarray  # results of other libraries come back as NumPy
            np.testing.assert_array_equal(g, e)
    np.testing.assert_array_equal(hotbin.bincount(w(lab)), np.bincount(lab))
    np.testing.assert_array_equal(hotbin.bincount(w(lab), weights=w(y)), np.bincount(lab, weights=y))
    np.testing.assert_array_equal(hotbin.cumsum(w(lab)), np.cumsum(lab))
    hm = hotbin.heatmap(w(x), w(y), width=6, height=4, x_range=(-2, 2), y_range=(-8, 8))
    H, _, _ = np.histogram2d(y, x, bins=(4, 6), range=((-8, 8), (-2, 2)))
    inside = (x >= -2) & (x < 2) & (y >= -8) & (y < 8)
    np.testing.assert_array_equal(hm.counts, H)
    assert hm.counts.sum() + hm.dropped == x.size and hm.dropped == (~inside).sum()


def test_big_endian_numpy_and_its_dlpack_export():
    a = VALUES.astype(">f8")
    want = np.histogram(VALUES, 10)
    for got, exp in zip(hotbin.histogram(a, 10), want):  # NumPy's own byte order is read as is
        np.testing.assert_array_equal(got, exp)
    with pytest.raises(TypeError, match="DLPackOnly.*DLPack cannot share"):
        hotbin.histogram(DLPackOnly(a), 10)  # DLPack carries native byte order only


def test_what_dlpack_cannot_carry_goes_through_numpy():
    pa = pytest.importorskip("pyarrow")
    got = hotbin.histogram(pa.array([1.0, None, 3.0, 2.0]), 2, (0, 4))  # nulls: no DLPack, NaN through __array__
    want = np.histogram(np.array([1.0, 3.0, 2.0]), 2, (0, 4))
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g, e)
    np.testing.assert_array_equal(hotbin.bincount(pa.array([True, False, True])), [1, 2])  # bit-packed


@pytest.mark.parametrize("device, name", [((10, 0), "ROCM"), ((8, 1), "Metal"), ((99, 0), "device type 99")])
def test_other_devices_are_refused_naming_the_device(device, name):
    fake = DLPackOnly(VALUES, device=device)
    assert dlpack_device(fake) == device and not on_gpu(fake)
    with pytest.raises(TypeError, match=f"^a: a DLPackOnly on a {name} device"):
        hotbin.histogram(fake, 10)
    with pytest.raises(TypeError, match=f"on a {name} device"):
        hotbin.cumsum(fake)


def test_cuda_dlpack_arrays_count_as_device_arrays():
    fake = DLPackOnly(VALUES, device=(2, 0))
    assert on_gpu(fake) and on_gpu(DLPackOnly(VALUES, device=(13, 0)))
    assert not on_gpu(DLPackOnly(VALUES)) and not on_gpu(VALUES)


def test_restore_gives_numpy_for_other_host_libraries():
    a = np.arange(5)
    assert restore(a, DLPackOnly(a)) is a
    assert to_host(DLPackOnly(a)) is not None and np.shares_memory(to_host(DLPackOnly(a)), a)


# --- CUDA (the lead runs these on the H200) -------------------------------------------------------

@pytest.mark.cuda
def test_cupy_own_dlpack_round_trip_without_a_copy():
    cp = pytest.importorskip("cupy")
    cuda = load("cuda").module
    d = cp.asarray(VALUES)[::3]  # strided, on the device
    wrapped = DLPackOnly(d)  # no CuPy type, no __cuda_array_interface__: DLPack only
    assert on_gpu(wrapped)
    out = adapt(cuda, wrapped)
    assert type(out) is cp.ndarray and out.data.ptr == d.data.ptr and out.strides == d.strides
    back = cp.from_dlpack(out)
    assert back.data.ptr == d.data.ptr
    host = to_host(wrapped)
    np.testing.assert_array_equal(host, VALUES[::3])


@pytest.mark.cuda
def test_cuda_dlpack_arrays_through_public_functions():
    cp = pytest.importorskip("cupy")
    x, y, lab = (cp.asarray(v) for v in (VALUES, VALUES[::-1] * 2, LABELS))
    hist, edges = hotbin.histogram(DLPackOnly(x), 16)
    assert type(hist) is cp.ndarray  # results of a CUDA array stay on the device, as CuPy
    np.testing.assert_array_equal(hist.get(), np.histogram(VALUES, 16)[0])
    np.testing.assert_array_equal(edges.get(), np.histogram(VALUES, 16)[1])
    H = hotbin.histogram2d(DLPackOnly(x), DLPackOnly(y), 8)[0]
    np.testing.assert_array_equal(H.get(), np.histogram2d(VALUES, VALUES[::-1] * 2, 8)[0])
    np.testing.assert_array_equal(hotbin.bincount(DLPackOnly(lab)).get(), np.bincount(LABELS))
    np.testing.assert_array_equal(hotbin.cumsum(DLPackOnly(lab)).get(), np.cumsum(LABELS))
    # a CUDA array on the cpu backend is counted on the host; its results come back on its device
    hist = hotbin.histogram(DLPackOnly(x), 16, backend="cpu")[0]
    assert type(hist) is cp.ndarray
    np.testing.assert_array_equal(hist.get(), np.histogram(VALUES, 16)[0])


@pytest.mark.cuda
def test_torch_stays_zero_copy_on_both_devices():
    torch = pytest.importorskip("torch")
    pytest.importorskip("cupy")
    cuda = load("cuda").module
    t = torch.arange(10.0, device="cuda", requires_grad=True)
    assert adapt(cuda, t).data.ptr == t.data_ptr()
    c = torch.arange(10.0, requires_grad=True)
    assert adapt(CPU, c).ctypes.data == c.data_ptr()
    hist, _ = hotbin.histogram(t, 5)
    assert isinstance(hist, torch.Tensor) and hist.is_cuda
    np.testing.assert_array_equal(hist.cpu().numpy(), np.histogram(np.arange(10.0), 5)[0])
