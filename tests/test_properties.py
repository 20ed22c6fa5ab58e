"""Hypothesis property tests: arbitrary inputs equal the NumPy oracle on every backend."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hotbin
from conftest import to_numpy
from test_histogram import oracle

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

floats = hnp.arrays(st.sampled_from([np.float32, np.float64]), st.integers(0, 300),
                    elements=st.floats(-1e6, 1e6, width=32) | st.sampled_from([np.nan, np.inf, -np.inf]))
ints = hnp.arrays(st.sampled_from([np.uint8, np.int16, np.int32, np.int64]), st.integers(0, 300),
                  elements=st.integers(-100, 100).map(abs))
ranges = st.tuples(st.floats(-1e3, 1e3, width=32), st.floats(0, 1e3, width=32)).map(lambda t: (t[0], t[0] + t[1]))


@SETTINGS
@given(a=st.one_of(floats, ints), bins=st.integers(1, 70), r=ranges)
def test_histogram_range(backend, a, bins, r):
    try:
        np.histogram_bin_edges(a[:0], bins, r)
    except ValueError:  # NumPy refuses too many bins for a tiny range: so do we
        with pytest.raises(ValueError, match="Too many bins"):
            hotbin.histogram(a, bins, r, backend=backend)
        return
    h, e = hotbin.histogram(a, bins, r, backend=backend)
    ho, eo = oracle(a, bins, r)
    np.testing.assert_array_equal(to_numpy(e), eo)
    np.testing.assert_array_equal(to_numpy(h), ho)


@SETTINGS
@given(a=ints, edges=st.lists(st.integers(-20, 120), min_size=1, max_size=12).map(sorted))
def test_histogram_edges(backend, a, edges):
    h, _ = hotbin.histogram(a, edges, backend=backend)
    np.testing.assert_array_equal(to_numpy(h), np.histogram(a, edges)[0])


@SETTINGS
@given(a=hnp.arrays(np.float64, st.integers(1, 300), elements=st.floats(-1e9, 1e9)), bins=st.integers(1, 40))
def test_histogram_auto_range_matches_numpy(backend, a, bins):
    try:
        np.histogram_bin_edges(a, bins)
    except ValueError:  # NumPy refuses too many bins for a tiny range: so do we
        with pytest.raises(ValueError, match="Too many bins"):
            hotbin.histogram(a, bins, backend=backend)
        return
    h, e = hotbin.histogram(a, bins, backend=backend)
    hn, en = np.histogram(a, bins)
    np.testing.assert_array_equal(to_numpy(e), en)
    np.testing.assert_array_equal(to_numpy(h), oracle(a, bins)[0])
    assert to_numpy(h).sum() == a.size


@SETTINGS
@given(x=hnp.arrays(np.int32, st.integers(0, 2000), elements=st.integers(-1000, 1000)),
       exclusive=st.booleans())
def test_cumsum(backend, x, exclusive):
    want = np.cumsum(x)
    if exclusive:
        want = np.concatenate([[0], want[:-1]]).astype(want.dtype)[:x.size]
    np.testing.assert_array_equal(to_numpy(hotbin.cumsum(x, exclusive=exclusive, backend=backend)), want)


@SETTINGS
@given(xy=hnp.arrays(np.float64, st.tuples(st.just(2), st.integers(0, 200)),
                     elements=st.floats(-10, 10) | st.just(np.nan)),
       bx=st.integers(1, 9), by=st.integers(1, 9))
def test_histogram2d(backend, xy, bx, by):
    H, _, _ = hotbin.histogram2d(xy[0], xy[1], [bx, by], [[-5, 5], [-3, 8]], backend=backend)
    np.testing.assert_array_equal(to_numpy(H), np.histogram2d(xy[0], xy[1], [bx, by], [[-5, 5], [-3, 8]])[0])
