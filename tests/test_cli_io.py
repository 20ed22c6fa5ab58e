"""Data in and out of ``hotbin heatmap`` as a user runs it (issue #15 items 1, 4, 5): globs and hive
directories, Parquet statistics for the extent, --where, standard input, compressed CSV, NetCDF,
GeoTIFF, the ranges in the PNG, --json, --project mercator and the height from the aspect."""
import json
import subprocess
import sys

import numpy as np
import pytest

import hotbin
from hotbin.render import png

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")  # the data layer reads files with DuckDB
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _hotbin(*args, stdin=None, pre=""):
    """The command line in a subprocess; ``pre``: Python run before it (e.g. hiding a module)."""
    code = ["-c", f"import sys\n{pre}\nfrom hotbin.cli import main\nsys.exit(main())"] if pre else ["-m", "hotbin"]
    return subprocess.run([sys.executable, *code, *map(str, args)], input=stdin,
                          capture_output=True, timeout=300)


def _ok(r):
    assert r.returncode == 0, r.stderr.decode()
    return r


def _trips(rng, n=4000):
    return pd.DataFrame({"lon": rng.uniform(-74.1, -73.8, n), "lat": rng.uniform(40.6, 40.9, n),
                         "fare": np.round(rng.normal(12, 8, n), 2),
                         "vendor": rng.choice(["CMT", "VTS", "DDS"], n)})


def _want(df, **kw):
    return hotbin.heatmap(df["lon"].to_numpy(), df["lat"].to_numpy(), **kw)


def test_glob_any_depth_and_hive_partitions(tmp_path, rng):
    df = _trips(rng)
    parts = []
    for i, (year, month) in enumerate([(2024, 1), (2024, 2), (2025, 1)]):
        d = tmp_path / "trips" / f"year={year}" / f"month={month}"
        d.mkdir(parents=True)
        part = df.iloc[i * 1000:(i + 1) * 1000].assign(year=year)
        part.drop(columns="year").to_parquet(d / "part-0.parquet")
        part.drop(columns="year").to_csv(d / "part-0.csv", index=False)
        parts.append(part)
    (tmp_path / "trips" / "_SUCCESS").write_text("")
    data = pd.concat(parts, ignore_index=True)
    out = tmp_path / "c.npy"
    # a glob of any depth over CSV
    _ok(_hotbin("heatmap", tmp_path / "trips" / "**" / "*.csv", "--x", "lon", "--y", "lat",
                "--width", "30", "--height", "20", "--chunk-rows", "300", "-o", out))
    np.testing.assert_array_equal(np.load(out), _want(data, width=30, height=20).counts)
    # a hive directory: its keys are columns for --where and --by
    r = _ok(_hotbin("heatmap", tmp_path / "trips", "--x", "lon", "--y", "lat", "--width", "30",
                    "--height", "20", "--where", "year == 2024 and month >= 2", "--by", "year", "-o", out,
                    "--json"))
    sel = data[(data.year == 2024)].iloc[1000:]
    want = hotbin.heatmap(sel["lon"].to_numpy(), sel["lat"].to_numpy(), by=sel["year"].to_numpy(),
                          width=30, height=20, x_range=_ranges(r)[0], y_range=_ranges(r)[1], closed=True)
    assert json.loads(r.stdout)["n"] == 2 * 1000  # the CSV and the Parquet copy of 2024/2
    np.testing.assert_array_equal(np.load(out)[2024], 2 * want.values[2024])


def _ranges(r):
    s = json.loads(r.stdout)
    return tuple(s["x_range"]), tuple(s["y_range"])


