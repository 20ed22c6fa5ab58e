"""Fuzzing (issue #8): arbitrary arguments and arbitrary file bytes never crash.

The API must answer or raise a ValueError/TypeError; the CLI must print one line
and exit 1. Findings are kept below as regression examples.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import hotbin
from hotbin.cli import main

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
# density of empty data divides 0 by 0 and warns, exactly as NumPy does
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

arrays = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=20).map(np.array),
    st.lists(st.integers(-2**70, 2**70), max_size=20).map(lambda v: np.array(v, dtype=object)),
    st.lists(st.integers(-300, 300), max_size=20).map(lambda v: np.array(v, np.int64)),
    st.lists(st.integers(0, 255), max_size=20).map(lambda v: np.array(v, np.uint8)),
    st.lists(st.booleans(), max_size=20).map(np.array),
    st.lists(st.complex_numbers(max_magnitude=1e3), max_size=5).map(np.array),
    st.lists(st.text(max_size=3), max_size=5).map(np.array),
    st.just(np.zeros((2, 3, 0))), st.just(np.arange(24.0).reshape(2, 3, 4)),
    st.just(np.array(["2020-01-01"], "datetime64[D]")), st.just(np.float64(3.5)), st.none(),
)
bins = st.one_of(st.integers(-3, 70), st.floats(allow_nan=True), st.text(max_size=6),
                 st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6),
                 st.lists(st.lists(st.integers(-5, 5), max_size=3), max_size=3), st.none())
ranges = st.one_of(st.none(), st.tuples(st.floats(allow_nan=True, allow_infinity=True),
                                        st.floats(allow_nan=True, allow_infinity=True)),
                   st.lists(st.integers(-5, 5), max_size=3), st.text(max_size=3))
CLEAR = (ValueError, TypeError)


def _clear(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except CLEAR:
        pass


@SETTINGS
@given(a=arrays, b=bins, r=ranges, w=arrays, density=st.booleans())
@example(a=None, b=0, r=None, w=None, density=False)  # finding: an AttributeError (fixed)
def test_histogram_arguments(a, b, r, w, density):
    _clear(hotbin.histogram, a, b, r, weights=w, density=density)


@SETTINGS
@given(x=arrays, y=arrays, b=bins, w=arrays)
def test_2d_arguments(x, y, b, w):
    _clear(hotbin.histogram2d, x, y, b, weights=w)
    _clear(hotbin.heatmap, x, y, w, width=7, height=5)


@SETTINGS
@given(x=arrays, w=arrays, minlength=st.integers(-3, 40))
def test_bincount_cumsum_arguments(x, w, minlength):
    _clear(hotbin.bincount, x, w, minlength)
    _clear(hotbin.cumsum, x)


@SETTINGS
@given(img=st.one_of(arrays, st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 6)).map(
    lambda s: np.full(s, 3, np.uint8))), b=bins)
def test_image_arguments(img, b):
    _clear(hotbin.luminance_histogram, img, b)
    _clear(hotbin.equalize, img)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".csv", ".parquet", ".png", ".tsv.gz"]))
@example(data=b"PAR1", suffix=".parquet")
@example(data=b"\x89PNG\r\n\x1a\n", suffix=".png")
@example(data=b"x,y\n1,nan\n,\n", suffix=".csv")
def test_file_readers(tmp_path_factory, data, suffix):
    d = tmp_path_factory.mktemp("fuzz")
    path = d / f"f{suffix}"
    path.write_bytes(data)
    rc = main(["heatmap", str(path), "--x", "x", "--y", "y", "-o", str(d / "o.png")])
    assert rc in (0, 1)
    if suffix == ".png":
        assert main(["image", str(path)]) in (0, 1)
