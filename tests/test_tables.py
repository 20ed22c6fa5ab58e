"""``data=`` and ``by=`` from every kind of table: pandas (NumPy, nullable and Arrow dtypes),
polars (eager and lazy), pyarrow (Table, RecordBatch, RecordBatchReader, chunked columns),
dask dataframes, DuckDB relations and any object with ``__arrow_c_stream__``.

Nulls and NaT are missing values, never numbers: a missing coordinate drops its point
(``dropped``), a missing weight or category skips it (``skipped``). Every heatmap is checked
against ``numpy.histogram2d`` of the rows written down here.
"""
import sys

import numpy as np
import pytest

import hotbin

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

W, H = 7, 5
N = 240
LABELS = ("bus", "car", "bike")  # not in sorted order: categories come out sorted


def _rows(seed=0):
    """The data as written: values and which of them are missing (None in the table)."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(-3, 9, N), 2)
    y = rng.integers(-40, 60, N)
    w = np.round(rng.normal(size=N), 3)
    c = np.array(LABELS, dtype=object)[rng.integers(0, 3, N)]
    t = np.datetime64("2024-03-01T00:00:00", "ns") + rng.integers(0, 10**15, N).astype("timedelta64[ns]")
    miss = {k: rng.random(N) < 0.1 for k in "xywct"}
    return dict(x=x, y=y, w=w, c=c, t=t), miss


DATA, MISSING = _rows()


def _arrow():
    cols = {k: pa.array([None if m else v for v, m in zip(DATA[k].tolist(), MISSING[k])],
                        type={"x": pa.float64(), "y": pa.int64(), "w": pa.float64(), "c": pa.string(),
                              "t": pa.timestamp("ns")}[k])
            for k in "xywct"}
    cols["s"] = pa.array([f"row {i}" for i in range(N)])  # a text column
    return pa.table(cols)


class Stream:
    """A table that speaks only the Arrow PyCapsule stream interface."""

    def __init__(self, table):
        self._table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


def _pandas(tbl, mapper=None):
    return tbl.to_pandas(types_mapper=mapper)


def _nullable(dtype):
    return {pa.int64(): pd.Int64Dtype(), pa.float64(): pd.Float64Dtype(), pa.string(): pd.StringDtype()}.get(dtype)


def _dask(tbl, mapper, categories=False):
    dd = pytest.importorskip("dask.dataframe")
    df = _pandas(tbl, mapper)
    if categories:  # dask takes categories as categorical columns
        df["c"] = df["c"].astype(pd.CategoricalDtype(sorted(LABELS)))
    return dd.from_pandas(df, npartitions=3)


def _duckdb(tbl):
    duckdb = pytest.importorskip("duckdb")
    return duckdb.connect().from_arrow(tbl)


def _polars(tbl, lazy=False):
    pl = pytest.importorskip("polars")
    df = pl.from_arrow(tbl)
    return df.lazy() if lazy else df


KINDS = {
    "pandas": lambda t, **_: _pandas(t),
    "pandas-nullable": lambda t, **_: _pandas(t, _nullable),
    "pandas-arrow": lambda t, **_: _pandas(t, pd.ArrowDtype),
    "polars": lambda t, **_: _polars(t),
    "polars-lazy": lambda t, **_: _polars(t, lazy=True),
    "pyarrow": lambda t, **_: t,
    "pyarrow-chunked": lambda t, **_: pa.Table.from_batches(t.to_batches(max_chunksize=50)),
    "record-batch": lambda t, **_: t.combine_chunks().to_batches()[0],
    "batch-reader": lambda t, **_: pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=50)),
    "dask-nullable": lambda t, **kw: _dask(t, _nullable, **kw),
    "dask-arrow": lambda t, **kw: _dask(t, pd.ArrowDtype, **kw),
    "duckdb": lambda t, **_: _duckdb(t),
    "capsule": lambda t, **_: Stream(t),
}


@pytest.fixture(params=sorted(KINDS))
def table(request):
    """A function giving the rows of :data:`DATA` as one kind of table."""
    if request.param.startswith("dask"):
        dask = pytest.importorskip("dask")
        with dask.config.set(scheduler="synchronous"):
            yield lambda **kw: KINDS[request.param](_arrow(), **kw)
    else:
        yield lambda **kw: KINDS[request.param](_arrow(), **kw)


def _hist(x, y, keep, ranges, weights=None):
    """numpy.histogram2d of the rows ``keep`` over the cells of the heatmap."""
    return np.histogram2d(y[keep].astype(np.float64), x[keep].astype(np.float64), bins=(H, W),
                          range=ranges, weights=None if weights is None else weights[keep])[0]


def _ranges(x, y, keep):
    return [(y[keep].min(), y[keep].max()), (x[keep].min(), x[keep].max())]


def test_missing_coordinates_are_dropped(table):
    """Null x (float) and y (integer) drop their points; the cells are NumPy's of the rest."""
    hm = hotbin.heatmap("x", "y", data=table(), width=W, height=H)
    keep = ~MISSING["x"] & ~MISSING["y"]
    want = _hist(DATA["x"], DATA["y"], keep, _ranges(DATA["x"], DATA["y"], keep))
    np.testing.assert_array_equal(hm.counts, want.astype(np.int64))
    assert hm.dropped == N - keep.sum()
    assert (hm.x_name, hm.y_name) == ("x", "y")


