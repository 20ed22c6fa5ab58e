"""UHI indexing of hotbin.Histogram, checked against boost-histogram on the same data.

Every operation in the tables below runs on a hotbin histogram and on a boost-histogram
filled with the same data over the same edges (no value sits on the top edge, where
NumPy's closed last bin and boost-histogram's open one differ); values, variances, flow
bins and edges must agree. UHI's own conformance suites (``uhi.testing.indexing``) run too.
"""
import numpy as np
import pytest

import hotbin
from hotbin import Histogram
from hotbin.core import fixedpoint
from hotbin.hist_index import WeightedSum

bh = pytest.importorskip("boost_histogram")
uhi_tag = pytest.importorskip("uhi.tag")

TAGS = {"bh": bh, "uhi": uhi_tag}


def _data(rng, kind):
    """``(hotbin histogram, boost-histogram)`` of the same data over the same edges."""
    n = 4000
    x = rng.normal(0.5, 0.45, n)
    y = rng.normal(0.0, 1.2, n)
    w = rng.exponential(size=n) * np.where(rng.random(n) < 0.2, -1.0, 1.0)
    x[:6] = [np.nan, -np.inf, np.inf, -3.0, 3.0, 0.5]
    if kind == "int":  # integer data over integer edges: bh.axis.Integer
        a = rng.integers(-3, 14, n)
        a = a[a != 10]  # 10 is the top edge: NumPy's last bin, boost-histogram's overflow
        h = hotbin.hist(a, bins=np.arange(0, 11))
        b = bh.Histogram(bh.axis.Integer(0, 10), storage=bh.storage.Int64())
        b.fill(a)
        return h, b
    if kind == "variable":
        edges = np.array([-1.0, -0.2, 0.1, 0.15, 0.4, 0.5, 0.8, 1.3, 2.0])
        h = hotbin.hist(x, bins=edges, weights=w)
        b = bh.Histogram(bh.axis.Variable(edges), storage=bh.storage.Weight())
        b.fill(x, weight=w)
        return h, b
    if kind in ("regular", "weighted"):
        weights = w if kind == "weighted" else None
        h = hotbin.hist(x, bins=10, range=(0, 1), weights=weights)
        storage = bh.storage.Weight() if weights is not None else bh.storage.Int64()
        b = bh.Histogram(bh.axis.Variable(h.axes[0].edges), storage=storage)
        b.fill(x, weight=weights) if weights is not None else b.fill(x)
        return h, b
    weights = w if kind == "2d-weighted" else None
    h = hotbin.hist2d(x, y, bins=(6, 8), range=[(0, 1), (-2, 2)], weights=weights)
    b = bh.Histogram(*(bh.axis.Variable(ax.edges) for ax in h.axes),
                     storage=bh.storage.Weight() if weights is not None else bh.storage.Int64())
    b.fill(x, y, weight=weights) if weights is not None else b.fill(x, y)
    return h, b


def _same(got, want):
    """A hotbin result equals a boost-histogram one: histograms bin by bin with flow, and
    their edges; scalars as numbers (counts exactly) or as (value, variance) pairs."""
    if isinstance(want, bh.Histogram):
        assert isinstance(got, Histogram), got
        assert got.ndim == want.ndim
        for ax, bax in zip(got.axes, want.axes):
            np.testing.assert_array_equal(ax.edges, bax.edges)
        if want.storage_type is bh.storage.Int64:
            np.testing.assert_array_equal(got.values(flow=True), want.values(flow=True))
            assert got.values().dtype == np.int64
        else:
            np.testing.assert_allclose(got.values(flow=True), want.values(flow=True), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.variances(flow=True), want.variances(flow=True), rtol=1e-12, atol=1e-12)
    elif isinstance(want, bh.accumulators.WeightedSum):
        assert isinstance(got, WeightedSum), got
        np.testing.assert_allclose([got.value, got.variance], [want.value, want.variance], rtol=1e-12)
    else:
        assert isinstance(got, int), got  # counts stay exact ints (boost-histogram: float sums)
        assert got == want


