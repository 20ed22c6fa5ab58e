"""GIS outputs as GIS tools read them, and Web Mercator as PROJ computes it.

The projection is checked point by point against pyproj (PROJ), the CRS text against
EPSG:3857 as PROJ knows it, and the GeoTIFF / NetCDF files are read back by rasterio
(GDAL), rioxarray, xarray and netCDF4: CRS, transform, nodata, dtype and values.
"""
from dataclasses import replace

import numpy as np
import pytest

import hotbin
from hotbin.cli import geo
from hotbin.heatmap import Heatmap
from hotbin.render import project
from hotbin.render.project import CRS, MAX_LAT, WKT, inverse, mercator

pyproj = pytest.importorskip("pyproj")


def _grid():
    """Longitudes and latitudes over the whole map, its edges and the equator included."""
    lon = np.r_[np.linspace(-180, 180, 73), -179.999999, 1e-9, 179.999999]
    lat = np.r_[np.linspace(-85.05, 85.05, 69), -MAX_LAT + 1e-9, MAX_LAT - 1e-9, 1e-12, -1e-12]
    return [a.ravel() for a in np.meshgrid(lon, lat)]


def test_mercator_is_projs_web_mercator():
    lon, lat = _grid()
    want_x, want_y = pyproj.Transformer.from_crs(4326, 3857, always_xy=True).transform(lon, lat)
    x, y = mercator(lon, lat)
    np.testing.assert_allclose(x, want_x, rtol=1e-9, atol=1e-3)  # 1e-9 relative, or 1 mm
    np.testing.assert_allclose(y, want_y, rtol=1e-9, atol=1e-3)