@pytest.mark.parametrize("agg", ["sum", "mean"])
def test_missing_weights_are_skipped(table, agg):
    """A null weight is no value (``skipped``), never a number, as a NaN weight."""
    hm = hotbin.heatmap("x", "y", "w", data=table(), agg=agg, width=W, height=H)
    placed = ~MISSING["x"] & ~MISSING["y"]
    keep = placed & ~MISSING["w"]
    ranges = _ranges(DATA["x"], DATA["y"], placed)
    n = _hist(DATA["x"], DATA["y"], keep, ranges)
    s = _hist(DATA["x"], DATA["y"], keep, ranges, DATA["w"])
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.where(n > 0, s if agg == "sum" else s / n, np.nan)
    np.testing.assert_allclose(hm.values, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(hm.counts, n.astype(np.int64))
    assert (hm.dropped, hm.skipped) == (N - placed.sum(), (placed & MISSING["w"]).sum())


@pytest.mark.parametrize("agg", ["count", "max"])
def test_null_weight_is_a_nan_weight(table, agg):
    """A null weight does what a NaN weight does, for every agg (count: the cell's sum is NaN)."""
    hm = hotbin.heatmap("x", "y", "w", data=table(), agg=agg, width=W, height=H)
    nan = lambda k: np.where(MISSING[k], np.nan, DATA[k])  # noqa: E731
    ref = hotbin.heatmap(nan("x"), nan("y"), nan("w"), agg=agg, width=W, height=H)
    np.testing.assert_allclose(hm.values, ref.values, rtol=1e-13, equal_nan=True)  # dask: sums of partials
    np.testing.assert_array_equal(hm.points, ref.points)
    assert (hm.dropped, hm.skipped, hm.x_range, hm.y_range) == (ref.dropped, ref.skipped, ref.x_range, ref.y_range)


def test_missing_categories_count_in_none(table):
    """Strings with nulls as ``by``: sorted labels, no category None, a null skips its point."""
    hm = hotbin.heatmap("x", "y", by="c", data=table(categories=True), width=W, height=H)
    placed = ~MISSING["x"] & ~MISSING["y"]
    assert hm.categories == tuple(sorted(LABELS))
    ranges = _ranges(DATA["x"], DATA["y"], placed)
    for i, label in enumerate(hm.categories):
        want = _hist(DATA["x"], DATA["y"], placed & ~MISSING["c"] & (DATA["c"] == label), ranges)
        np.testing.assert_array_equal(hm.values[i], want)
    assert (hm.dropped, hm.skipped) == (N - placed.sum(), (placed & MISSING["c"]).sum())


def test_datetime_with_nat_is_int64_nanoseconds(table):
    """A timestamp column bins as int64 nanoseconds since the epoch; NaT drops its point."""
    hm = hotbin.heatmap("t", "y", data=table(), width=W, height=H)
    keep = ~MISSING["t"] & ~MISSING["y"]
    ns = DATA["t"].astype(np.int64)
    np.testing.assert_array_equal(hm.counts, _hist(ns, DATA["y"], keep, _ranges(ns, DATA["y"], keep)))
    assert hm.x_range == (float(ns[keep].min()), float(ns[keep].max()))
    assert hm.dropped == N - keep.sum()


def test_missing_column_lists_the_names_not_the_data(table):
    with pytest.raises(ValueError, match=r"weights: no column 'fare' in data \(columns: x, y, w, c, t, s\)") as e:
        hotbin.heatmap("x", "y", "fare", data=table(), agg="sum")
    assert "row 1" not in str(e.value)


def test_text_column_is_named(table):
    with pytest.raises(ValueError, match="y: column 's' holds text"):
        hotbin.heatmap("x", "s", data=table())


# --- the defects, one by one ---------------------------------------------------------------

def test_nat_is_not_a_number():
    """NaT was read as -2**63 ns and counted, stretching the range to 1677."""
    t = pd.to_datetime(["2020-01-01", None, "2020-01-03", "2020-01-05"]).as_unit("ns")
    df = pd.DataFrame({"t": t, "y": [0.0, 1.0, 2.0, 3.0]})
    hm = hotbin.heatmap("t", "y", data=df, width=2, height=2)
    ns = t.asi8[[0, 2, 3]]
    assert hm.x_range == (float(ns.min()), float(ns.max()))
    want = np.histogram2d([0.0, 2.0, 3.0], ns, bins=(2, 2))[0]
    np.testing.assert_array_equal(hm.counts, want)
    assert hm.dropped == 1


def test_datetime_precision_is_that_of_int64():
    """With NaT the nanoseconds become float64 (NaN for NaT): the same cells as int64
    nanoseconds, since cells compare coordinates in float64 anyway."""
    rng = np.random.default_rng(3)
    ns = 1_700_000_000_000_000_000 + rng.integers(0, 5000, 1000)  # above 2**53: float64 steps of 256
    y = rng.uniform(0, 1, 1000)
    ref = hotbin.heatmap(ns, y, width=9, height=3)
    t = pd.Series(ns.astype("datetime64[ns]"))
    for col in (t, pd.concat([t, pd.Series([pd.NaT])], ignore_index=True)):
        yy = np.append(y, 0.5)[:len(col)]
        hm = hotbin.heatmap("t", "y", data=pd.DataFrame({"t": col, "y": yy}), width=9, height=3)
        np.testing.assert_array_equal(hm.counts, ref.counts)
        assert (hm.x_range, hm.dropped) == (ref.x_range, len(col) - 1000)


def test_duplicate_column_names():
    df = pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["a", "a", "b"])
    with pytest.raises(ValueError, match=r"x: 2 columns named 'a' in data \(columns: a, a, b\)"):
        hotbin.heatmap("a", "b", data=df)
    hm = hotbin.heatmap("b", "b", data=df, width=2, height=2)  # the others are fine
    np.testing.assert_array_equal(hm.counts, np.histogram2d(df["b"], df["b"], bins=2)[0])