def _ops_1d(t, e):
    mid = (e[:-1] + e[1:]) / 2  # bin centres: a loc() no rounding can move
    at = t.at if hasattr(t, "at") else t.tag.at  # boost_histogram has it in bh.tag
    return {
        "int": np.s_[3], "negative": np.s_[-2], "first": np.s_[0],
        "loc": np.s_[t.loc(mid[4])], "loc+1": np.s_[t.loc(mid[2]) + 1], "loc-2": np.s_[t.loc(mid[5]) - 2],
        "underflow": np.s_[t.underflow], "overflow": np.s_[t.overflow],
        "loc below": np.s_[t.loc(e[0] - 5)], "loc above": np.s_[t.loc(e[-1] + 5)],
        "all": np.s_[:], "ellipsis": np.s_[...], "slice": np.s_[2:6], "open upper": np.s_[5:],
        "open lower": np.s_[:5], "negative slice": np.s_[-4:-1], "beyond": np.s_[-100:100],
        "loc slice": np.s_[t.loc(mid[1]):t.loc(mid[6])], "loc mixed": np.s_[2:t.loc(mid[4]) + 1],
        "flow slice": np.s_[t.underflow:t.overflow],
        "rebin": np.s_[::t.rebin(2)], "bare rebin": np.s_[t.rebin(2)], "rebin remainder": np.s_[1:8:t.rebin(3)],
        "loc rebin": np.s_[t.loc(mid[1]):t.loc(mid[7]):t.rebin(2)], "rebin 1": np.s_[2:5:t.rebin(1)],
        "sum": np.s_[::sum], "bare sum": np.s_[sum], "sum range": np.s_[2:5:sum],
        "sum no flow": np.s_[0:len:sum], "sum open lower": np.s_[:4:sum], "sum open upper": np.s_[4::sum],
        "sum loc": np.s_[t.loc(mid[1]):t.loc(mid[3]):sum], "sum from underflow": np.s_[t.loc(e[0] - 9):3:sum],
        "dict": {0: np.s_[1:4]}, "at": np.s_[at(-1)], "at top": np.s_[at(len(e) - 1)],
        "at sum": np.s_[at(-1):at(3):sum], "at slice": np.s_[at(2):at(6)],
    }


def _ops_2d(t, ex, ey):
    my = (ey[:-1] + ey[1:]) / 2
    return {
        "ints": np.s_[1, 2], "negative": np.s_[-1, -1], "flow corners": np.s_[t.underflow, t.overflow],
        "loc": np.s_[t.loc(0.3), t.loc(my[5])], "loc mixed": np.s_[2, t.loc(my[1])],
        "row": np.s_[1, :], "column": np.s_[:, 3], "flow row": np.s_[t.overflow, :],
        "slices": np.s_[1:4, 2:7], "rebin both": np.s_[::t.rebin(2), ::t.rebin(3)],
        "rebin and loc": np.s_[t.loc(0.1):t.loc(0.9):t.rebin(2), t.loc(my[1]):t.loc(my[6])],
        "sum both": np.s_[::sum, ::sum], "sum one": np.s_[:, ::sum], "sum range": np.s_[1:3:sum, 2:5],
        "pick and sum": np.s_[1, ::sum], "pick and sum range": np.s_[2, 1:6:sum],
        "sum and rebin": np.s_[::sum, ::t.rebin(4)],
        "ellipsis sum": np.s_[..., ::sum], "ellipsis": np.s_[...], "leading ellipsis": np.s_[:, ...],
        "dict sum": {0: np.s_[::sum]}, "dict pick": {1: 3}, "dict both": {0: 1, 1: np.s_[2:5]},
        "bare": np.s_[sum, t.rebin(2)],
    }


@pytest.mark.parametrize("tag", sorted(TAGS))
@pytest.mark.parametrize("kind", ["regular", "weighted", "variable", "int"])
def test_1d_table_against_boost_histogram(rng, kind, tag):
    h, b = _data(rng, kind)
    np.testing.assert_allclose(h.values(flow=True), b.values(flow=True), rtol=1e-12)  # same start
    e = h.axes[0].edges.astype(np.float64)
    for name, ix in _ops_1d(TAGS[tag], e).items():
        if kind == "int" and "rebin" in name and name != "rebin 1":
            continue  # boost-histogram cannot rebin an Integer axis; the variable case covers rebinning
        try:
            _same(h[ix], b[ix])
        except AssertionError as exc:
            raise AssertionError(f"{kind} {name}: {exc}") from exc


def test_rebin_integer_edges_as_variable(rng):
    """hotbin rebins integer edges (boost-histogram's Integer axis refuses; Variable agrees)."""
    h, b = _data(rng, "int")
    v = bh.Histogram(bh.axis.Variable(np.arange(0, 11)), storage=bh.storage.Int64())
    v[...] = b.values(flow=True)
    for ix in (np.s_[::bh.rebin(2)], np.s_[1:8:bh.rebin(3)], np.s_[bh.loc(2):bh.loc(9):bh.rebin(2)]):
        got = h[ix]
        _same(got, v[ix])
        assert got.axes[0].edges.dtype == np.int64


