"""``da.hotbin.histogram`` and ``hotbin.xarray.histogram``: NumPy's histogram of every kept
position, xhistogram's names and coordinates, lazy on dask, and an accessor that appears
without ``import hotbin`` importing xarray."""
import subprocess
import sys

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
hx = pytest.importorskip("hotbin.xarray")


@pytest.fixture
def temp(rng):
    """A named (time, y, x) DataArray with coordinates on two dims and attrs."""
    v = rng.normal(size=(4, 37, 3))
    v[1, 5, 2] = np.nan
    v[2, :3, 0] = 2.0  # on the top edge: in the last bin, which is closed
    return xr.DataArray(v, dims=("time", "y", "x"), name="temp", attrs={"units": "K"},
                        coords={"time": np.arange(4) * 10, "x": [1.5, 2.5, 3.5], "lat": ("y", np.arange(37.0))})


def _per_position(fn, *arrays, reduce_axes):
    """``fn`` of each kept position's values (the arrays' other axes), stacked: the oracle."""
    moved = [np.moveaxis(a, reduce_axes, range(-len(reduce_axes), 0)) for a in arrays]
    kept = moved[0].shape[:moved[0].ndim - len(reduce_axes)]
    out = [fn(*(m[i].ravel() for m in moved)) for i in np.ndindex(kept)]
    return np.array(out).reshape(kept + np.shape(out[0]))


def test_one_array_is_numpy_per_kept_position_with_xhistogram_names(temp):
    h = temp.hotbin.histogram(bins=6, range=(-2, 2), dim="y")
    want = _per_position(lambda v: np.histogram(v, 6, (-2, 2))[0], temp.values, reduce_axes=[1])
    assert h.name == "histogram_temp" and h.dims == ("time", "x", "temp_bin")
    assert h.dtype == np.int64
    np.testing.assert_array_equal(h.values, want)  # NaN not counted, 2.0 in the last bin
    edges = np.linspace(-2, 2, 7)
    np.testing.assert_array_equal(h["temp_bin"].values, (edges[:-1] + edges[1:]) / 2)
    assert h["temp_bin"].attrs == {"units": "K"}
    np.testing.assert_array_equal(h["time"].values, temp["time"].values)
    np.testing.assert_array_equal(h["x"].values, temp["x"].values)
    assert "lat" not in h.coords  # a coordinate of a reduced dim goes, as in xhistogram


def test_one_unnamed_array_gives_bin_and_histogram(temp):
    h = temp.rename(None).hotbin.histogram(bins=4, range=(-1, 1), dim="y")
    assert h.name == "histogram" and h.dims == ("time", "x", "bin")
    np.testing.assert_array_equal(h.values, temp.hotbin.histogram(bins=4, range=(-1, 1), dim="y").values)


def test_several_dims_none_and_edges(temp):
    edges = np.array([-3.0, -1.0, -0.2, 0.0, 0.5, 3.0])
    h = temp.hotbin.histogram(bins=edges, dim=["x", "y"])
    assert h.dims == ("time", "temp_bin")
    np.testing.assert_array_equal(h.values, _per_position(lambda v: np.histogram(v, edges)[0],
                                                          temp.values, reduce_axes=[1, 2]))
    every = temp.hotbin.histogram(bins=5, range=(-1, 1))
    assert every.dims == ("temp_bin",)
    np.testing.assert_array_equal(every.values, np.histogram(temp.values, 5, (-1, 1))[0])
    kept_all = temp.hotbin.histogram(bins=3, range=(-1, 1), dim=[])
    assert kept_all.dims == ("time", "y", "x", "temp_bin") and int(kept_all.sum()) == int(
        np.sum((temp.values >= -1) & (temp.values <= 1)))


