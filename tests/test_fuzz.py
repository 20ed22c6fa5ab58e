"""Fuzzing against an oracle: arbitrary arguments get NumPy's answer or a clear error.

For every generated call, NumPy is asked first. Where NumPy answers, hotbin must
give the same answer (counts and sums equal, edges equal in value and dtype, up
to hotbin's documented differences: int64 counts, sums that never wrap). Where
NumPy refuses, hotbin must refuse with a ValueError or TypeError. The CLI must
answer 0, or 1 with one line on stderr. Findings are kept as ``@example``s.
"""
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import hotbin
from hotbin.backend import to_host
from hotbin.cli import main

# CI replays the same examples every run (derandomize); HOTBIN_FUZZ_EXAMPLES=5000 explores afresh.
_EXPLORE = int(os.environ.get("HOTBIN_FUZZ_EXAMPLES", "0"))
SETTINGS = settings(max_examples=_EXPLORE or 150, derandomize=not _EXPLORE, deadline=None,
                    suppress_health_check=list(HealthCheck))

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


def _numpy(ref):
    """NumPy's answer, or the exception it raised."""
    try:
        return ref(), None
    except Exception as exc:  # noqa: BLE001 - any refusal of NumPy's is a refusal
        return None, exc


def _same(got, want):
    """hotbin's result equals NumPy's, up to hotbin's documented differences."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got, want = np.asarray(to_host(got)), np.asarray(want)
    assert got.shape == want.shape
    if want.dtype.kind in "biu" or want.dtype == object:
        # counts, or integer sums that NumPy lets wrap: equal modulo NumPy's dtype
        np.testing.assert_array_equal(got.astype(want.dtype), want)
    elif want.dtype.kind in "fc" and got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)  # int64 counts where NumPy gives float64
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)


def _wide(w):
    """Integer weights as int64 for the oracle: NumPy sums them in their own dtype (uint8
    sums wrap at 256), hotbin in int64 that never wraps (DESIGN.md §4)."""
    if isinstance(w, np.ndarray) and w.dtype.kind in "biu":
        return w.astype(np.int64)
    return w


def _nan_edges(bins) -> bool:
    try:
        e = np.asarray(bins, dtype=float)
    except (TypeError, ValueError):
        return False
    return e.ndim >= 1 and bool(np.isnan(e).any())


def _refused_by_design(data, weights=None, bins=None):
    """hotbin's documented refusals where NumPy answers (DESIGN.md §4, issue #13): object
    and complex values (and None, which NumPy turns into an object array) are a
    TypeError, and so are strings; weights of another shape than the values, and NaN among explicit edges,
    are a ValueError (NumPy lets both through when there is no data to count)."""
    arrays = [np.asarray(d) for d in data]
    if any(a.dtype.kind in "OcUSV" for a in arrays):
        return TypeError
    if weights is not None and any(np.shape(weights) != a.shape for a in arrays):
        return ValueError
    if bins is not None and not isinstance(bins, str) and _nan_edges(bins):
        return ValueError
    return None


def _sums_in_weights_dtype(exc) -> bool:
    """NumPy's failure to accumulate in the weights' own dtype (bool weights with explicit
    edges): hotbin accumulates in int64/float64 instead (DESIGN.md §4), so it may answer."""
    return isinstance(exc, TypeError) and "Cannot cast ufunc 'add' output" in str(exc)


def _answers_or_refuses_clearly(hot):
    try:
        hot()
    except CLEAR:
        pass


def _agree(hot, ref, data=(), weights=None, bins=None):
    """``hot()`` answers as ``ref()`` (NumPy) does, or refuses clearly where NumPy refuses
    (or where hotbin refuses by design: :func:`_refused_by_design`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy warns on density of nothing; so may hotbin
        want, refused = _numpy(ref)
        if refused is not None and _sums_in_weights_dtype(refused):
            _answers_or_refuses_clearly(hot)  # hotbin sums in int64/float64 by design
            return
        if refused is not None:  # refused clearly, or as NumPy (inputs hotbin hands to NumPy)
            with pytest.raises(CLEAR + (type(refused),)):
                hot()
            return
        by_design = _refused_by_design(data, weights, bins)
        if by_design is not None:
            try:
                got = hot()
            except CLEAR:  # the refusal by design, or a clear refusal found first
                return
        else:
            got = hot()
    _same(got, want)


@SETTINGS
@given(a=arrays, b=bins, r=ranges, w=arrays, density=st.booleans())
@example(a=None, b=0, r=None, w=None, density=False)  # finding: an AttributeError (fixed)
@example(a=np.array([0j]), b=1, r=None, w=np.array([0.]), density=False)  # complex: refused by design
@example(a=np.array([]), b=[np.nan], r=None, w=None, density=False)  # NaN edge: refused by design
@example(a=np.array([]), b=1, r=None, w=np.array([], object), density=True)  # NumPy's own error
@example(a=np.array([0.]), b=[0.0, 1.0], r=None, w=np.array([False]), density=False)  # bool weights
@example(a=np.zeros(3), b=1, r=None, w=np.array([0, 1, 255], np.uint8), density=True)  # uint8 sums wrap in NumPy
@example(a=np.zeros(3), b=[], r=None, w=np.zeros(3, bool), density=False)  # no edges, bool weights
def test_histogram_arguments(a, b, r, w, density):
    _agree(lambda: hotbin.histogram(a, b, r, density, w),
           lambda: np.histogram(a, b, r, density, _wide(w)), [a], w, b)


@SETTINGS
@given(x=arrays, y=arrays, b=bins, w=arrays)
@example(x=np.zeros(2), y=np.array(["", ""]), b=[0.0, 0.0, 0.0], w=np.zeros(2))  # strings: refused
@example(x=np.array([]), y=np.array([]), b=1, w=np.array(["2020-01-01"], "datetime64[D]"))  # bad weights
def test_2d_arguments(x, y, b, w):
    _agree(lambda: hotbin.histogram2d(x, y, b, weights=w),
           lambda: np.histogram2d(x, y, b, weights=_wide(w)), [x, y], w, b)


@SETTINGS
@given(x=arrays, y=arrays, w=arrays)
@example(x=np.array([0.0] * 6 + [1.7976931348623157e308]), y=np.zeros(7), w=np.zeros(7))  # overflow warning
def test_heatmap_arguments(x, y, w):
    """Heatmaps have no NumPy twin: a clear error, or every point accounted for."""
    try:
        hm = hotbin.heatmap(x, y, w, width=7, height=5)
    except CLEAR:
        return
    n = len(np.asarray(x))
    assert hm.counts.shape == (5, 7)
    if w is None:
        assert int(hm.counts.sum()) + hm.dropped == n
    else:
        assert 0 <= hm.dropped <= n


@SETTINGS
@given(x=arrays, w=arrays, minlength=st.one_of(st.integers(-3, 40), st.floats(0, 5), st.text(max_size=2)))
@example(x=np.array([]), w=None, minlength=3)  # finding: NumPy gives [0, 0, 0]
def test_bincount_arguments(x, w, minlength):
    _agree(lambda: hotbin.bincount(x, w, minlength), lambda: np.bincount(x, w, minlength), [x], w)


@SETTINGS
@given(x=arrays, exclusive=st.booleans())
def test_cumsum_arguments(x, exclusive):
    def ref():
        c = np.cumsum(x)
        return np.concatenate([np.zeros(1, c.dtype), c[:-1]]) if exclusive and c.size else c

    _agree(lambda: hotbin.cumsum(x, exclusive=exclusive), ref, [x])


def _luma_reference(img):
    img = np.asarray(img)
    if img.dtype != np.uint8 or img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] not in (3, 4)):
        return None
    if img.ndim == 2:
        return np.bincount(img.ravel(), minlength=256)
    r, g, b = (img[..., c].astype(np.int64) for c in range(3))
    return np.bincount(((2126 * r + 7152 * g + 722 * b) // 10000).ravel(), minlength=256)


@SETTINGS
@given(img=st.one_of(arrays, st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 6)).map(
    lambda s: np.full(s, 3, np.uint8))))