def test_duplicate_column_names_arrow():
    tbl = pa.Table.from_arrays([pa.array([1.0, 2.0]), pa.array([3.0, 4.0])], names=["a", "a"])
    with pytest.raises(ValueError, match=r"y: 2 columns named 'a' in data \(columns: a, a\)"):
        hotbin.heatmap(np.zeros(2), "a", data=tbl)


def test_missing_column_of_an_arrow_table():
    tbl = pa.table({"lon": [1.5, 2.5], "lat": [3.5, 4.5]})
    with pytest.raises(ValueError, match=r"no column 'nope' in data \(columns: lon, lat\)") as e:
        hotbin.heatmap("nope", "lat", data=tbl)
    assert "1.5" not in str(e.value)


@pytest.mark.parametrize("dtype", ["Float64", "double[pyarrow]", "Int64", "int64[pyarrow]"])
def test_dask_extension_dtypes(dtype):
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    x = pd.array([0, 5, None, 3, 1, None, 2, 8, 9], dtype=dtype)
    y = pd.array([1, None, 2, 3, 4, 4, 2, 1, 0], dtype=dtype)
    df = dd.from_pandas(pd.DataFrame({"x": x, "y": y}), npartitions=3)
    with dask.config.set(scheduler="synchronous"):
        hm = hotbin.heatmap("x", "y", data=df, width=3, height=2)
    keep = ~(pd.isna(x) | pd.isna(y))
    xx, yy = np.asarray(x[keep], np.float64), np.asarray(y[keep], np.float64)
    np.testing.assert_array_equal(hm.counts, np.histogram2d(yy, xx, bins=(2, 3))[0])
    assert hm.dropped == 3


