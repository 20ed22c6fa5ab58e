"""``hotbin heatmap --agg`` and ``--by`` as a user runs them: the cells equal
``hotbin.heatmap`` in memory on the same data, streamed in several chunks whose partials the
stream executor merges by the aggregation's reductions; text categories are one sorted mapping
over every chunk, integers their own codes."""
import json
import subprocess
import sys

import numpy as np
import pytest

import hotbin

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")  # the data layer reads files with DuckDB

AGGS = ("count", "any", "sum", "mean", "min", "max", "std", "var")


def _hotbin(*args):
    return subprocess.run([sys.executable, "-m", "hotbin", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def trips(tmp_path, rng):
    n = 3000
    df = pd.DataFrame({"lon": rng.uniform(0, 10, n), "lat": rng.uniform(0, 5, n),
                       "fare": np.round(rng.gamma(2, 6, n), 2), "vendor": rng.choice(["VTS", "CMT"], n),
                       "zone": rng.integers(0, 4, n)})
    df.loc[::97, "fare"] = np.nan  # no value: skipped
    df.loc[2990:, "vendor"] = "AAA"  # a category only the last chunk holds (sorts first)
    df.loc[2995:, "zone"] = 7
    path = tmp_path / "trips.csv"
    df.to_csv(path, index=False)
    return df, path


def _run(path, out, *extra):
    r = _hotbin("heatmap", path, "--x", "lon", "--y", "lat", "--width", "12", "--height", "6",
                "--chunk-rows", "500", "--json", "-o", out, *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("agg", AGGS)
def test_every_agg_streamed_equals_memory(trips, tmp_path, agg):
    df, path = trips
    out = tmp_path / f"{agg}.npy"
    s = _run(path, out, "--agg", agg if agg in ("count", "any") else f"{agg}:fare")
    want = hotbin.heatmap("lon", "lat", None if agg in ("count", "any") else "fare", agg=agg, data=df,
                          width=12, height=6)
    got = np.load(out)
    if agg == "count":
        np.testing.assert_array_equal(got, want.counts)
    else:  # the chunks' float sums add in another order than in memory: the last bits may differ
        np.testing.assert_allclose(got, want.values, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert (s["agg"], s["n"], s["dropped"], s["skipped"]) == (agg, len(df), want.dropped, want.skipped)


def test_by_text_categories_over_chunks(trips, tmp_path):
    df, path = trips
    out = tmp_path / "by.npy"
    s = _run(path, out, "--by", "vendor")
    want = hotbin.heatmap(df["lon"].to_numpy(), df["lat"].to_numpy(), by=df["vendor"].to_numpy(str),
                          width=12, height=6)
    assert s["categories"] == ["AAA", "CMT", "VTS"] == list(want.categories)
    np.testing.assert_array_equal(np.load(out), want.values)


def test_by_integer_categories_with_mean_from_parquet(trips, tmp_path):
    df, _ = trips
    path = tmp_path / "trips.parquet"
    df.to_parquet(path, row_group_size=700)
    out = tmp_path / "zone.npy"
    s = _run(path, out, "--by", "zone", "--agg", "mean:fare", "--where", "fare < 30")
    sel = df[df.fare < 30]
    want = hotbin.heatmap("lon", "lat", "fare", agg="mean", by=sel["zone"].to_numpy(), data=sel,
                          width=12, height=6)
    assert s["categories"] == list(range(8)) == list(want.categories)
    np.testing.assert_allclose(np.load(out), want.values, rtol=1e-12, equal_nan=True)


def test_weight_and_agg_agree_or_are_refused(trips, tmp_path):
    _, path = trips
    out = tmp_path / "w.npy"
    for args, word in [(["--agg", "mean"], "needs a value column: --agg mean:COL"),
                       (["--agg", "mode:fare"], "expected one of count"),
                       (["--weight", "fare", "--agg", "sum:lat"], "different value columns"),
                       (["--by", "fare"], "fractional numbers")]:
        data = path
        if args[0] == "--by":  # a float column of Parquet (CSV's cells would be text categories)
            data = tmp_path / "t.parquet"
            pd.read_csv(path).to_parquet(data)
        r = _hotbin("heatmap", data, "--x", "lon", "--y", "lat", "-o", out, *args)
        assert r.returncode != 0 and word in r.stderr, r.stderr
    a = _run(path, out, "--weight", "fare", "--agg", "mean")  # --agg takes --weight's column
    assert a["agg"] == "mean" and a["value"] == "fare"
