"""Map projections: longitude/latitude to Web Mercator (EPSG:3857), and its tiles.

``mercator(lon, lat)`` gives metres on the spherical Web Mercator of web maps
(radius 6378137 m); points off the square world of XYZ tiles (``|lat|`` from
85.0511287798 degrees on, ``|lon|`` beyond 180) are NaN. Works on NumPy, CuPy
and dask arrays alike: elementwise, float64. ``tile_bounds(z, x, y)`` is the extent of
XYZ tile ``x, y`` at zoom ``z`` (``y`` counted from the north, as Leaflet,
MapLibre and QGIS do). ``to_xarray(hm)`` is a heatmap as a DataArray with its CRS.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.ranges import given_range

__all__ = ["RADIUS", "MAX_LAT", "CRS", "WKT", "WORLD", "mercator", "inverse", "tile_bounds",
           "PROJECTIONS", "projected", "to_xarray"]

RADIUS = 6378137.0
MAX_LAT = 85.05112877980659
CRS = "EPSG:3857"
#: half the side of the square world in metres
WORLD = math.pi * RADIUS
PROJECTIONS = ("mercator",)

#: well-known text of the CRSs a heatmap can be in (for rioxarray / GDAL)
WKT = {CRS: (
    'PROJCS["WGS 84 / Pseudo-Mercator",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",'
    '6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]],'
    'PROJECTION["Mercator_1SP"],PARAMETER["central_meridian",0],PARAMETER["scale_factor",1],'
    'PARAMETER["false_easting",0],PARAMETER["false_northing",0],UNIT["metre",1],'
    'AXIS["Easting",EAST],AXIS["Northing",NORTH],EXTENSION["PROJ4","+proj=merc +a=6378137 '
    '+b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +wktext +no_defs"],'
    'AUTHORITY["EPSG","3857"]]')}


def _ns(a):
    mod = type(a).__module__.split(".")[0]
    if mod == "cupy":
        import cupy

        return cupy
    if mod == "dask":
        import dask.array as da

        return da
    return np


def mercator(lon, lat):
    """``(x, y)`` in Web Mercator metres of longitudes and latitudes in degrees (float64).

    A point off the map, outside ``|lon| <= 180`` and ``|lat| < MAX_LAT`` (the
    latitude whose ``y`` is the square world's edge; infinite and NaN coordinates
    too), becomes NaN in both, so every caller drops it. ``y`` is odd in ``lat``
    bit for bit (computed from ``|lat|``, its sign restored), so the map is
    symmetric about the equator.
    """
    xp = _ns(lon)
    lon = xp.asarray(lon, dtype=np.float64) if xp is not np else np.asarray(lon, np.float64)
    lat = xp.asarray(lat, dtype=np.float64) if xp is not np else np.asarray(lat, np.float64)
    on = (abs(lon) <= 180.0) & (abs(lat) < MAX_LAT)  # False for NaN
    a = xp.where(on, abs(lat), 0.0)  # off the map: no log of an infinite tangent
    x = xp.where(on, lon * (math.pi / 180.0 * RADIUS), np.nan)
    y = xp.where(on, xp.copysign(RADIUS * xp.log(xp.tan(math.pi / 4.0 + a * (math.pi / 360.0))), lat),
                 np.nan)
    return x, y


def inverse(x, y):
    """``(lon, lat)`` in degrees of Web Mercator metres."""
    xp = _ns(x)
    lon = xp.asarray(x, dtype=np.float64) * (180.0 / (math.pi * RADIUS))
    lat = (2.0 * xp.arctan(xp.exp(xp.asarray(y, dtype=np.float64) / RADIUS)) - math.pi / 2.0) \
        * (180.0 / math.pi)
    return lon, lat


def tile_bounds(z: int, x: int, y: int) -> tuple[float, float, float, float]:
    """``(x0, x1, y0, y1)`` in metres of XYZ tile ``(x, y)`` at zoom ``z`` (``y`` from the north).

    Raises ValueError for a tile outside the world (``0 <= x, y < 2**z``, ``0 <= z <= 30``).
    """
    if not (0 <= z <= 30) or not (0 <= x < 1 << z) or not (0 <= y < 1 << z):
        raise ValueError(f"tile {z}/{x}/{y}: outside the world (0 <= x, y < 2**z, 0 <= z <= 30)")
    side = 2.0 * WORLD / (1 << z)
    x0 = -WORLD + x * side
    y1 = WORLD - y * side
    return x0, x0 + side, y1 - side, y1


def projected(project, x, y, x_range, y_range):
    """Coordinates and ranges in the projection's units, and its CRS.

    Points off the map are NaN (:func:`mercator`): dropped and counted. A range
    is clipped to the map; an end at or beyond the map's edge (``|lon| >= 180``,
    ``|lat| >= MAX_LAT``) becomes the edge, the top one moved just past it, so every
    point on the map is inside, at both ends alike.
    """
    if project not in PROJECTIONS:
        raise ValueError(f"project: expected one of {', '.join(PROJECTIONS)}, got {project!r}")
    x, y = mercator(x, y)
    if x_range is not None:
        x_range = _metres(given_range(x_range, "x_range"), 180.0, 0)
    if y_range is not None:
        y_range = _metres(given_range(y_range, "y_range"), MAX_LAT, 1)
    return x, y, x_range, y_range, CRS


def _metres(r, limit, axis):
    """A range in degrees along ``axis`` (0: lon, 1: lat) as metres, clipped to ``+-limit``."""
    edge = float(mercator(*np.array([(180.0, 0.0), (0.0, np.nextafter(MAX_LAT, 0))][axis]))[axis])
    ends = []
    for v, sign in zip(r, (-1.0, 1.0)):
        if sign * v >= limit:
            m = sign * edge
            ends.append(float(np.nextafter(m, np.inf)) if sign > 0 else m)
        else:
            ends.append(float(mercator(*((v, 0.0) if axis == 0 else (0.0, v)))[axis]))
    if not ends[0] < ends[1]:
        name = ("x_range", "y_range")[axis]
        raise ValueError(f"{name}: [{r[0]}, {r[1]}] holds no point of the map")
    return tuple(ends)


def to_xarray(hm):
    """:meth:`hotbin.Heatmap.to_xarray`: the heatmap as an ``xarray.DataArray``, with its CRS
    as a CF grid mapping when projected."""
    try:
        import xarray as xr
    except ModuleNotFoundError:
        raise ModuleNotFoundError("Heatmap.to_xarray needs xarray: pip install xarray") from None
    from ..core.arrays import to_host

    xe, ye = hm.x_edges, hm.y_edges
    dims = (hm.y_name, hm.x_name)
    coords = {hm.y_name: (ye[:-1] + ye[1:]) / 2, hm.x_name: (xe[:-1] + xe[1:]) / 2,
              "counts": (dims, np.asarray(to_host(hm.counts)))}
    if hm.categories is not None:
        dims = ("category",) + dims
        coords["category"] = list(hm.categories)
    attrs = {"x_range": hm.x_range, "y_range": hm.y_range, "x_closed": int(hm.x_closed),
             "y_closed": int(hm.y_closed), "dropped": hm.dropped, "skipped": hm.skipped,
             "agg": hm.agg}
    if hm.crs is not None:
        attrs["crs"] = hm.crs
        attrs["grid_mapping"] = "spatial_ref"
        coords["spatial_ref"] = ((), 0, {"crs_wkt": WKT.get(hm.crs, hm.crs),
                                         "spatial_ref": WKT.get(hm.crs, hm.crs)})
    return xr.DataArray(np.asarray(to_host(hm.values)), dims=dims, name=hm.agg,
                        coords=coords, attrs=attrs)
