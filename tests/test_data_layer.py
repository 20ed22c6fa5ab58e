"""hotbin's data layer (:mod:`hotbin.io`, DuckDB) as ``hotbin heatmap`` uses it: rows that cannot be
read are skipped once, counted and named by their line; hive keys never hide a file's column;
``--where`` is SQL with one NULL rule for every format; text is never a coordinate; a folder of
many small row groups reaches the kernels in the same batches as one file; extents people can use.
Every answer is checked against NumPy or the data as written."""
import gzip
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import hotbin
from hotbin.cli import main

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb")

W, H = 64, 48


def _hotbin(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "hotbin", *map(str, args)], input=stdin,
                          capture_output=True, timeout=600)


def _messy_csv(path, rng, n, junk_after=0.4, stray=True, multiline=True):
    """A CSV of ``n`` good rows (id, lon, lat, fare, note) with, past the first ``junk_after`` of it
    (over 4 MiB in), a stray short line, a ``#VALUE!`` cell, a repeated header and a row with too many
    columns; blank lines, quoted notes holding newlines and empty lat cells throughout.
    Returns ``(lon, lat, junk lines)``: the good rows' values and the junk rows' lines in the file."""
    lon = np.round(rng.uniform(-74.3, -73.7, n), 6)
    lat = np.round(rng.uniform(40.5, 41.0, n), 6)
    lat[rng.choice(n, n // 1000, replace=False)] = np.nan  # empty cells: points in no cell
    multi = set(rng.choice(n, n // 500, replace=False).tolist()) if multiline else set()
    blank = set(rng.choice(n, n // 700, replace=False).tolist())
    k = int(n * junk_after)
    junk_at = {k: "-- export interrupted, resuming --", k + 7: "1,#VALUE!,40.7,3.0,ok",
               k + 5000: "id,lon,lat,fare,note", k + 9000: "1,-74.0,40.7,3.0,ok,extra"}
    if not stray:
        junk_at = {i: v for i, v in junk_at.items() if "," in v and v.count(",") == 4}
    lines, junk_lines, line = ["id,lon,lat,fare,note"], [], 1
    for i in range(n):
        if i in junk_at:
            line += 1
            lines.append(junk_at[i])
            junk_lines.append(line)
        if i in blank:
            line += 1
            lines.append("")
        note = '"first line\nsecond, with a comma"' if i in multi else "ok"
        cell = "" if math.isnan(lat[i]) else f"{lat[i]:.6f}"
        lines.append(f"{i},{lon[i]:.6f},{cell},{(i % 97) / 4},{note}")
        line += 1 + (i in multi)
    text = "\n".join(lines) + "\n"
    assert len(text[:text.index(junk_at[min(junk_at)])].encode()) > 4 << 20 or n < 200_000
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return lon, lat, junk_lines


def _numpy_counts(lon, lat, x_range=None, y_range=None):
    ok = np.isfinite(lon) & np.isfinite(lat)
    x_range = x_range or (lon[ok].min(), lon[ok].max())
    y_range = y_range or (lat[ok].min(), lat[ok].max())
    counts, _, _ = np.histogram2d(lat[ok], lon[ok], bins=(H, W), range=[y_range, x_range])
    return counts.astype(np.int64)


@pytest.fixture(scope="module")
def messy(tmp_path_factory):
    base = tmp_path_factory.mktemp("messy")
    return {name: (base / name, *_messy_csv(base / name, np.random.default_rng(7), 300_000))
            for name in ("big.csv", "big.csv.gz")}


@pytest.mark.parametrize("name, stdin", [("big.csv", False), ("big.csv.gz", False), ("big.csv.gz", True)])
def test_junk_rows_skipped_once_and_named_by_line(messy, tmp_path, name, stdin):
    path, lon, lat, junk_lines = messy[name]
    out = tmp_path / "c.npy"
    args = ["heatmap", "-" if stdin else path, "--x", "lon", "--y", "lat", "--width", W, "--height", H,
            "--json", "-o", out]
    r = _hotbin(*args, stdin=path.read_bytes() if stdin else None)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    s = json.loads(r.stdout)
    assert s["n"] == lon.size and s["junk_rows"] == 4  # every good row once, never twice
    assert s["dropped"] == int(np.isnan(lat).sum())
    shown = "<stdin>" if stdin else name
    assert (f"skipped 4 rows that cannot be read (a cell that is not a number, or too few or too many "
            f"columns) ({shown} lines {', '.join(map(str, junk_lines))})") in err
    np.testing.assert_array_equal(np.load(out), _numpy_counts(lon, lat))


def test_strict_names_the_first_unreadable_line_and_writes_nothing(messy, tmp_path):
    path, _, _, junk_lines = messy["big.csv"]
    out = tmp_path / "c.png"
    r = _hotbin("heatmap", path, "--x", "lon", "--y", "lat", "--strict", "-o", out)
    err = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1 and len(err) == 1, err
    assert f"big.csv: line {junk_lines[0]}: expected 5 columns, found 2" in err[0]
    assert not out.exists()


def test_a_junk_cell_after_blank_lines_does_not_count_rows_twice(tmp_path):
    """Blank lines before a cell that is not a number, 4 MiB into the file: every row once."""
    path = tmp_path / "blank.csv"
    lon, lat, junk_lines = _messy_csv(path, np.random.default_rng(8), 250_000, junk_after=0.6, stray=False,
                                      multiline=False)
    out = tmp_path / "c.npy"
    r = _hotbin("heatmap", path, "--x", "lon", "--y", "lat", "--width", W, "--height", H, "--json", "-o", out)
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    assert s["n"] == lon.size and s["junk_rows"] == len(junk_lines) == 2
    assert f"blank.csv lines {junk_lines[0]}, {junk_lines[1]}" in r.stderr.decode()
    np.testing.assert_array_equal(np.load(out), _numpy_counts(lon, lat))


def test_a_quoted_newline_past_the_sniffers_sample_is_one_row(tmp_path):
    """The only quoted field (holding a newline) lies far past the rows a CSV sniffer looks at:
    it is one good row, not two broken ones."""
    rng = np.random.default_rng(9)
    lon, lat = np.round(rng.uniform(0, 1, (2, 120_000)), 6)
    rows = [f"{a:.6f},{b:.6f},ok" for a, b in zip(lon, lat)]
    rows[100_000] = rows[100_000].replace(",ok", ',"first line\nsecond, with a comma"')
    path, out = tmp_path / "late.csv", tmp_path / "c.npy"
    path.write_text("lon,lat,note\n" + "\n".join(rows) + "\n")
    r = _hotbin("heatmap", path, "--x", "lon", "--y", "lat", "--width", W, "--height", H, "--json", "-o", out)
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    assert s["n"] == lon.size and s["junk_rows"] == 0, r.stderr.decode()
    np.testing.assert_array_equal(np.load(out), _numpy_counts(lon, lat))


def test_a_late_text_label_in_a_column_of_integers_is_a_category(tmp_path):
    """--by over a column whose sniffed rows are integers and whose later cell is text: the row is
    counted, under a category of its own, not skipped as junk."""
    n = 60_000
    x = (np.arange(n) % 97) / 97
    zone = (np.arange(n) % 5).astype(str).astype(object)
    zone[50_000] = "N/A"
    pd.DataFrame({"x": x, "y": x, "zone": zone}).to_csv(tmp_path / "z.csv", index=False)
    out = tmp_path / "z.npy"
    r = _hotbin("heatmap", tmp_path / "z.csv", "--x", "x", "--y", "y", "--by", "zone", "--width", W,
                "--height", H, "--x-range", "0,1", "--y-range", "0,1", "--json", "-o", out)
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    assert s["n"] == n and s.get("junk_rows", 0) == 0, r.stderr.decode()
    values = np.load(out)
    labels = sorted(set(zone))
    for k, label in enumerate(labels):
        m = zone == label
        ref, _, _ = np.histogram2d(x[m], x[m], bins=(H, W), range=[(0, 1), (0, 1)])
        np.testing.assert_array_equal(values[k], ref)


@pytest.mark.slow
def test_five_million_messy_rows_equal_numpy(tmp_path):
    path = tmp_path / "huge.csv"
    lon, lat, junk_lines = _messy_csv(path, np.random.default_rng(11), 5_000_000)
    out = tmp_path / "c.npy"
    r = _hotbin("heatmap", path, "--x", "lon", "--y", "lat", "--width", W, "--height", H, "--json", "-o", out)
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    assert s["n"] == lon.size and s["junk_rows"] == 4
    assert f"huge.csv lines {', '.join(map(str, junk_lines))}" in r.stderr.decode()
    np.testing.assert_array_equal(np.load(out), _numpy_counts(lon, lat))


# --- hive keys -------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_files_own_column_wins_over_a_hive_key(tmp_path, capsys, fmt):
    rng = np.random.default_rng(3)
    frames = []
    for key in (5, 6):
        d = tmp_path / "d" / f"x={key}" / "g=a"
        d.mkdir(parents=True)
        df = pd.DataFrame({"x": rng.uniform(0, 10, 500), "y": rng.uniform(0, 10, 500)})
        df.to_csv(d / "a.csv", index=False) if fmt == "csv" else df.to_parquet(d / "a.parquet")
        frames.append(df)
    df = pd.concat(frames)
    out = tmp_path / "c.npy"
    assert main(["heatmap", str(tmp_path / "d"), "--x", "x", "--y", "y", "--x-range", "0,10", "--y-range",
                 "0,10", "--width", "10", "--height", "10", "--where", "g = 'a'", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "the hive key 'x'" in err and "the files' column 'x' is used" in err
    counts, _, _ = np.histogram2d(df.y, df.x, bins=10, range=[[0, 10], [0, 10]])
    np.testing.assert_array_equal(np.load(out), counts.astype(np.int64))


# --- --where ---------------------------------------------------------------------------------------

def test_where_treats_nan_and_null_the_same_for_csv_and_parquet(tmp_path):
    """NaN is a number (``NaN != 1`` holds); NULL (an empty cell) is no value (the row is left out)."""
    x = [0.5, 1.5, 2.5, 3.5, 4.5]
    (tmp_path / "f.csv").write_text("x,y,f\n0.5,0.5,1\n1.5,0.5,nan\n2.5,0.5,\n3.5,0.5,2\n4.5,0.5,1\n")
    pq.write_table(pa.table({"x": x, "y": [0.5] * 5, "f": pa.array([1.0, np.nan, None, 2.0, 1.0])}),
                   tmp_path / "f.parquet")
    want = np.zeros((1, 5), np.int64)
    want[0, [1, 3]] = 1  # the NaN row and the 2 row
    for name in ("f.csv", "f.parquet"):
        out = tmp_path / f"{name}.npy"
        assert main(["heatmap", str(tmp_path / name), "--x", "x", "--y", "y", "--x-range", "0,5", "--y-range",
                     "0,1", "--width", "5", "--height", "1", "--where", "f != 1", "-o", str(out)]) == 0
        np.testing.assert_array_equal(np.load(out), want, err_msg=name)


@pytest.mark.parametrize("expr", ["(" * 5000 + "x > 0" + ")" * 5000,
                                  "x > 0) UNION ALL SELECT 5, 5 FROM range(9) WHERE (true"])
def test_deep_parentheses_and_more_than_an_expression_are_one_line(tmp_path, expr):
    (tmp_path / "t.csv").write_text("x,y\n1,2\n")
    r = _hotbin("heatmap", tmp_path / "t.csv", "--x", "x", "--y", "y", "-o", tmp_path / "o.png", "--where", expr)
    err = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1 and len(err) == 1 and "--where" in err[0] and "Traceback" not in r.stderr.decode()
    assert not (tmp_path / "o.png").exists()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_where_on_a_timestamp_column(tmp_path, fmt):
    rng = np.random.default_rng(5)
    n = 3000
    df = pd.DataFrame({"x": rng.uniform(0, 1, n), "y": rng.uniform(0, 1, n),
                       "pickup": pd.Timestamp("2026-01-01") + pd.to_timedelta(rng.integers(0, 59 * 86400, n), "s")})
    path = tmp_path / f"t.{fmt}"
    df.to_csv(path, index=False) if fmt == "csv" else df.to_parquet(path)
    out = tmp_path / "c.npy"
    assert main(["heatmap", str(path), "--x", "x", "--y", "y", "--x-range", "0,1", "--y-range", "0,1",
                 "--width", "8", "--height", "8", "--where",
                 "pickup >= '2026-02-01' AND pickup < TIMESTAMP '2026-02-15'", "-o", str(out)]) == 0
    sel = df[(df.pickup >= "2026-02-01") & (df.pickup < "2026-02-15")]
    counts, _, _ = np.histogram2d(sel.y, sel.x, bins=8, range=[[0, 1], [0, 1]])
    np.testing.assert_array_equal(np.load(out), counts.astype(np.int64))


def test_a_timestamp_coordinate_is_its_epoch_seconds(tmp_path):
    t = pd.Timestamp("2026-01-01") + pd.to_timedelta(np.arange(0, 86400, 97), "s")
    df = pd.DataFrame({"t": t, "y": np.linspace(0, 1, len(t))})
    df.to_parquet(tmp_path / "t.parquet")
    out = tmp_path / "c.npy"
    assert main(["heatmap", str(tmp_path / "t.parquet"), "--x", "t", "--y", "y", "--width", "24", "--height", "4",
                 "-o", str(out)]) == 0
    secs = (df.t - pd.Timestamp("1970-01-01")).dt.total_seconds().to_numpy()
    counts, _, _ = np.histogram2d(df.y, secs, bins=(4, 24))
    np.testing.assert_array_equal(np.load(out), counts.astype(np.int64))


# --- text is not a coordinate ----------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_text_coordinate_column_is_an_error_naming_it(tmp_path, fmt):
    df = pd.DataFrame({"vendor": ["CMT", "VTS"] * 50, "lat": np.linspace(0, 1, 100)})
    path = tmp_path / f"t.{fmt}"
    df.to_csv(path, index=False) if fmt == "csv" else df.to_parquet(path)
    out = tmp_path / "o.png"
    r = _hotbin("heatmap", path, "--x", "vendor", "--y", "lat", "-o", out)
    err = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1 and len(err) == 1 and "column 'vendor'" in err[0], err
    assert not out.exists()


# --- many small row groups -------------------------------------------------------------------------

def test_a_hive_folder_of_small_row_groups_reaches_the_kernels_as_one_file(tmp_path, monkeypatch):
    """The same batches (of --chunk-rows rows) whatever the row groups: as many kernel calls as for
    one file, and the same cells."""
    import pyarrow.dataset as ds

    rng = np.random.default_rng(9)
    n = 200_000
    table = pa.table({"lon": rng.normal(0, 1, n), "lat": rng.normal(0, 1, n), "part": rng.integers(0, 8, n)})
    pq.write_table(table.drop(["part"]), tmp_path / "one.parquet")
    ds.write_dataset(table, tmp_path / "hive", format="parquet", partitioning=["part"],
                     partitioning_flavor="hive", max_rows_per_group=2_000, min_rows_per_group=1_000)
    assert len(pq.ParquetFile(next((tmp_path / "hive").rglob("*.parquet"))).metadata.to_dict()["row_groups"]) > 5
    from hotbin.exec import ops

    real, calls = ops.histogram2d, []

    def spy(be, op, data, w, red):  # the heatmap's kernel, once per batch
        calls.append(len(data[0]))
        return real(be, op, data, w, red)

    monkeypatch.setattr(ops, "histogram2d", spy)
    outs = []
    for src in ("one.parquet", "hive"):
        calls.clear()
        outs.append(tmp_path / f"{src}.npy")
        assert main([str(v) for v in ["heatmap", tmp_path / src, "--x", "lon", "--y", "lat", "--width", W,
                                      "--height", H, "--chunk-rows", 65536, "-o", outs[-1]]]) == 0
        assert calls == [65536, 65536, 65536, n - 3 * 65536], src
    np.testing.assert_array_equal(np.load(outs[0]), np.load(outs[1]))
    lon, lat = table["lon"].to_numpy(), table["lat"].to_numpy()
    np.testing.assert_array_equal(np.load(outs[0]), _numpy_counts(lon, lat))


# --- extents ---------------------------------------------------------------------------------------

def test_mercator_extent_from_the_points_on_the_map_only(tmp_path):
    """Junk coordinates (lon -200, lat 999) neither stretch the extent nor land in a cell: dropped."""
    from hotbin.render.project import mercator

    rng = np.random.default_rng(2)
    n = 5000
    lon, lat = rng.uniform(2.2, 2.5, n), rng.uniform(48.8, 48.9, n)
    lon[:3], lat[3:5] = -200.0, 999.0
    pd.DataFrame({"lon": lon, "lat": lat}).to_csv(tmp_path / "p.csv", index=False)
    out = tmp_path / "m.npy"
    r = _hotbin("heatmap", tmp_path / "p.csv", "--x", "lon", "--y", "lat", "--project", "mercator",
                "--width", W, "--height", H, "--json", "-o", out)
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    ok = slice(5, None)
    mx, my = mercator(lon[ok], lat[ok])
    assert s["x_range"] == [mx.min(), mx.max()] and s["y_range"] == [my.min(), my.max()]
    assert s["n"] == n and s["dropped"] == 5
    np.testing.assert_array_equal(np.load(out), _numpy_counts(mx, my))


def test_a_point_exactly_at_the_mercator_limit_is_off_the_map(tmp_path):
    """|lat| == MAX_LAT is off the map (mercator drops it): it is not in the extent either."""
    from hotbin.render.project import MAX_LAT, mercator

    lon, lat = np.array([2.0, 2.1, 2.2, 2.3]), np.array([48.0, 48.1, MAX_LAT, -MAX_LAT])
    pd.DataFrame({"lon": lon, "lat": lat}).to_csv(tmp_path / "m.csv", index=False)
    r = _hotbin("heatmap", tmp_path / "m.csv", "--x", "lon", "--y", "lat", "--project", "mercator",
                "--width", W, "--height", H, "--json", "-o", tmp_path / "m.npy")
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    mx, my = mercator(lon[:2], lat[:2])
    assert s["x_range"] == [mx.min(), mx.max()] and s["y_range"] == [my.min(), my.max()]
    assert s["n"] == 4 and s["dropped"] == 2


def test_a_range_stretched_by_outliers_is_said_and_warned(tmp_path):
    rng = np.random.default_rng(4)
    x, y = rng.normal(0, 1, 20_000), rng.normal(0, 1, 20_000)
    x[0] = 1e6  # one outlier: every other point in the first column
    pd.DataFrame({"x": x, "y": y}).to_csv(tmp_path / "o.csv", index=False)
    r = _hotbin("heatmap", tmp_path / "o.csv", "--x", "x", "--y", "y", "-o", tmp_path / "o.png")
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert f"x range from the data: {x.min():.10g}, {x.max():.10g}" in err
    assert "warning:" in err and "--clip 0.1,99.9" in err
    r = _hotbin("heatmap", tmp_path / "o.csv", "--x", "x", "--y", "y", "--clip", "0.1,99.9", "-o", tmp_path / "o.png")
    assert r.returncode == 0 and "warning:" not in r.stderr.decode()
    # points on a few lines across the whole extent fill few cells, but no range is stretched
    i = np.arange(100_000)
    pd.DataFrame({"x": i / i.size, "y": (7 * i % i.size) / i.size}).to_csv(tmp_path / "l.csv", index=False)
    r = _hotbin("heatmap", tmp_path / "l.csv", "--x", "x", "--y", "y", "-o", tmp_path / "l.png")
    assert r.returncode == 0 and "warning:" not in r.stderr.decode()


@pytest.mark.parametrize("extra, size", [([], (1024, 512)), (["--project", "mercator"], None)])
def test_given_ranges_set_the_grid_aspect(tmp_path, extra, size):
    from hotbin.render.project import mercator

    pd.DataFrame({"x": [1.0, 2.0], "y": [45.0, 46.0]}).to_csv(tmp_path / "a.csv", index=False)
    out = tmp_path / "a.npy"
    r = _hotbin("heatmap", tmp_path / "a.csv", "--x", "x", "--y", "y", "--x-range", "0,4", "--y-range", "44,46",
                *extra, "--json", "-o", out)
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    if size is None:
        (x0, x1), (y0, y1) = mercator(np.array([0.0, 4.0]), np.array([44.0, 46.0]))
        size = (1024, round(1024 * (y1 - y0) / (x1 - x0)))
    assert (s["width"], s["height"]) == size and np.load(out).shape == size[::-1]


# --- the same reading on a Dask cluster ------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning", "ignore::UserWarning")
def test_scheduler_workers_read_their_files_as_the_local_job(tmp_path, capsys):
    """Each worker reads its share of the files with the same query: the same junk rows (named by
    file and line), the same --where, the same extent, the same cells as NumPy on the good rows."""
    pytest.importorskip("distributed")
    rng = np.random.default_rng(12)
    good = []
    for part in range(4):
        d = tmp_path / "d" / f"part={part}"
        d.mkdir(parents=True)
        x, y, f = rng.uniform(0, 10, 3000), rng.uniform(0, 5, 3000), np.round(rng.uniform(0, 9, 3000), 2)
        rows = [f"{a},{b},{c}" for a, b, c in zip(x, y, f)]
        if part == 1:
            rows[10], rows[20] = "oops,1,1", "-- cut --"
            x, y, f = (np.delete(v, [10, 20]) for v in (x, y, f))
        (d / "t.csv").write_text("x,y,fare\n" + "\n".join(rows) + "\n")
        keep = (f > 3) & (part != 2)
        good.append((x[keep], y[keep]))
    x, y = (np.concatenate([g[k] for g in good]) for k in (0, 1))
    args = ["heatmap", str(tmp_path / "d"), "--x", "x", "--y", "y", "--width", "20", "--height", "10",
            "--where", "fare > 3 AND part <> 2", "--json"]
    outs = []
    for extra in ([], ["--scheduler", "local"]):
        outs.append(tmp_path / f"{len(extra)}.npy")
        assert main(args + extra + ["-o", str(outs[-1])]) == 0
        captured = capsys.readouterr()
        s = json.loads(captured.out)
        assert s["n"] == x.size and s["junk_rows"] == 2, extra
        assert "(t.csv lines 12, 22)" in captured.err and "Traceback" not in captured.err
        assert f"x range from the data: {x.min():.10g}, {x.max():.10g}" in captured.err
        assert s["x_range"] == [x.min(), x.max()] and s["y_range"] == [y.min(), y.max()]
    counts, _, _ = np.histogram2d(y, x, bins=(10, 20), range=[(y.min(), y.max()), (x.min(), x.max())])
    for out in outs:
        np.testing.assert_array_equal(np.load(out), counts.astype(np.int64))