def test_image_arguments(img):
    """8-bit gray/RGB(A) images match the exact luma reference; anything else is refused or kept."""
    want = _luma_reference(img)
    if want is not None:
        np.testing.assert_array_equal(to_host(hotbin.luminance_histogram(img)), want)
    else:
        try:
            hotbin.luminance_histogram(img)
        except CLEAR:
            pass
    try:
        eq = hotbin.equalize(img)
    except CLEAR:
        assert want is None  # every 8-bit gray/RGB(A) image can be equalized
        return
    assert eq.shape == np.shape(img) and eq.dtype == np.asarray(img).dtype


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".csv", ".parquet", ".png", ".tsv.gz"]))
@example(data=b"PAR1", suffix=".parquet")
@example(data=b"\x89PNG\r\n\x1a\n", suffix=".png")
@example(data=b"x,y\n1,nan\n,\n", suffix=".csv")
def test_file_readers(tmp_path_factory, capfd, data, suffix):
    d = tmp_path_factory.mktemp("fuzz")
    path = d / f"f{suffix}"
    path.write_bytes(data)
    commands = [["heatmap", str(path), "--x", "x", "--y", "y", "-o", str(d / "o.png")]]
    if suffix == ".png":
        commands.append(["image", str(path)])
    for argv in commands:
        capfd.readouterr()
        rc = main(argv)
        err = capfd.readouterr().err.strip()
        assert rc in (0, 1)
        if rc == 1:
            assert err and "Traceback" not in err