@pytest.mark.parametrize("tag", sorted(TAGS))
@pytest.mark.parametrize("kind", ["2d", "2d-weighted"])
def test_2d_table_against_boost_histogram(rng, kind, tag):
    h, b = _data(rng, kind)
    ex, ey = (ax.edges for ax in h.axes)
    for name, ix in _ops_2d(TAGS[tag], ex, ey).items():
        try:
            _same(h[ix], b[ix])
        except AssertionError as exc:
            raise AssertionError(f"{kind} {name}: {exc}") from exc


def test_rebin_by_groups_and_edges(rng):
    """boost-histogram's rebin(groups=...) / rebin(edges=...): the same bins; over a bounded
    slice the cut-away bins go to the flow bins, as for a rebin by a factor."""
    h, b = _data(rng, "variable")
    e = h.axes[0].edges
    for step in (bh.rebin(groups=[1, 3, 2, 2]), bh.rebin(edges=e[[0, 2, 3, 7, 8]])):
        _same(h[::step], b[::step])
    _same(h[2:6:bh.rebin(groups=[2, 2])], b[2:6:bh.rebin(2)])
    _same(h[1:7:bh.rebin(edges=e[[1, 4, 7]])], b[1:7:bh.rebin(3)])


def test_index_results_are_copies(rng):
    h, _ = _data(rng, "regular")
    before = h.values(flow=True)
    for part in (h[...], h[:], h[2:5]):
        part[0] = 12345
        part[bh.underflow] = 777
    np.testing.assert_array_equal(h.values(flow=True), before)


def test_sliced_histograms_merge_and_fill(rng):
    """A slice is a histogram like any other: it adds to a histogram of the same edges and
    fills under its own edges (the slice's last bin closed, as NumPy's)."""
    h, b = _data(rng, "regular")
    part = h[bh.loc(0.25):bh.loc(0.75)]
    assert (part + part).values(flow=True).tolist() == (2 * part.values(flow=True)).tolist()
    extra = rng.uniform(-0.5, 1.5, 500)
    part.fill(extra)
    e = part.axes[0].edges
    ref = hotbin.hist(extra, bins=e)
    np.testing.assert_array_equal(part.values(), h[bh.loc(0.25):bh.loc(0.75)].values() + ref.values())


def test_deterministic_slices_stay_deterministic(rng):
    """Sums of fixed-point words are exact, so slicing commutes with merging, bit for bit."""
    x = rng.normal(0.5, 0.45, 6000)
    w = rng.exponential(size=x.size) * 1e3 * np.where(rng.random(x.size) < 0.3, -1.0, 1.0)
    bounds = (fixedpoint.max_abs(w), x.size)
    parts = [hotbin.hist(x[s], 12, (0, 1), w[s], deterministic=True, bounds=bounds)
             for s in (slice(0, 2500), slice(2500, None))]
    whole = hotbin.hist(x, 12, (0, 1), w, deterministic=True, bounds=bounds)
    for ix in (np.s_[2:9], np.s_[::bh.rebin(3)], np.s_[bh.loc(0.1):bh.loc(0.9):bh.rebin(2)]):
        got = parts[0][ix] + parts[1][ix]
        assert got.deterministic and got == whole[ix]
        assert got.values(flow=True).tobytes() == whole[ix].values(flow=True).tobytes()
        for a, b in zip(got._fixed[0], whole[ix]._fixed[0]):  # the words themselves, canonical
            assert a.tobytes() == b.tobytes()
    total = whole[::sum]
    assert isinstance(total, WeightedSum)
    np.testing.assert_allclose(total.value, w.sum(), rtol=1e-12)
    np.testing.assert_allclose(total.variance, (w * w).sum(), rtol=1e-12)
    b = bh.Histogram(bh.axis.Variable(whole.axes[0].edges), storage=bh.storage.Weight())
    b.fill(x, weight=w)
    _same(whole[3:7], b[3:7])
    _same(whole[1:10:sum], b[1:10:sum])