def test_the_extent_is_the_finite_extent_of_the_rows_kept(tmp_path, rng, capsys):
    """The extent comes from one query over the rows --where keeps, NaN and infinities left out,
    and is said on stderr."""
    from hotbin.cli import main

    df = _trips(rng)
    df.loc[5, "lon"] = np.nan
    df.loc[6, "lon"] = np.inf
    df.to_parquet(tmp_path / "t.parquet", row_group_size=500)
    out = tmp_path / "c.npy"
    args = ["heatmap", str(tmp_path / "t.parquet"), "--x", "lon", "--y", "lat", "--width", "40",
            "--height", "30", "--json", "-o", str(out)]
    assert main(args) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["ranges_from"] == "data"
    finite = df.lon[np.isfinite(df.lon)]
    assert f"x range from the data: {finite.min():.10g}, {finite.max():.10g}" in captured.err
    np.testing.assert_array_equal(np.load(out), _want(df, width=40, height=30).counts)
    assert main(args + ["--where", "fare > 0"]) == 0
    sel = df[df.fare > 0]
    assert json.loads(capsys.readouterr().out)["x_range"] == [sel.lon[np.isfinite(sel.lon)].min(),
                                                              sel.lon[np.isfinite(sel.lon)].max()]
    np.testing.assert_array_equal(np.load(out), _want(sel, width=40, height=30).counts)


def test_where_filters_rows(tmp_path, rng):
    df = _trips(rng)
    df.to_csv(tmp_path / "t.csv", index=False)
    out = tmp_path / "w.npy"
    expr = "(fare > 0 and fare <= 20.5) or not vendor == 'CMT' and lat < 40.7"
    _ok(_hotbin("heatmap", tmp_path / "t.csv", "--x", "lon", "--y", "lat", "--width", "25", "--height", "25",
                "--x-range", "-74.1,-73.8", "--y-range", "40.6,40.9", "--where", expr, "--chunk-rows", "700",
                "-o", out))
    sel = df[((df.fare > 0) & (df.fare <= 20.5)) | (~(df.vendor == "CMT") & (df.lat < 40.7))]
    want = _want(sel, width=25, height=25, x_range=(-74.1, -73.8), y_range=(40.6, 40.9))
    np.testing.assert_array_equal(np.load(out), want.counts)
    for bad, word in [("fare >", "syntax error"), ("fare > 1 ; rm", "syntax error"),
                      ("nope > 1", 'column "nope" not found')]:
        r = _hotbin("heatmap", tmp_path / "t.csv", "--x", "lon", "--y", "lat", "--where", bad, "-o", out)
        err = r.stderr.decode().strip().splitlines()
        assert r.returncode == 1 and len(err) == 1 and word in err[0], err


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_compressed_csv_files_and_standard_input(tmp_path, rng, codec):
    df = _trips(rng, 3000)
    text = df.to_csv(index=False).encode()
    path = tmp_path / f"t.csv.{'gz' if codec == 'gzip' else 'zst'}"
    with pa.output_stream(str(path), compression=codec) as f:
        f.write(text)
    want = _want(df, width=30, height=20).counts
    out = tmp_path / "c.npy"
    _ok(_hotbin("heatmap", path, "--x", "lon", "--y", "lat", "--width", "30", "--height", "20",
                "--chunk-rows", "1000", "-o", out))
    np.testing.assert_array_equal(np.load(out), want)
    r = _ok(_hotbin("heatmap", "-", "--x", "lon", "--y", "lat", "--width", "30", "--height", "20",
                    "-o", out, stdin=path.read_bytes()))  # compressed on stdin, two passes
    assert b"standard input" in r.stdout
    np.testing.assert_array_equal(np.load(out), want)


def test_plain_csv_on_standard_input(tmp_path, rng):
    df = _trips(rng, 2000)
    out = tmp_path / "c.npy"
    _ok(_hotbin("heatmap", "-", "--x", "lon", "--y", "lat", "--width", "16", "--height", "16",
                "--x-range=-74.1,-73.8", "--y-range", "40.6,40.9", "-o", out,
                stdin=df.to_csv(index=False).encode()))
    want = _want(df, width=16, height=16, x_range=(-74.1, -73.8), y_range=(40.6, 40.9))
    np.testing.assert_array_equal(np.load(out), want.counts)