def test_bins_from_the_data_are_numpys_over_all_positions(temp):
    clean = temp.fillna(0.25)
    h = clean.hotbin.histogram(bins=7, dim="time")
    edges = np.histogram_bin_edges(clean.values, 7)
    np.testing.assert_array_equal(h["temp_bin"].values, (edges[:-1] + edges[1:]) / 2)
    np.testing.assert_array_equal(h.values, _per_position(lambda v: np.histogram(v, edges)[0],
                                                          clean.values, reduce_axes=[0]))


def test_weights_and_density_per_position(temp, rng):
    w = xr.DataArray(rng.uniform(0, 2, temp.shape), dims=temp.dims, coords=temp.coords)
    h = temp.hotbin.histogram(bins=5, range=(-2, 2), dim="y", weights=w)
    np.testing.assert_allclose(h.values, _per_position(lambda v, ww: np.histogram(v, 5, (-2, 2), weights=ww)[0],
                                                       temp.values, w.values, reduce_axes=[1]), rtol=1e-12)
    d = temp.hotbin.histogram(bins=5, range=(-2, 2), dim="y", density=True)
    np.testing.assert_allclose(d.values, _per_position(lambda v: np.histogram(v, 5, (-2, 2), density=True)[0],
                                                       temp.values, reduce_axes=[1]), rtol=1e-12)
    empty = temp.hotbin.histogram(bins=5, range=(50, 60), dim="y", density=True)
    assert np.isnan(empty.values).all()  # nothing to normalize: NaN, as NumPy and xhistogram


def test_two_arrays_are_numpys_histogram2d_per_position(temp, rng):
    sal = xr.DataArray(rng.uniform(30, 36, temp.shape[:2]), dims=("time", "y"), name="sal")
    h = hx.histogram(temp, sal, bins=[4, 3], range=[(-2, 2), (30, 36)], dim="y")
    assert h.name == "histogram_temp_sal" and h.dims == ("time", "x", "temp_bin", "sal_bin")
    s = np.broadcast_to(sal.values[:, :, None], temp.shape)  # sal broadcast over x
    want = _per_position(lambda a, b: np.histogram2d(a, b, [4, 3], [(-2, 2), (30, 36)])[0],
                         temp.values, s, reduce_axes=[1])
    np.testing.assert_array_equal(h.values, want)
    np.testing.assert_allclose(h["sal_bin"].values, [31, 33, 35])
    same = temp.hotbin.histogram(sal, bins=[4, 3], range=[(-2, 2), (30, 36)], dim="y")
    xr.testing.assert_identical(same, h)


def test_dask_is_lazy_and_gives_the_same_numbers(temp, rng):
    dask = pytest.importorskip("dask")
    from dask.callbacks import Callback

    w = xr.DataArray(rng.uniform(0, 2, temp.shape), dims=temp.dims)
    lazy_t, lazy_w = temp.chunk({"time": 3, "y": 10}), w.chunk({"y": 15, "x": 2})
    computed = []
    with Callback(start=lambda dsk: computed.append(1)):
        h = lazy_t.hotbin.histogram(bins=5, range=(-2, 2), dim=["y"], weights=lazy_w)
        c = lazy_t.hotbin.histogram(bins=np.linspace(-2, 2, 6), dim=["y", "time"], density=True)
    assert computed == [] and dask.is_dask_collection(h.data) and dask.is_dask_collection(c.data)
    xr.testing.assert_allclose(h.compute(), temp.hotbin.histogram(bins=5, range=(-2, 2), dim="y", weights=w))
    xr.testing.assert_identical(c.compute(), temp.hotbin.histogram(bins=np.linspace(-2, 2, 6),
                                                                   dim=["y", "time"], density=True))
    with pytest.raises(ValueError, match="range"):
        lazy_t.hotbin.histogram(bins=5, dim="y")  # the edges would need the data