def test_loc_of_the_top_edge_is_the_last_bin():
    """hotbin's (NumPy's) last bin is closed: loc(top edge) is the bin a fill of it lands in
    (boost-histogram, whose last bin is open, gives the overflow bin)."""
    h = hotbin.hist(np.array([0.0, 1.0, 1.0, 2.5]), bins=4, range=(0, 1))
    assert h[bh.loc(1.0)] == 2 == h[-1]
    assert h[bh.overflow] == 1 and h[bh.loc(2.5)] == 1
    assert h[bh.loc(np.nan)] == 1  # NaN: the overflow bin, where hist puts it
    assert h[bh.loc(0.0)] == 1 and h[bh.loc(-1e-300)] == 0


def test_bad_indices():
    h = hotbin.hist(np.arange(10.0), bins=5)
    with pytest.raises(IndexError, match="rebin"):
        h[::2]
    with pytest.raises(IndexError, match="no bins"):
        h[4:2]
    with pytest.raises(IndexError, match="no bins"):
        h[1:2:bh.rebin(3)]
    with pytest.raises(IndexError, match="out of range"):
        h[5]
    with pytest.raises(IndexError, match="out of range"):
        h[bh.underflow - 1]
    with pytest.raises(TypeError, match="loc"):
        h[1.5]
    with pytest.raises(IndexError, match="2 indices|takes 1"):
        h[0, 0]
    with pytest.raises(ValueError, match="groups"):
        h[::bh.rebin(groups=[2, 2])]
    with pytest.raises(IndexError, match="integer"):
        h["a"]


# --- setting ---------------------------------------------------------------------------

def _set_both(h, b, ix, value, bvalue=None):
    h[ix] = value
    b[ix] = value if bvalue is None else bvalue
    _same(h, b)


def test_setting_counts_as_boost_histogram(rng):
    h, b = _data(rng, "regular")
    _set_both(h, b, 3, 5)
    _set_both(h, b, -1, 11)
    _set_both(h, b, bh.underflow, 7)
    _set_both(h, b, uhi_tag.overflow, 8)
    _set_both(h, b, bh.loc(0.55), 9)
    _set_both(h, b, np.s_[2:5], np.array([1, 2, 3]))
    _set_both(h, b, np.s_[:3], np.array([40, 41, 42, 43]))  # one more: the underflow bin too
    _set_both(h, b, np.s_[7:], np.array([50, 51, 52]))
    _set_both(h, b, np.s_[7:], np.array([60, 61, 62, 63]))  # and the overflow bin
    _set_both(h, b, np.s_[:], np.arange(12))
    _set_both(h, b, np.s_[4:6], 3)
    h2, b2 = _data(rng, "regular")
    _set_both(h, b, np.s_[:], h2, b2)  # a histogram: its flow bins too
    with pytest.raises(ValueError, match="entries"):
        h[1:11] = h2
    with pytest.raises(ValueError, match="entries"):
        h[1:4] = np.array([1, 2])
    with pytest.raises(ValueError, match="integer sums"):
        h[0] = 2.5
    with pytest.raises(IndexError, match="step"):
        h[::bh.rebin(2)] = 1
    with pytest.raises(IndexError, match="step"):
        h[sum] = 1
    hi = hotbin.hist(rng.normal(size=100), 4, (-1, 1), weights=rng.integers(1, 5, 100))
    hi[1] = WeightedSum(7, 9.0)
    assert hi.values()[1] == 7 and hi.values().dtype == np.int64 and hi.variances()[1] == 9.0
    with pytest.raises(ValueError, match="integer sums"):
        hi[1] = WeightedSum(7.5, 9.0)


def test_setting_2d_and_weighted_as_boost_histogram(rng):
    h, b = _data(rng, "2d")
    _set_both(h, b, np.s_[0:2, 1], np.array([4, 5]))
    _set_both(h, b, np.s_[bh.underflow, ...], 42)
    _set_both(h, b, {0: 1, 1: np.s_[2:4]}, np.array([6, 7]))
    _set_both(h, b, np.s_[0:2, 0:2], np.array([[1], [2]]))  # broadcast along y
    hw, bw = _data(rng, "weighted")
    _set_both(hw, bw, 2, WeightedSum(3.0, 4.0), bh.accumulators.WeightedSum(3.0, 4.0))
    _set_both(hw, bw, np.s_[4:6], np.array([[1.0, 2.0], [3.0, 5.0]]))
    hw2, bw2 = _data(rng, "weighted")
    _set_both(hw, bw, np.s_[...], hw2, bw2)
    with pytest.raises(ValueError, match="variance"):
        hw[1] = 3.0
    hd = hotbin.hist(np.arange(5.0), 5, weights=np.ones(5), deterministic=True)
    with pytest.raises(TypeError, match="deterministic"):
        hd[0] = WeightedSum(1.0, 1.0)


