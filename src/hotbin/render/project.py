"""Map projections: longitude/latitude to Web Mercator (EPSG:3857), its tiles, and CRSs as GIS tools read them.

``mercator(lon, lat)`` gives metres on the spherical Web Mercator of web maps
(radius 6378137 m); points off the square world of XYZ tiles (``|lat|`` from
85.0511287798 degrees on, ``|lon|`` beyond 180) are NaN. Works on NumPy, CuPy
and dask arrays alike: elementwise, float64; PROJ (pyproj) gives the same
metres, and the NumPy formula is kept because it is vectorized and faster
(tests/test_gis.py checks both). ``tile_bounds(z, x, y)`` is the extent of
XYZ tile ``x, y`` at zoom ``z`` (``y`` counted from the north, as Leaflet,
MapLibre and QGIS do). ``wkt`` and ``grid_mapping`` describe a CRS (PROJ's
words when pyproj is installed), and ``to_xarray`` / ``to_dataset`` give a
heatmap as xarray objects with CF attributes.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.ranges import given_range

__all__ = ["RADIUS", "MAX_LAT", "CRS", "WKT", "WORLD", "mercator", "inverse", "tile_bounds",
           "PROJECTIONS", "projected", "wkt", "grid_mapping", "to_xarray", "to_dataset"]

RADIUS = 6378137.0
MAX_LAT = 85.05112877980659
CRS = "EPSG:3857"
#: half the side of the square world in metres
WORLD = math.pi * RADIUS
PROJECTIONS = ("mercator",)

#: well-known text of the CRSs a heatmap can be in, used only when pyproj is missing (:func:`wkt`);
#: tests/test_gis.py checks that PROJ reads it as EPSG:3857
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




def _pyproj():
    try:
        import pyproj
    except ModuleNotFoundError:
        return None
    return pyproj


def wkt(crs: str) -> str:
    """The well-known text of ``crs``: PROJ's (WKT2) when pyproj is installed, else :data:`WKT`'s."""
    pyproj = _pyproj()
    if pyproj is not None:
        return pyproj.CRS.from_user_input(crs).to_wkt()
    if crs not in WKT:
        raise ModuleNotFoundError(f'crs: describing {crs!r} needs pyproj: pip install "hotbin[geo]"')
    return WKT[crs]


#: CF's spherical Mercator, the numbers :func:`mercator` computes, for readers that ignore ``crs_wkt``
_CF_MERCATOR = {"grid_mapping_name": "mercator", "longitude_of_projection_origin": 0.0,
                "standard_parallel": 0.0, "false_easting": 0.0, "false_northing": 0.0,
                "semi_major_axis": RADIUS, "semi_minor_axis": RADIUS}


def grid_mapping(crs: str) -> dict:
    """CF grid-mapping attributes of ``crs``: ``crs_wkt`` (and GDAL's ``spatial_ref``, which
    rioxarray reads) with the CF parameters; Web Mercator as CF's Mercator on the sphere."""
    text = wkt(crs)
    pyproj = _pyproj()
    cf = pyproj.CRS.from_wkt(text).to_cf() if pyproj is not None else {"crs_wkt": text}
    if "grid_mapping_name" not in cf and crs == CRS:
        cf.update(_CF_MERCATOR)
    return {**cf, "spatial_ref": text}


def _axis_attrs(crs, axis, name) -> dict:
    """CF attributes of the cell-centre coordinate along ``axis`` ("X" or "Y")."""
    if crs is None:
        return {"long_name": name, "axis": axis}
    pyproj = _pyproj()
    geographic = pyproj.CRS.from_user_input(crs).is_geographic if pyproj else crs == "EPSG:4326"
    if geographic:
        std, units = (("longitude", "degrees_east") if axis == "X" else ("latitude", "degrees_north"))
    else:
        std, units = f"projection_{axis.lower()}_coordinate", "m"
    return {"standard_name": std, "long_name": name, "units": units, "axis": axis}


