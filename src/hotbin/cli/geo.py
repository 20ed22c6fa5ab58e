"""A heatmap as data files that GIS and array tools read: NetCDF (xarray) and GeoTIFF (rasterio).

NetCDF is :meth:`hotbin.Heatmap.to_xarray` written by xarray: the values with
dims named after the columns, the counts as a coordinate of the same cells, the
ranges, ``dropped``, ``skipped`` and ``agg`` as attributes, and the CRS as a CF
grid mapping when projected. GeoTIFF holds one band of the counts (a plain or
weighted count) or of the values (``--agg``), or one band per category (``--by``,
the labels as band descriptions), north up: the first row is ``y_range[1]``,
the transform maps the cells onto the ranges, the CRS is the heatmap's
(EPSG:3857 with ``--project mercator``); float bands use NaN as nodata.
Neither library is a dependency of hotbin: :func:`check_writer` names the
install command before any work.
"""
from __future__ import annotations

import numpy as np

__all__ = ["check_writer", "write_netcdf", "write_geotiff"]


def check_writer(path, fmt) -> None:
    """A :class:`hotbin.cli.UserError` naming the install command when ``fmt``'s writer is missing."""
    from . import UserError

    if fmt == "GEOTIFF":
        try:
            import rasterio  # noqa: F401
        except ModuleNotFoundError:
            raise UserError(f"{path}: writing GeoTIFF needs rasterio: pip install rasterio") from None
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
    """``hm.to_xarray()`` as a NetCDF file (netCDF4 when installed, else netCDF-3 by scipy)."""
    da = hm.to_xarray()
    engine = next((e for e, m in (("netcdf4", "netCDF4"), ("h5netcdf", "h5netcdf"), ("scipy", "scipy"))
                   if _has(m)), None)
    if engine == "scipy" and np.asarray(da["counts"]).max(initial=0) > np.iinfo(np.int32).max:
        da = da.assign_coords(counts=da["counts"].astype(np.float64))  # netCDF-3 has no int64
    attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in da.attrs.items()}
    da.assign_attrs(attrs).to_dataset().to_netcdf(path, engine=engine)


def write_geotiff(path, hm) -> None:
    """The heatmap's numbers as a north-up GeoTIFF (``rasterio``), bands described."""
    import rasterio
    from rasterio.transform import from_bounds

    from ..core.arrays import to_host

    plain = hm.agg == "count" and hm.categories is None
    data = np.asarray(to_host(hm.counts if plain else hm.values))
    bands = np.ascontiguousarray((data[None] if data.ndim == 2 else data)[:, ::-1])
    (x0, x1), (y0, y1) = hm.x_range, hm.y_range
    profile = dict(driver="GTiff", width=hm.width, height=hm.height, count=bands.shape[0],
                   dtype=bands.dtype.name, transform=from_bounds(x0, y0, x1, y1, hm.width, hm.height),
                   crs=hm.crs, compress="deflate")
    if bands.dtype.kind == "f":
        profile["nodata"] = float("nan")
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(bands)
        dst.update_tags(x_range=repr(list(hm.x_range)), y_range=repr(list(hm.y_range)),
                        x_closed=int(hm.x_closed), y_closed=int(hm.y_closed), agg=hm.agg,
                        dropped=hm.dropped, skipped=hm.skipped, x_name=hm.x_name, y_name=hm.y_name)
        names = hm.categories if hm.categories is not None else [hm.agg]
        for i, name in enumerate(names, 1):
            dst.set_band_description(i, str(name))