def test_bad_arguments_name_themselves(temp):
    with pytest.raises(ValueError, match="dim.*'depth'"):
        temp.hotbin.histogram(bins=3, range=(0, 1), dim=["y", "depth"])
    with pytest.raises(ValueError, match=r"args\[1\].*name"):
        temp.hotbin.histogram(temp.rename(None), bins=3, range=(0, 1))
    with pytest.raises(ValueError, match=r"args.*different names"):
        temp.hotbin.histogram(temp, bins=3, range=(0, 1))
    with pytest.raises(TypeError, match="weights"):
        temp.hotbin.histogram(bins=3, range=(0, 1), weights=np.ones(temp.shape))
    with pytest.raises(ValueError, match="bins"):
        temp.hotbin.histogram(bins=0, range=(0, 1))


def test_same_as_xhistogram(temp, rng):
    xhistogram = pytest.importorskip("xhistogram.xarray")
    sal = xr.DataArray(rng.uniform(30, 36, temp.shape), dims=temp.dims, coords=temp.coords, name="sal")
    t = temp.fillna(0.0)
    for args, kw in [((t,), dict(bins=np.linspace(-2, 2, 9), dim=["y"])),
                     ((t,), dict(bins=np.linspace(-3, 3, 5), dim=["time", "x"], density=True)),
                     ((t, sal), dict(bins=[np.linspace(-2, 2, 5), np.linspace(30, 36, 4)], dim=["y"]))]:
        want = xhistogram.histogram(*args, **kw)
        got = hx.histogram(*args, **kw)
        xr.testing.assert_allclose(got, want.astype(got.dtype))
        assert got.name == want.name and got.dims == want.dims and set(got.coords) == set(want.coords)


def _python(code):
    r = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and not r.stderr, r.stderr
    return r.stdout.strip()


def test_accessor_without_importing_xarray_whichever_comes_first():
    use = ("import numpy as np, xarray as xr; "
           "print(xr.DataArray(np.arange(6.0), dims='t', name='v').hotbin.histogram(bins=3).values.tolist())")
    assert _python("import sys, hotbin; print('xarray' in sys.modules)") == "False"
    assert _python("import xarray, hotbin.xarray; " + use) == "[2, 2, 2]"
    # the hook: hotbin first, xarray after (hotbin/__init__ installs it; here by hand too)
    assert _python("import sys, hotbin; from hotbin.xr import hook; hook.install(); "
                   "assert 'xarray' not in sys.modules; " + use) == "[2, 2, 2]"
    assert _python("import xarray, hotbin; from hotbin.xr import hook; hook.install(); hook.install(); "
                   + use) == "[2, 2, 2]"
    # xarray blocked (a machine without it): no accessor, no warning, no error
    assert _python("import sys; sys.modules['xarray'] = None; import hotbin; from hotbin.xr import hook; "
                   "hook.install(); print('ok')") == "ok"
    wired = _python("import sys, hotbin; print('hotbin.xr.hook' in sys.modules)") == "True"
    if not wired:
        pytest.skip("hotbin/__init__.py does not install hotbin.xr.hook")
    assert _python("import hotbin; " + use) == "[2, 2, 2]"
    assert _python("import xarray, hotbin; " + use) == "[2, 2, 2]"


def test_float32_and_integer_values_on_the_edges(rng):
    v = (rng.integers(0, 40, (6, 300)) / 40).astype(np.float32)  # many values on float32 edges
    a = xr.DataArray(v, dims=("p", "t"), name="v")
    for kw in [dict(bins=13, range=(0.1, 0.9)), dict(bins=np.linspace(0.1, 0.9, 14, dtype=np.float32))]:
        h = a.hotbin.histogram(dim="t", **kw)
        np.testing.assert_array_equal(h.values, [np.histogram(r, **kw)[0] for r in v])
    i = rng.integers(-5, 5, (7, 90))
    h = xr.DataArray(i, dims=("p", "t"), name="i").hotbin.histogram(bins=4, dim="t")
    e = np.histogram_bin_edges(i, 4)
    np.testing.assert_array_equal(h.values, [np.histogram(r, e)[0] for r in i])