def test_by_object_strings_with_none():
    """An object array of strings with None and NaN gave "'<' not supported"."""
    x = np.arange(6.0)
    by = np.array(["b", None, "a", np.nan, "b", "a"], dtype=object)
    hm = hotbin.heatmap(x, x, by=by, width=3, height=3)
    assert hm.categories == ("a", "b")
    for i, label in enumerate(hm.categories):
        keep = by == label
        np.testing.assert_array_equal(hm.values[i], np.histogram2d(x[keep], x[keep], bins=3,
                                                                    range=[(0, 5), (0, 5)])[0])
    assert (hm.skipped, hm.dropped) == (2, 0)


@pytest.mark.parametrize("make", [
    lambda v: pa.array(v, pa.int64()),
    lambda v: pa.chunked_array([v[:3], v[3:]], pa.int32()),
    lambda v: pd.Series(v, dtype="Int64"),
    lambda v: pd.Series(v, dtype="uint8[pyarrow]"),
    lambda v: pytest.importorskip("polars").Series(v),
], ids=["pyarrow", "chunked", "pandas", "pandas-arrow", "polars"])
def test_by_nullable_integers(make):
    """Integer codes with nulls: labels 0 .. max as for NumPy codes, a null in no category."""
    x = np.arange(7.0)
    codes = [2, None, 0, 2, None, 3, 0]
    hm = hotbin.heatmap(x, x, by=make(codes), width=7, height=1)
    assert hm.categories == (0, 1, 2, 3)
    for k in range(4):
        np.testing.assert_array_equal(hm.values[k, 0], [c == k for c in codes])
    assert (hm.skipped, hm.dropped) == (2, 0)


def test_by_nullable_integers_from_tables():
    x = np.arange(5.0)
    c = [1, None, 0, 1, 1]
    want = np.array([[[0, 0, 1, 0, 0]], [[1, 0, 0, 1, 1]]], np.float64)
    tables = [pd.DataFrame({"x": x, "c": pd.array(c, dtype="Int64")}), pa.table({"x": x, "c": c})]
    pl = pytest.importorskip("polars")
    tables.append(pl.DataFrame({"x": x, "c": c}))
    for tbl in tables:
        hm = hotbin.heatmap("x", "x", by="c", data=tbl, width=5, height=1)
        assert hm.categories == (0, 1)
        np.testing.assert_array_equal(hm.values, want)
        assert hm.skipped == 1


def test_by_dask_nullable_integers():
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    x = np.arange(6.0)
    c = pd.array([1, None, 0, 2, None, 1], dtype="Int64")
    df = dd.from_pandas(pd.DataFrame({"x": x, "c": c}), npartitions=2)
    with dask.config.set(scheduler="synchronous"):
        hm = hotbin.heatmap("x", "x", by="c", data=df, width=6, height=1)
    assert hm.categories == (0, 1, 2)
    np.testing.assert_array_equal(hm.values[:, 0], [[0, 0, 1, 0, 0, 0], [1, 0, 0, 0, 0, 1],
                                                    [0, 0, 0, 1, 0, 0]])
    assert hm.skipped == 2


def test_by_dictionary_with_a_null_label():
    """A pyarrow dictionary holding a null made a category named None."""
    x = np.arange(5.0)
    by = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None, 2], pa.int32()), pa.array(["z", None, "a"]))
    hm = hotbin.heatmap(x, x, by=by, width=5, height=1)
    assert hm.categories == ("z", "a")  # the dictionary's order, as without nulls
    np.testing.assert_array_equal(hm.values[:, 0], [[1, 0, 0, 0, 0], [0, 0, 1, 0, 1]])
    assert hm.skipped == 2
    # chunks with different dictionaries: one set of labels
    chunked = pa.chunked_array([by, pa.array(["a", None, "q"]).dictionary_encode()])
    hm = hotbin.heatmap(np.arange(8.0), np.zeros(8), by=chunked, width=8, height=1)
    assert None not in hm.categories and set(hm.categories) == {"z", "a", "q"}
    got = [hm.categories[k] for k in np.argmax(hm.values[:, 0], axis=0)]
    labels = ["z", None, "a", None, "a", "a", None, "q"]
    assert [g if hm.values[:, 0, i].sum() else None for i, g in enumerate(got)] == labels
    assert hm.skipped == 3