def test_inverse_is_projs_inverse():
    x, y = pyproj.Transformer.from_crs(4326, 3857, always_xy=True).transform(*_grid())
    want_lon, want_lat = pyproj.Transformer.from_crs(3857, 4326, always_xy=True).transform(x, y)
    lon, lat = inverse(np.asarray(x), np.asarray(y))
    np.testing.assert_allclose(lon, want_lon, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(lat, want_lat, rtol=1e-9, atol=1e-9)


def test_wkt_is_projs_and_the_fallback_is_the_same_crs(monkeypatch):
    epsg = pyproj.CRS.from_epsg(3857)
    assert project.wkt(CRS) == epsg.to_wkt()
    assert pyproj.CRS.from_wkt(WKT[CRS]) == epsg  # the text used without pyproj
    monkeypatch.setattr(project, "_pyproj", lambda: None)
    assert project.wkt(CRS) == WKT[CRS]
    assert project.grid_mapping(CRS)["grid_mapping_name"] == "mercator"
    with pytest.raises(ModuleNotFoundError, match=r"hotbin\[geo\]"):
        project.wkt("EPSG:32618")


def test_cf_grid_mapping_reads_back_as_the_crs():
    for crs, name in [(CRS, "mercator"), ("EPSG:4326", "latitude_longitude")]:
        gm = project.grid_mapping(crs)
        assert gm["grid_mapping_name"] == name
        assert pyproj.CRS.from_cf(gm) == pyproj.CRS.from_user_input(crs)
        assert pyproj.CRS.from_wkt(gm["spatial_ref"]) == pyproj.CRS.from_user_input(crs)


# --- GeoTIFF ---------------------------------------------------------------------------------

def _counts(top, shape=(3, 4)):
    """A count heatmap whose largest cell holds ``top`` points."""
    c = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    c[-1, -1] = top
    return Heatmap(counts=c, dropped=0, x_range=(-1e6, 2e6), y_range=(4e6, 5e6), crs=CRS)


@pytest.mark.parametrize("top, dtype", [(0, "uint8"), (254, "uint8"), (255, "uint16"),
                                        (65534, "uint16"), (65535, "uint32"), (2**32 - 1, "uint64"),
                                        (2**53 - 1, "uint64")])
def test_geotiff_counts_in_the_smallest_unsigned_type(tmp_path, top, dtype):
    rasterio = pytest.importorskip("rasterio")
    hm = _counts(top)
    geo.write_geotiff(tmp_path / "c.tif", hm)
    with rasterio.open(tmp_path / "c.tif") as r:
        assert r.dtypes == (dtype,)
        assert r.nodata == (np.iinfo(dtype).max if dtype != "uint64" else 2**53) > top
        assert r.nodata > 0  # 0 is a count, never a gap
        np.testing.assert_array_equal(r.read(1), hm.counts[::-1])  # north up


@pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # inside rioxarray
def test_geotiff_by_rioxarray_crs_transform_nodata_values(tmp_path, rng):
    rioxarray = pytest.importorskip("rioxarray")
    from rasterio.transform import Affine

    lon, lat = rng.uniform(-74.1, -73.8, 5000), rng.uniform(40.6, 40.9, 5000)
    kw = dict(width=16, height=12, project="mercator", x_range=(-74.1, -73.8), y_range=(40.6, 40.9))
    for hm, dtype, nodata in [
            (hotbin.heatmap(lon, lat, **kw), "uint8", 255),
            (hotbin.heatmap(lon, lat, np.round(rng.normal(12, 8, 5000), 2), agg="mean", **kw), "float64", None),
            (hotbin.heatmap(lon, lat, rng.integers(0, 9, 5000) / 4, agg="max", **kw), "float32", None)]:
        path = tmp_path / f"{hm.agg}.tif"
        geo.write_geotiff(path, hm)
        with rioxarray.open_rasterio(path) as da:
            assert da.rio.crs.to_epsg() == 3857 and da.dtype == dtype
            (x0, x1), (y0, y1) = hm.x_range, hm.y_range
            cell = ((x1 - x0) / hm.width, (y1 - y0) / hm.height)
            assert da.rio.transform() == Affine(cell[0], 0, x0, 0, -cell[1], y1)  # north up
            assert da.rio.nodata == nodata if nodata is not None else np.isnan(da.rio.nodata)
            want = hm.counts if hm.agg == "count" else hm.values
            np.testing.assert_array_equal(da.values[0], want[::-1])  # NaN where empty, equal_nan
            np.testing.assert_allclose(da.x.values, (hm.x_edges[:-1] + hm.x_edges[1:]) / 2, rtol=1e-12)


def test_float_bands_float32_only_when_exact():
    assert geo.band_type(np.array([0.5, np.nan, 1e30 * 0 + 3.25]))[0] == np.float32
    assert geo.band_type(np.array([0.1]))[0] == np.float64
    assert geo.band_type(np.array([1e300]))[0] == np.float64  # float32 would make it inf
    assert geo.band_type(np.array([2.0**24 + 1]))[0] == np.float64
    assert geo.band_type(np.array([2**53])) == (np.uint64, None)  # no value left for nodata
    with pytest.raises(ValueError, match="data"):
        geo.band_type(np.array([-1]))


# --- NetCDF ----------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # inside rioxarray
def test_netcdf_one_variable_per_output_with_cf_attributes(tmp_path, rng):
    xr = pytest.importorskip("xarray")
    netCDF4 = pytest.importorskip("netCDF4")
    lon, lat = rng.uniform(-74.1, -73.8, 5000), rng.uniform(40.6, 40.9, 5000)
    fare = rng.normal(12, 8, 5000)
    hm = hotbin.heatmap(lon, lat, fare, agg="mean", width=16, height=12, project="mercator",
                        x_range=(-74.1, -73.8), y_range=(40.6, 40.9))
    path = tmp_path / "m.nc"
    geo.write_netcdf(path, hm)
    with netCDF4.Dataset(path) as nc:  # the file as written, no decoding
        assert set(nc.variables) == {"x", "y", "counts", "mean", "spatial_ref"}
        counts, mean, x, y = (nc.variables[k] for k in ("counts", "mean", "x", "y"))
        assert counts.dtype == np.int64 and "_FillValue" not in counts.ncattrs()
        assert counts.units == "1" and counts.long_name and counts.grid_mapping == "spatial_ref"
        assert np.isnan(mean._FillValue) and mean.grid_mapping == "spatial_ref" and mean.long_name
        assert (x.standard_name, x.units, y.standard_name, y.units) == (
            "projection_x_coordinate", "m", "projection_y_coordinate", "m")
        gm = nc.variables["spatial_ref"]
        assert gm.grid_mapping_name == "mercator"
        assert pyproj.CRS.from_wkt(gm.crs_wkt) == pyproj.CRS.from_epsg(3857)
    with xr.open_dataset(path, decode_coords="all") as ds:
        np.testing.assert_array_equal(ds["counts"].values, hm.counts)
        np.testing.assert_array_equal(ds["mean"].values, hm.values)
        assert "counts" not in ds["mean"].coords  # stored once
    pytest.importorskip("rioxarray")  # the rio accessor: the CRS from the grid mapping
    with xr.open_dataset(path, decode_coords="all") as ds:
        assert ds["counts"].rio.crs.to_epsg() == 3857
    rioxarray = pytest.importorskip("rioxarray")
    with rioxarray.open_rasterio(f"netcdf:{path}:mean") as da:  # GDAL's CF reading, as QGIS does
        assert da.rio.crs.to_epsg() == 3857 and da.dtype == np.float64 and np.isnan(da.rio.nodata)
        np.testing.assert_array_equal(da.values[0], hm.values[::-1])
    rasterio = pytest.importorskip("rasterio")
    with rasterio.open(f"netcdf:{path}:counts") as r:
        assert r.crs.to_epsg() == 3857
        np.testing.assert_allclose([r.bounds.left, r.bounds.right, r.bounds.bottom, r.bounds.top],
                                   [*hm.x_range, *hm.y_range], rtol=1e-12)
        np.testing.assert_array_equal(r.read(1), hm.counts[::-1])


def test_netcdf_plain_count_is_stored_once_and_lon_lat_grid_mapping(tmp_path, rng):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("netCDF4")
    hm = hotbin.heatmap(rng.uniform(-10, 10, 1000), rng.uniform(40, 50, 1000), width=8, height=5,
                        x_range=(-10, 10), y_range=(40, 50))
    hm = replace(hm, crs="EPSG:4326", x_name="lon", y_name="lat")
    geo.write_netcdf(tmp_path / "c.nc", hm)
    with xr.open_dataset(tmp_path / "c.nc") as ds:
        assert set(ds.data_vars) == {"counts"} and ds["counts"].dtype == np.int64
        np.testing.assert_array_equal(ds["counts"].values, hm.counts)
        assert ds["lon"].attrs["standard_name"] == "longitude" and ds["lon"].attrs["units"] == "degrees_east"
        assert ds["lat"].attrs["standard_name"] == "latitude" and ds["lat"].attrs["units"] == "degrees_north"
        assert ds["spatial_ref"].attrs["grid_mapping_name"] == "latitude_longitude"
        assert ds.attrs["dropped"] == hm.dropped and list(ds.attrs["x_range"]) == [-10, 10]


def test_netcdf_by_counts_per_category_are_integers(tmp_path, rng):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("netCDF4")
    x, y = rng.random((2, 2000))
    labels = rng.choice(["a", "b", "c"], 2000)
    hm = hotbin.heatmap(x, y, by=labels, width=6, height=4, x_range=(0, 1), y_range=(0, 1))
    geo.write_netcdf(tmp_path / "b.nc", hm)
    with xr.open_dataset(tmp_path / "b.nc") as ds:
        assert set(ds.data_vars) == {"counts", "count"} and ds["count"].dtype == np.int64
        assert list(ds["category"].values) == ["a", "b", "c"]
        for i, lab in enumerate("abc"):
            want = np.histogram2d(y[labels == lab], x[labels == lab], bins=(4, 6), range=((0, 1), (0, 1)))[0]
            np.testing.assert_array_equal(ds["count"].values[i], want)
        np.testing.assert_array_equal(ds["counts"].values, hm.counts)


def test_to_xarray_carries_cf_attributes():
    pytest.importorskip("xarray")
    da = _counts(7).to_xarray()
    assert da.attrs["grid_mapping"] == "spatial_ref" and da.attrs["long_name"]
    assert da["x"].attrs["standard_name"] == "projection_x_coordinate" and da["y"].attrs["units"] == "m"
    assert pyproj.CRS.from_wkt(da["spatial_ref"].attrs["crs_wkt"]) == pyproj.CRS.from_epsg(3857)
