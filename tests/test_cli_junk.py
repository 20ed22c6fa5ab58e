"""Junk rows in data files (issue #15 item 2): a cell that is not a number skips its row, which
is counted and named on stderr; --strict makes it an error naming the line. Streaming CSV and
Parquet, every pass (extent, percentiles, counting) agreeing, and the Dask path."""
import numpy as np
import pytest

import hotbin
from hotbin.cli import main

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")  # the data layer reads files with DuckDB

LINES = ["lon,lat", "1.5,2", "#VALUE!,3", '2.5,"-73,98"', "3,4", "lon,lat", "5,6", ",7", "2,2.5"]
# kept: lines 2, 5, 7, 9 and the empty cell of line 8 (NaN: a point in no cell, as in memory)
GOOD = np.array([[1.5, 2], [3, 4], [5, 6], [np.nan, 7], [2, 2.5]])


def _file(tmp_path):
    path = tmp_path / "junk.csv"
    path.write_text("\n".join(LINES) + "\n")
    return path


@pytest.mark.parametrize("chunk_rows", [2, 100])
@pytest.mark.parametrize("extra", [[], ["--clip", "0,100"], ["--x-range", "0,6", "--y-range", "0,8"]])
def test_junk_rows_are_skipped_counted_and_named(tmp_path, capsys, chunk_rows, extra):
    out = tmp_path / "c.npy"
    rc = main(["heatmap", str(_file(tmp_path)), "--x", "lon", "--y", "lat", "--width", "5", "--height", "4",
               "--chunk-rows", str(chunk_rows), "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "skipped 3 rows with a cell that is not a number (junk.csv lines 3, 4, 6)" in err
    kw = {}
    if extra[:1] == ["--x-range"]:
        kw = dict(x_range=(0, 6), y_range=(0, 8))
    elif extra:
        kw = dict(clip=(0, 100))
    want = hotbin.heatmap(GOOD[:, 0], GOOD[:, 1], width=5, height=4, **kw)
    np.testing.assert_array_equal(np.load(out), want.counts)


def test_strict_names_the_line(tmp_path, capsys):
    rc = main(["heatmap", str(_file(tmp_path)), "--x", "lon", "--y", "lat", "--strict",
               "-o", str(tmp_path / "c.npy")])
    err = capsys.readouterr().err
    assert rc == 1 and "junk.csv: line 3: column 'lon' holds '#VALUE!', not a number" in err
    assert not (tmp_path / "c.npy").exists()


def test_parquet_text_column_is_an_error_naming_it(tmp_path, capsys):
    """A Parquet column of text cannot be coordinates, even when most cells read as numbers."""
    pytest.importorskip("pyarrow")
    path = tmp_path / "junk.parquet"
    pd.DataFrame({"x": ["1", "oops", "2", "3"], "y": [1.0, 2.0, 3.0, 4.0]}).to_parquet(path)
    out = tmp_path / "p.npy"
    rc = main(["heatmap", str(path), "--x", "x", "--y", "y", "--width", "3", "--height", "3", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and "column 'x'" in err[0] and "not numbers" in err[0], err
    assert not out.exists()


def test_dask_junk_rows_in_one_line(tmp_path, capsys):
    pytest.importorskip("distributed")
    pytest.importorskip("dask.dataframe")
    path = _file(tmp_path)
    out = tmp_path / "d.npy"
    args = ["heatmap", str(path), "--x", "lon", "--y", "lat", "--width", "5", "--height", "4",
            "--x-range", "0,6", "--y-range", "0,8", "--scheduler", "local", "-o", str(out)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "skipped 3 rows with a cell that is not a number (junk.csv lines 3, 4, 6)" in err
    assert "Traceback" not in err and "distributed." not in err
    want = hotbin.heatmap(GOOD[:, 0], GOOD[:, 1], width=5, height=4, x_range=(0, 6), y_range=(0, 8))
    np.testing.assert_array_equal(np.load(out), want.counts)
    assert main(args + ["--strict"]) == 1
    assert "junk.csv: line 3: column 'lon' holds '#VALUE!', not a number" in capsys.readouterr().err