# --- UHI's own conformance suites ------------------------------------------------------

try:
    from uhi.testing import indexing as _indexing
except ImportError:  # an older uhi: the tables above still run
    _indexing = None

if _indexing is not None:
    class TestUHIIndexing1D(_indexing.Indexing1D[Histogram]):
        @classmethod
        def make_histogram(cls) -> Histogram:
            return Histogram.from_uhi(cls.get_uhi())

    class TestUHIIndexing2D(_indexing.Indexing2D[Histogram]):
        @classmethod
        def make_histogram(cls) -> Histogram:
            return Histogram.from_uhi(cls.get_uhi())

    class TestUHIIndexing3D(_indexing.Indexing3D[Histogram]):
        @classmethod
        def make_histogram(cls) -> Histogram:
            return Histogram.from_uhi(cls.get_uhi())


# --- any index, as boost-histogram answers it ---------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@st.composite
def _index(draw, n):
    """One axis' index: an int, a locator, or a slice of int / locator ends and a rebin or sum."""
    loc = st.floats(-0.4, 1.4).filter(lambda v: v != 1.0).map(bh.loc)  # 1.0: the top edge differs
    end = st.one_of(st.none(), st.integers(-n - 3, n + 3), loc, st.sampled_from([bh.underflow, bh.overflow]))
    pick = st.one_of(st.integers(-n, n - 1), loc, st.sampled_from([bh.underflow, bh.overflow]))
    step = st.one_of(st.none(), st.just(sum), st.integers(1, 4).map(bh.rebin))
    return draw(st.one_of(pick, st.builds(slice, end, end, step)))


@pytest.mark.parametrize("kind", ["weighted", "2d"])
def test_any_index_as_boost_histogram(kind):
    h, b = _data(np.random.default_rng(7), kind)
    shape = h.shape

    @hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
    @hypothesis.given(st.tuples(*[_index(n) for n in shape]))
    def check(ix):
        try:
            want = b[ix]
        except (IndexError, ValueError, TypeError, RuntimeError):
            want = None
        if want is None or isinstance(want, bh.Histogram) and 0 in want.axes.size:
            # boost-histogram refuses, or (a rebin wider than a slice of a Variable axis)
            # makes an axis of no bins, which its Regular axis refuses: hotbin refuses both
            with pytest.raises((IndexError, ValueError, TypeError)):
                h[ix]
            return
        _same(h[ix], want)

    check()


@st.composite
def _set_index(draw, n):
    """One axis' index to set: an int, a locator, or a plain slice of int / locator ends."""
    loc = st.floats(-0.4, 1.4).filter(lambda v: v != 1.0).map(bh.loc)
    end = st.one_of(st.none(), st.integers(-n - 3, n + 3), loc, st.sampled_from([bh.underflow, bh.overflow]))
    pick = st.one_of(st.integers(-n, n - 1), loc, st.sampled_from([bh.underflow, bh.overflow]))
    return draw(st.one_of(pick, st.builds(slice, end, end)))


@pytest.mark.parametrize("kind", ["regular", "2d"])
def test_any_setting_as_boost_histogram(kind):
    """Set any bins with a scalar or an array as long as the slice, one or two longer (the
    flow bins), or of length 1: boost-histogram and hotbin take or refuse the same, alike."""
    rng = np.random.default_rng(11)  # the values set

    @hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
    @hypothesis.given(st.data())
    def check(data):
        h, b = _data(np.random.default_rng(3), kind)
        ix = tuple(data.draw(_set_index(n)) for n in h.shape)
        try:
            shape = h[ix].shape if any(isinstance(x, slice) for x in ix) else ()
        except IndexError:
            return  # a slice of no bins: nothing to set
        extra = [data.draw(st.sampled_from([0, 1, 2, "one"])) for _ in shape]
        dims = tuple(1 if x == "one" else s + x for s, x in zip(shape, extra))
        value = rng.integers(0, 100, dims) if dims else int(rng.integers(0, 100))
        try:
            b[ix] = value
        except (ValueError, IndexError):
            with pytest.raises((ValueError, IndexError)):
                h[ix] = value
            return
        h[ix] = value
        _same(h, b)

    check()