def test_by_pandas_categorical_with_nan():
    x = np.arange(4.0)
    cat = pd.Categorical(["b", None, "a", "b"], categories=["b", "a"])
    hm = hotbin.heatmap("x", "x", by="c", data=pd.DataFrame({"x": x, "c": cat}), width=4, height=1)
    assert hm.categories == ("b", "a")
    np.testing.assert_array_equal(hm.values[:, 0], [[1, 0, 0, 1], [0, 0, 1, 0]])
    assert hm.skipped == 1


# --- only the named columns are read ------------------------------------------------------

def test_lazy_frame_collects_only_named_columns():
    """A column that cannot be computed is never computed when it is not named."""
    pl = pytest.importorskip("polars")
    lf = pl.LazyFrame({"x": [0.0, 1.0, 2.0], "y": [1.0, None, 2.0], "s": ["a", "b", "c"]})
    lf = lf.with_columns(bad=pl.col("s").cast(pl.Int64, strict=True))
    hm = hotbin.heatmap("x", "y", data=lf, width=2, height=2)
    np.testing.assert_array_equal(hm.counts, np.histogram2d([1.0, 2.0], [0.0, 2.0], bins=2)[0])
    assert hm.dropped == 1
    with pytest.raises(ValueError, match="no column 'z' in data \\(columns: x, y, s, bad\\)"):
        hotbin.heatmap("x", "z", data=lf)


def test_duckdb_relation_reads_only_named_columns():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    rel = con.sql("SELECT i * 0.5 AS \"lon x\", i % 3 AS lat, error('never read') AS boom "
                  "FROM range(10) t(i)")
    hm = hotbin.heatmap("lon x", "lat", data=rel, width=3, height=3)
    i = np.arange(10)
    np.testing.assert_array_equal(hm.counts, np.histogram2d(i % 3, i * 0.5, bins=3)[0])


def test_arrays_beside_names():
    """Names and arrays mix: an array given as weights goes with named coordinates."""
    tbl = _arrow()
    w = np.where(MISSING["w"], np.nan, DATA["w"])
    hm = hotbin.heatmap("x", "y", w, data=Stream(tbl), agg="sum", width=W, height=H)
    ref = hotbin.heatmap("x", "y", "w", data=tbl, agg="sum", width=W, height=H)
    np.testing.assert_array_equal(hm.values, ref.values)
    assert (hm.dropped, hm.skipped) == (ref.dropped, ref.skipped)


def test_timestamps_beyond_int64_nanoseconds_are_named():
    tbl = pa.table({"t": pa.array([np.datetime64("2900-01-01", "us")] * 2), "y": [1.0, 2.0]})
    with pytest.raises(ValueError, match="x: column 't': as int64 nanoseconds"):
        hotbin.heatmap("t", "y", data=tbl)


def test_without_pyarrow():
    """Nullable numbers need no pyarrow; a datetime column names the extra that reads it."""
    t = pd.Series(pd.to_datetime(["2020-01-01", None]))
    df = pd.DataFrame({"x": pd.array([1.5, None], dtype="Float64"), "y": pd.array([1, 2], dtype="Int64"), "t": t})
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "pyarrow", None)
        hm = hotbin.heatmap("x", "y", "y", data=df, agg="sum", width=2, height=1,
                            x_range=(0, 4), y_range=(0, 4))
        with pytest.raises(ModuleNotFoundError, match=r"x: column 't' \(datetime64\[us\]\) needs pyarrow: "
                                                      r'pip install "hotbin\[io\]"'):
            hotbin.heatmap("t", "y", data=df)
    np.testing.assert_array_equal(hm.counts, [[1, 0]])
    assert (hm.values[0, 0], hm.dropped) == (1.0, 1)
