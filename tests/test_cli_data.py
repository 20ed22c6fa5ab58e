"""``hotbin heatmap`` over data sets of several files and on a Dask cluster (issue #7)."""
import numpy as np
import pytest

import hotbin
from hotbin.render import png
from hotbin.cli import main

pd = pytest.importorskip("pandas")


def _write_parts(tmp_path, rng, kinds=("csv", "csv", "parquet")):
    frames = []
    for i, kind in enumerate(kinds):
        n = 5000 + 1000 * i
        df = pd.DataFrame({"lon": rng.normal(3, 1, n), "lat": rng.normal(-2, 0.5, n), "w": rng.random(n)})
        df.loc[:5, "lon"] = np.nan
        path = tmp_path / f"part{i}.{kind}"
        df.to_csv(path, index=False) if kind == "csv" else df.to_parquet(path)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _expected(df, **kw):
    hm = hotbin.heatmap(df["lon"].to_numpy(), df["lat"].to_numpy(), width=40, height=30, **kw)
    return hm.shade()[::-1]


def test_directory_and_glob_equal_in_memory(tmp_path, rng, capsys):
    pytest.importorskip("pyarrow")
    pytest.importorskip("duckdb")
    data = tmp_path / "data"
    data.mkdir()
    df = _write_parts(data, rng)
    (data / "notes.txt").write_text("not data")
    out = tmp_path / "dir.png"
    assert main(["heatmap", str(data), "--x", "lon", "--y", "lat", "--width", "40", "--height", "30",
                 "--chunk-rows", "3000", "-o", str(out)]) == 0
    assert "3 files" in capsys.readouterr().out
    np.testing.assert_array_equal(png.read(out), _expected(df))
    csv_only = pd.concat([pd.read_csv(data / "part0.csv"), pd.read_csv(data / "part1.csv")], ignore_index=True)
    assert main(["heatmap", str(data / "part*.csv"), "--x", "lon", "--y", "lat", "--width", "40",
                 "--height", "30", "-o", str(out)]) == 0
    np.testing.assert_array_equal(png.read(out), _expected(csv_only))


@pytest.mark.parametrize("spec, word", [("nomatch*.csv", "no file matches"), ("empty", "without CSV")])
def test_bad_data_sets(tmp_path, capsys, spec, word):
    (tmp_path / "empty").mkdir()
    assert main(["heatmap", str(tmp_path / spec), "--x", "a", "--y", "b", "-o", str(tmp_path / "o.png")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and word in err[0]


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning",
                            "ignore::UserWarning")
def test_scheduler_runs_the_same_job_on_a_cluster(tmp_path, rng, capsys):
    pytest.importorskip("distributed")
    pytest.importorskip("duckdb")
    pytest.importorskip("dask.dataframe")
    df = _write_parts(tmp_path, rng, kinds=("csv", "csv"))
    out = tmp_path / "cluster.png"
    rc = main(["heatmap", str(tmp_path / "*.csv"), "--x", "lon", "--y", "lat", "--width", "40",
               "--height", "30", "--x-range", "0,6", "--y-range=-4,0", "--scheduler", "local", "-o", str(out)])
    assert rc == 0, capsys.readouterr().err
    np.testing.assert_array_equal(png.read(out), _expected(df, x_range=(0, 6), y_range=(-4, 0)))


# --- issue #13: automatic ranges, --clip, sizes -------------------------------------------

def _grid_png(counts):
    from hotbin.render.shade import shade

    return shade(counts)[::-1]


def test_streaming_whole_numbers_equal_numpy_histogram2d(tmp_path, capsys):
    """Chunk by chunk, ranges from the data are closed: 0..100 in 100 cells as numpy.histogram2d."""
    v = np.arange(101, dtype=np.float64)
    df = pd.DataFrame({"x": np.tile(v, 3), "y": np.tile(v[::-1], 3)})
    path = tmp_path / "whole.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "w.png"
    assert main(["heatmap", str(path), "--x", "x", "--y", "y", "--width", "100", "--height", "100",
                 "--chunk-rows", "37", "-o", str(out)]) == 0
    ref, _, _ = np.histogram2d(df["y"], df["x"], bins=100)
    np.testing.assert_array_equal(png.read(out), _grid_png(ref.astype(np.int64)))
    err = capsys.readouterr().err
    assert "x [0, 100]" in err and "y [0, 100]" in err and "0 of 303 points outside" in err


def test_clip_streams_the_same_heatmap_as_in_memory(tmp_path, rng, capsys):
    n = 20_000
    df = pd.DataFrame({"lon": np.round(rng.normal(2.35, 0.02, n), 4),
                       "lat": np.round(rng.normal(48.86, 0.015, n), 4)})
    df.loc[:9, "lon"] = 180.0  # outliers
    df.loc[10:12, "lat"] = np.nan
    path = tmp_path / "gps.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "c.png"
    assert main(["heatmap", str(path), "--x", "lon", "--y", "lat", "--width", "40", "--height", "30",
                 "--clip", "0.5,99.5", "--chunk-rows", "3000", "-o", str(out)]) == 0
    hm = hotbin.heatmap(df["lon"].to_numpy(), df["lat"].to_numpy(), width=40, height=30,
                        clip=(0.5, 99.5))
    np.testing.assert_array_equal(png.read(out), hm.shade()[::-1])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"x [{hm.x_range[0]:.10g}, {hm.x_range[1]:.10g}]" in err
    assert f"{hm.dropped:,} of {n:,} points outside (dropped)" in err and hm.dropped >= 10


def test_weighted_zero_sums_show_in_the_picture(tmp_path):
    pd.DataFrame({"x": [0.0, 0.0, 1.0, 2.0], "y": [0.0, 0.0, 1.0, 2.0], "w": [1.0, -1.0, 2.0, 3.0]}
                 ).to_csv(tmp_path / "w.csv", index=False)
    out = tmp_path / "w.png"
    assert main(["heatmap", str(tmp_path / "w.csv"), "--x", "x", "--y", "y", "--weight", "w",
                 "--width", "3", "--height", "3", "--chunk-rows", "1", "-o", str(out)]) == 0
    alpha = png.read(out)[::-1, :, 3]
    assert alpha[0, 0] == 255 and alpha[1, 1] == 255 and alpha[2, 2] == 255 and alpha.sum() == 3 * 255