def _cells(hm, xr):
    """The coordinates of a heatmap's cells (centres, categories, the grid mapping) and its attrs."""
    from ..core.arrays import to_host

    xe, ye = hm.x_edges, hm.y_edges
    coords = {hm.y_name: xr.Variable(hm.y_name, (ye[:-1] + ye[1:]) / 2,
                                     _axis_attrs(hm.crs, "Y", hm.y_name), {"_FillValue": None}),
              hm.x_name: xr.Variable(hm.x_name, (xe[:-1] + xe[1:]) / 2,
                                     _axis_attrs(hm.crs, "X", hm.x_name), {"_FillValue": None})}
    if hm.categories is not None:
        coords["category"] = xr.Variable("category", np.asarray(list(hm.categories)),
                                         {"long_name": "category (by)"})
    attrs = {"x_range": hm.x_range, "y_range": hm.y_range, "x_closed": int(hm.x_closed),
             "y_closed": int(hm.y_closed), "dropped": int(hm.dropped), "skipped": int(hm.skipped),
             "agg": hm.agg}
    var = {}
    if hm.crs is not None:
        attrs["crs"] = hm.crs
        coords["spatial_ref"] = xr.Variable((), np.int32(0), grid_mapping(hm.crs))
        var["grid_mapping"] = "spatial_ref"
    return coords, attrs, var, lambda a: np.asarray(to_host(a))


def _variables(hm, host, var):
    """``{name: (array, per_category, attrs, encoding)}``: each output of the heatmap once."""
    weighted = hm.counts.dtype.kind == "f"
    out = {"counts": (host(hm.counts), False,
                      {"long_name": "sum of the weights in the cell" if weighted
                       else "number of points in the cell", "units": "1", **var}, {"_FillValue": None})}
    if weighted:
        out["points"] = (host(hm.points), False, {"long_name": "number of points in the cell",
                                                   "units": "1", **var}, {"_FillValue": None})
    if hm.agg != "count" or hm.categories is not None:
        whole = hm.agg == "count" and not weighted  # counts per category: exact integers
        values = host(hm.value_counts if whole else hm.values)
        name = "number of points" if whole else "sum of the weights" if hm.agg == "count" \
            else f"{hm.agg} of the values"
        out[hm.agg] = (values, hm.categories is not None,
                       {"long_name": name + (" of the category" if hm.categories is not None else "")
                        + " in the cell", **({"units": "1"} if hm.agg == "count" else {}), **var},
                       {"_FillValue": None} if whole else {"_FillValue": np.nan})
    return out


def _xarray():
    try:
        import xarray as xr
    except ModuleNotFoundError:
        raise ModuleNotFoundError('Heatmap.to_xarray needs xarray: pip install "hotbin[xarray]"') from None
    return xr


def to_dataset(hm):
    """A heatmap as an ``xarray.Dataset`` with one variable per output, as CF describes it.

    ``counts`` (and ``points`` beside weighted counts), and ``values`` under the agg's
    name when it is not a plain count (per category with ``by``: the counts of a
    ``by`` count as integers); cell centres with ``standard_name`` and ``units``, a
    ``spatial_ref`` grid mapping when projected, ``_FillValue`` NaN on float values
    and none on counts (every cell has one); the ranges, ``dropped``, ``skipped`` and
    ``agg`` as global attributes. What the NetCDF output writes.
    """
    xr = _xarray()
    coords, attrs, var, host = _cells(hm, xr)
    dims = (hm.y_name, hm.x_name)
    data = {name: xr.Variable(("category",) * per + dims, a, at, enc)
            for name, (a, per, at, enc) in _variables(hm, host, var).items()}
    return xr.Dataset(data, coords=coords, attrs={"Conventions": "CF-1.8", **attrs})


def to_xarray(hm):
    """:meth:`hotbin.Heatmap.to_xarray`: the heatmap's ``values`` as an ``xarray.DataArray``
    named after its agg, ``counts`` a coordinate of the same cells, CF attributes as
    :func:`to_dataset` and the CRS as a ``spatial_ref`` grid mapping when projected."""
    xr = _xarray()
    coords, attrs, var, host = _cells(hm, xr)
    dims = (hm.y_name, hm.x_name)
    coords["counts"] = xr.Variable(dims, host(hm.counts))
    per = hm.categories is not None
    long_name = f"{hm.agg} of the values" if hm.agg != "count" else "number of points"
    return xr.DataArray(host(hm.values), dims=("category",) * per + dims, name=hm.agg, coords=coords,
                        attrs={**attrs, "long_name": long_name + " in the cell", **var})
