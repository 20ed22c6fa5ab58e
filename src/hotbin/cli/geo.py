"""A heatmap as data files that GIS and array tools read: NetCDF (xarray) and GeoTIFF (rasterio).

NetCDF is :func:`hotbin.render.project.to_dataset` written by xarray: one variable
per output (``counts``; the values under the agg's name), CF attributes
(``long_name``, ``units``, ``_FillValue``, coordinates' ``standard_name``) and,
when projected, a ``spatial_ref`` grid mapping. GeoTIFF holds one band of the
counts (a plain or weighted count) or of the values (``--agg``), or one band per
category (``--by``, the labels as band descriptions), north up: the first row is
``y_range[1]``, the transform maps the cells onto the ranges, the CRS is the
heatmap's (EPSG:3857 with ``--project mercator``). Counts are stored in the
smallest unsigned type whose largest value, the nodata value, no count reaches
(0 is a count, not a gap); float bands are float32 when that keeps every value
exactly, else float64, with NaN as nodata. Neither library is a dependency of
hotbin: :func:`check_writer` names the install command before any work.
"""
from __future__ import annotations

import numpy as np

__all__ = ["check_writer", "write_netcdf", "write_geotiff", "band_type"]


def check_writer(path, fmt) -> None:
    """A :class:`hotbin.cli.UserError` naming the install command when ``fmt``'s writer is missing."""
    from . import UserError

    if fmt == "GEOTIFF":
        try:
            import rasterio  # noqa: F401
        except ModuleNotFoundError:
            raise UserError(f'{path}: writing GeoTIFF needs rasterio: pip install "hotbin[geo]"') from None
        return
    try:
        import xarray  # noqa: F401
    except ModuleNotFoundError:
        raise UserError(f'{path}: writing NetCDF needs xarray: pip install "hotbin[xarray]"') from None
    if not any(_has(m) for m in ("netCDF4", "h5netcdf", "scipy")):
        raise UserError(f'{path}: writing NetCDF needs netCDF4 (or scipy): pip install "hotbin[xarray]"')


def _has(module) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def write_netcdf(path, hm) -> None:
    """The heatmap's outputs as a NetCDF file (netCDF4 when installed, else netCDF-3 by scipy)."""
    from ..render.project import to_dataset

    ds = to_dataset(hm)
    engine = next((e for e, m in (("netcdf4", "netCDF4"), ("h5netcdf", "h5netcdf"), ("scipy", "scipy"))
                   if _has(m)), None)
    if engine == "scipy":  # netCDF-3 has no int64: counts past int32 as float64 (exact to 2**53)
        for name, v in ds.data_vars.items():
            if v.dtype.kind == "i" and v.values.max(initial=0) > np.iinfo(np.int32).max:
                ds[name] = v.astype(np.float64)
    ds.attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in ds.attrs.items()}
    ds.to_netcdf(path, engine=engine)


#: unsigned band types with their nodata value
_COUNT_TYPES = [(np.uint8, 2**8 - 1), (np.uint16, 2**16 - 1), (np.uint32, 2**32 - 1), (np.uint64, 2**53)]


def band_type(data) -> tuple[np.dtype, float | int | None]:
    """``(dtype, nodata)`` that stores ``data`` exactly in the fewest bytes.

    Integers (counts, never negative): the smallest of uint8/16/32/64 whose nodata
    exceeds every count, nodata being the type's maximum, except ``2**53`` for uint64
    (GDAL writes larger nodata in a form it reads back wrong); a cell of ``2**53`` or
    more points leaves the band without nodata. Floats: float32 when every value
    survives the round trip, else float64, nodata NaN.
    """
    if data.dtype.kind in "iub":
        top = int(data.max(initial=0))
        if data.size and int(data.min()) < 0:
            raise ValueError("data: counts are never negative")
        return next(((np.dtype(t), n) for t, n in _COUNT_TYPES if top < n), (np.dtype(np.uint64), None))
    with np.errstate(over="ignore", invalid="ignore"):
        exact = np.array_equal(data.astype(np.float32).astype(data.dtype), data, equal_nan=True)
    return np.dtype(np.float32 if exact else np.float64), float("nan")


def write_geotiff(path, hm) -> None:
    """The heatmap's numbers as a north-up GeoTIFF (``rasterio``), bands described."""
    import rasterio
    from rasterio.transform import Affine

    from ..core.arrays import to_host

    if hm.agg == "count":  # counts, per category with by (integers unless weighted)
        data = hm.counts if hm.categories is None else \
            hm.value_counts if hm.counts.dtype.kind != "f" else hm.values
    else:
        data = hm.values
    data = np.asarray(to_host(data))
    dtype, nodata = band_type(data)
    bands = np.ascontiguousarray((data[None] if data.ndim == 2 else data)[:, ::-1], dtype=dtype)
    (x0, x1), (y0, y1) = hm.x_range, hm.y_range
    north_up = Affine((x1 - x0) / hm.width, 0.0, x0, 0.0, (y0 - y1) / hm.height, y1)  # from_bounds' numbers
    profile = dict(driver="GTiff", width=hm.width, height=hm.height, count=bands.shape[0],
                   dtype=dtype.name, transform=north_up,
                   crs=hm.crs, nodata=nodata, compress="deflate")
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(bands)
        dst.update_tags(x_range=repr(list(hm.x_range)), y_range=repr(list(hm.y_range)),
                        x_closed=int(hm.x_closed), y_closed=int(hm.y_closed), agg=hm.agg,
                        dropped=hm.dropped, skipped=hm.skipped, x_name=hm.x_name, y_name=hm.y_name)
        names = hm.categories if hm.categories is not None else [hm.agg]
        for i, name in enumerate(names, 1):
            dst.set_band_description(i, str(name))