def test_junk_late_in_a_csv_file_skips_its_row_alone(tmp_path, capsys):
    """A cell that is not a number late in the file: only its row is skipped, named by its line."""
    from hotbin.cli import main

    rows = [f"{i % 10}.5,{i % 7}.25" for i in range(200)]
    rows[150] = "#VALUE!,1"
    (tmp_path / "j.csv").write_text("x,y\n" + "\n".join(rows) + "\n")
    out = tmp_path / "j.npy"
    assert main(["heatmap", str(tmp_path / "j.csv"), "--x", "x", "--y", "y", "--width", "10", "--height",
                 "7", "--chunk-rows", "16", "-o", str(out)]) == 0
    assert "skipped 1 row with a cell that is not a number (j.csv line 152)" in capsys.readouterr().err
    good = np.array([[float(v) for v in r.split(",")] for i, r in enumerate(rows) if i != 150])
    np.testing.assert_array_equal(np.load(out), hotbin.heatmap(good[:, 0], good[:, 1], width=10, height=7).counts)


def test_netcdf_output_is_the_heatmap_as_xarray(tmp_path, rng):
    xr = pytest.importorskip("xarray")
    df = _trips(rng)
    df.to_parquet(tmp_path / "t.parquet")
    out = tmp_path / "m.nc"
    _ok(_hotbin("heatmap", tmp_path / "t.parquet", "--x", "lon", "--y", "lat", "--agg", "mean:fare",
                "--width", "20", "--height", "10", "-o", out))
    want = hotbin.heatmap("lon", "lat", "fare", agg="mean", data=df, width=20, height=10).to_xarray()
    with xr.open_dataset(out) as ds:
        got = ds["mean"]
        assert got.dims == ("lat", "lon")
        np.testing.assert_allclose(got.values, want.values, rtol=1e-12, equal_nan=True)
        np.testing.assert_array_equal(ds["counts"].values, want["counts"].values)
        np.testing.assert_allclose(ds.attrs["x_range"], want.attrs["x_range"])
        np.testing.assert_allclose(got["lon"].values, want["lon"].values)


def test_netcdf_and_geotiff_name_the_install_when_missing(tmp_path, rng):
    _trips(rng, 10).to_csv(tmp_path / "t.csv", index=False)
    for out, hide, word in [("m.nc", "xarray", 'pip install "hotbin[xarray]"'),
                            ("m.tif", "rasterio", 'pip install "hotbin[geo]"')]:
        r = _hotbin("heatmap", tmp_path / "t.csv", "--x", "lon", "--y", "lat", "-o", tmp_path / out,
                    pre=f"sys.modules['{hide}'] = None")
        err = r.stderr.decode().strip().splitlines()
        assert r.returncode == 1 and len(err) == 1 and word in err[0], err


def test_geotiff_north_up_with_the_crs(tmp_path, rng):
    rasterio = pytest.importorskip("rasterio")
    df = _trips(rng)
    df.to_csv(tmp_path / "t.csv", index=False)
    out = tmp_path / "m.tif"
    _ok(_hotbin("heatmap", tmp_path / "t.csv", "--x", "lon", "--y", "lat", "--project", "mercator",
                "--x-range=-74.1,-73.8", "--y-range", "40.6,40.9", "--width", "32", "--by", "vendor",
                "-o", out))
    want = hotbin.heatmap("lon", "lat", by=df["vendor"].to_numpy(str), data=df, project="mercator",
                          width=32, height=None,
                          x_range=(-74.1, -73.8), y_range=(40.6, 40.9))
    with rasterio.open(out) as r:
        assert r.crs.to_epsg() == 3857 and r.count == 3 and r.descriptions == ("CMT", "DDS", "VTS")
        assert (r.width, r.height) == (32, want.height)
        b = r.bounds
        np.testing.assert_allclose([b.left, b.right, b.bottom, b.top], [*want.x_range, *want.y_range])
        np.testing.assert_array_equal(r.read(), want.values[:, ::-1])  # row 0 is the north


def test_png_carries_the_ranges_and_json_summary(tmp_path, rng):
    df = _trips(rng)
    df.loc[:9, "fare"] = np.nan
    df.to_csv(tmp_path / "t.csv", index=False)
    out = tmp_path / "m.png"
    r = _ok(_hotbin("heatmap", tmp_path / "t.csv", "--x", "lon", "--y", "lat", "--agg", "max:fare",
                    "--width", "24", "--x-range=-74.0,-73.85", "--json", "-o", out))
    s = json.loads(r.stdout)
    want = hotbin.heatmap("lon", "lat", "fare", agg="max", data=df, width=24, height=None,
                          x_range=(-74.0, -73.85))
    assert (s["width"], s["height"]) == (24, want.height)  # the height follows the aspect
    assert s["n"] == len(df) and s["dropped"] == want.dropped and s["skipped"] == want.skipped > 0
    assert s["x_range"] == [-74.0, -73.85] and s["y_range"] == list(want.y_range)
    assert s["max"] == np.nanmax(want.values) and s["agg"] == "max" and s["output"] == str(out)
    text = png.read_text(out)
    assert text["x_range"] == "[-74.0, -73.85)" and text["y_range"] == f"[{want.y_range[0]}, {want.y_range[1]}]"
    assert text["agg"] == "max" and (text["x_name"], text["y_name"]) == ("lon", "lat")


def test_project_mercator_equals_the_api(tmp_path, rng):
    df = _trips(rng)
    df.to_parquet(tmp_path / "t.parquet", row_group_size=1000)
    out = tmp_path / "m.npy"
    r = _ok(_hotbin("heatmap", tmp_path / "t.parquet", "--x", "lon", "--y", "lat", "--project", "mercator",
                    "--width", "40", "--chunk-rows", "700", "--json", "-o", out))
    want = hotbin.heatmap("lon", "lat", data=df, project="mercator", width=40, height=None)
    s = json.loads(r.stdout)
    assert s["crs"] == "EPSG:3857" and s["height"] == want.height
    np.testing.assert_allclose(s["x_range"], want.x_range, rtol=1e-15)
    np.testing.assert_array_equal(np.load(out), want.counts)
    assert b"EPSG:3857 metres" in r.stderr


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning", "ignore::UserWarning")
def test_dask_reads_junk_beyond_its_type_sample(tmp_path, rng, capsys):
    """A cell that is not a number late in the file: the workers skip its row as the local job does,
    one line on stderr naming it, the same cells (with --where, --by and --agg on the workers)."""
    pytest.importorskip("distributed")
    pytest.importorskip("dask.dataframe")
    from hotbin.cli import main

    df = _trips(rng, 12_000)  # ~400 kB: beyond dask's 256 kB sample
    df["fare"] = df["fare"].astype(object)
    df.loc[11_990, "fare"] = "#VALUE!"
    df.to_csv(tmp_path / "t.csv", index=False)
    args = ["heatmap", str(tmp_path / "t.csv"), "--x", "lon", "--y", "lat", "--width", "12", "--height", "8",
            "--agg", "mean:fare", "--by", "vendor", "--where", "fare > 2", "--x-range=-74.1,-73.8",
            "--y-range", "40.6,40.9"]
    assert main(args + ["-o", str(tmp_path / "s.npy")]) == 0
    capsys.readouterr()
    assert main(args + ["--scheduler", "local", "-o", str(tmp_path / "d.npy")]) == 0
    err = capsys.readouterr().err
    assert "skipped 1 row with a cell that is not a number (t.csv line 11992)" in err
    assert "Traceback" not in err and "distributed." not in err and len(err.strip().splitlines()) == 2
    np.testing.assert_allclose(np.load(tmp_path / "d.npy"), np.load(tmp_path / "s.npy"), rtol=1e-12,
                               equal_nan=True)
