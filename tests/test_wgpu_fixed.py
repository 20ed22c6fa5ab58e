"""The wgpu backend's fixed-point sums (kernels/fixed.wgsl, backend/wgpu/fixed.py).

A float32 weight's two words come from integer arithmetic on its bits (WGSL has no float64);
they must be the words :func:`hotbin.core.fixedpoint.split` computes in float64, bit for bit, at
every shift: whole words, fractions kept exactly, fractions rounded once and (negative weights
far below the quantum) twice. Checked one weight per bin against ``split`` itself, then sums
over cells (hot cells, categories, NaN, chunks, the cached layout) against the cpu backend,
and the front door: ``deterministic=True`` bitwise the cpu backend's, float sums and means
to rounding. Runs on any WebGPU adapter (lavapipe in CI).
"""
import numpy as np
import pytest

import hotbin
from hotbin.core import fixedpoint
from hotbin.core import reductions as R
from hotbin.backend import cpu as C
from hotbin.core.binning import histogram2d_rules, histogram_rule

pytest.importorskip("wgpu", reason="wgpu-py not installed")
from hotbin.backend import wgpu as W  # noqa: E402
from hotbin.backend.wgpu import device as D  # noqa: E402

if not W.available():
    pytest.skip("no WebGPU adapter (install mesa-vulkan-drivers for lavapipe)", allow_module_level=True)

pytestmark = pytest.mark.wgpu

from wgpu_counters import counters  # noqa: E402,F401  (autouse)

RANGE = [(0.0, 1.0), (0.0, 1.0)]


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)


def folded_split(w, s):
    """(2, n) words of each weight, as fixedpoint.split gives them, folded (0 <= lo < 2**32)."""
    return np.asarray(fixedpoint.fold(np.stack(fixedpoint.split(w, s))))


def one_per_bin(w):
    """Values putting weight k alone in bin k, and the rule of those bins."""
    x = (np.arange(w.size) + 0.5).astype(np.float32)
    return x, histogram_rule(x, w.size, (0, w.size))


@pytest.mark.parametrize("s", [-40, 0, 30, 64, 90, 200])
def test_words_of_every_shift(rng, s):
    """Weights of every exponent a scale meets (shifts from whole words to far below the
    quantum, subnormals, ties at each rounding), each alone in its bin: the device's words
    are split's exactly."""
    mant = rng.integers(1 << 23, 1 << 24, 600).astype(np.float64)
    mant[:40] = (1 << 23) + np.arange(40) * (1 << 18)  # many trailing zeros: exact halves
    exps = np.arange(600) % 200 - 149 - 23  # e of w = mant * 2**e, every exponent in turn
    w = np.ldexp(mant, exps)
    w *= np.where(np.arange(600) % 3 == 0, -1.0, 1.0)
    w = w.astype(np.float32)
    sub = (rng.integers(1, 1 << 23, 50).astype(np.uint32)).view(np.float32)
    w = np.concatenate([w, sub, -sub, np.float32([0.0, -0.0, 1.0, -1.0, 0.5, -0.5])])
    big = 2.0 ** (94 - 16 - s)  # the largest |w| the scale holds for this many weights
    w = w[np.abs(w.astype(np.float64)) < big]
    x, rule = one_per_bin(w)
    got = W.histogram(x, rule, w, R.words(s))
    np.testing.assert_array_equal(got, folded_split(w, s))
    np.testing.assert_array_equal(got, C.histogram(x, rule, w, R.words(s)))


@pytest.mark.parametrize("s", [0, 64, 150])
def test_words_at_ties(s):
    """Weights ±a * 2**-d quanta whose fraction is a tie, or a unit either side of one, at every
    shift d: once rounded (d > 32), and twice for negative weights (d > 53: float64 first
    rounds 1 - a * 2**-d to 53 bits, then rint; a ``tie - 2**(d - 54)`` becomes a tie only
    then)."""
    vals = set()
    for d in range(1, 110):
        t = d - 32
        cands = {1, 2, 3, (1 << 24) - 1, 1 << 23, 3 << 21}
        for odd in (1, 3, 5, 7, 2**23 - 1):
            if t >= 1:
                tie = odd << (t - 1)
                cands |= {tie - 1, tie, tie + 1}
                if d > 53:
                    cands |= {tie - (1 << (d - 54)), tie + (1 << (d - 54))}
            cands |= {odd << 20, (odd << 21) - 1, (odd << 21) + 1}
        for a in cands:
            if 0 < a < 1 << 24:
                vals |= {(a, 32 - d - s)}
    w = np.array([np.ldexp(float(a), e) for a, e in sorted(vals)])
    w = np.concatenate([w, -w]).astype(np.float32)
    w = w[(w != 0) & np.isfinite(w)]
    x, rule = one_per_bin(w)
    np.testing.assert_array_equal(W.histogram(x, rule, w, R.words(s)), folded_split(w, s))


@pytest.mark.parametrize("hot", [0.0, 0.9, 1.0])
@pytest.mark.parametrize("bins", [(16, 24), (300, 200)])
def test_cell_sums_equal_cpu(rng, hot, bins, monkeypatch):
    """Sums of many weights a cell, a hot cell taking long runs (three workgroups), NaN
    weights skipped, categories: the cpu backend's words, the counts of each cell's values,
    and the points in a cell."""
    monkeypatch.setattr(D.gpu(), "workgroups", 3)
    n = 40_009
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    h = rng.random(n) < hot
    x[h], y[h] = 0.31, 0.77
    x[::101], y[::103] = np.nan, 1.5
    w = (rng.normal(size=n) * 2.0 ** rng.integers(-30, 20, n)).astype(np.float32)
    w[::17] = np.nan
    rx, ry = histogram2d_rules(x, y, bins, RANGE)
    s = fixedpoint.scale_for(fixedpoint.max_abs(np.nan_to_num(w)), n)

    def want_words(by):
        return C.histogram2d(x, y, rx, ry, w, R.words(s), by=by)[0]

    for by in (None, (rng.integers(-1, 5, n), 4)):
        got, kept = W.histogram2d(x, y, rx, ry, w, R.words(s), by=by)
        want, kept_cpu = C.histogram2d(x, y, rx, ry, w, R.words(s), by=by)
        np.testing.assert_array_equal(got, want)
        assert kept == kept_cpu
        got, _ = W.histogram2d(x, y, rx, ry, w, R.MEAN, by=by)
        want, _ = C.histogram2d(x, y, rx, ry, w, R.MEAN, by=by)
        np.testing.assert_array_equal(got[1], want[1])
        # the value of the words at this call's scale (the test's: its largest |w| and size);
        # the cpu's float64 running sums agree within their rounding (relative to sum |w|) and
        # the quantum (half of 2**-s a weight: a cell of tiny weights among huge ones)
        np.testing.assert_array_equal(got[0], fixedpoint.combine(want_words(by), s))
        size = C.histogram2d(x, y, rx, ry, np.abs(w), R.MEAN, by=by)[0][0]
        assert (np.abs(got[0] - want[0]) <= 1e-12 * size + got[1] * 2.0 ** -(s + 1)).all()


def test_small_storage_chunks_and_layouts(rng, monkeypatch):
    """WebGPU's guaranteed 16 KiB of workgroup memory (the cached layout sooner), inputs
    larger than a chunk, strided and big-endian arrays, 8-bit values widened."""
    g = D.gpu()
    monkeypatch.setattr(g, "wg_words", 4096)
    monkeypatch.setattr(g, "chunk_bytes", 4096)
    n = 30_002
    x, y = rng.random((n, 2), np.float32), rng.random(n, np.float32)
    w = rng.normal(size=n).astype(">f4")
    rx, ry = histogram2d_rules(x[:, 1], y, (40, 40), RANGE)
    s = 60
    got = W.histogram2d(x[:, 1], y, rx, ry, w, R.words(s))
    want = C.histogram2d(x[:, 1], y, rx, ry, w, R.words(s))
    np.testing.assert_array_equal(got[0], want[0])
    v = rng.integers(0, 256, n).astype(np.uint8)
    rule = histogram_rule(v, 7, (0, 256))
    np.testing.assert_array_equal(W.histogram(v, rule, w[::-1], R.words(s)),
                                  C.histogram(v, rule, w[::-1], R.words(s)))


def test_what_stays_on_the_cpu(rng):
    """Centred sums (std / var's second pass), weights no float32 holds, infinite weights,
    and NaN weights of a float sum (its bin is NaN): NotImplemented, then the cpu's answer."""
    n = 5_000
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    w = rng.normal(size=n).astype(np.float32)
    rx, ry = histogram2d_rules(x, y, (6, 4), RANGE)
    center = rng.normal(size=(6, 4))
    inf, nan = w.copy(), w.copy()
    inf[3], nan[5] = np.inf, np.nan
    cases = [(w, R.centered(R.MEAN, center)), (w, R.centered(R.fixed(40), center)),
             (w.astype(np.float64) + 1e-12, R.MEAN), (inf, R.MEAN), (nan, R.SUM_F64)]
    for ww, red in cases:
        assert W.histogram2d(x, y, rx, ry, ww, red) is NotImplemented
        got = hotbin.backend.load("wgpu").histogram2d(x, y, rx, ry, ww, red)
        want = C.histogram2d(x, y, rx, ry, ww, red)
        np.testing.assert_array_equal(got[0], want[0])
    rule = histogram_rule(x, 9, (0, 1))
    assert W.histogram(x, rule, nan, R.SUM_F64) is NotImplemented
    assert W.histogram(x, rule, w, R.SUM_I64) is NotImplemented


@pytest.mark.parametrize("agg", ["sum", "mean", "std", "var"])
def test_heatmap_sums_front_door(rng, agg, counters):
    """hotbin.heatmap(..., backend="wgpu"): bitwise the cpu backend's with deterministic=True,
    to rounding without; counts and points always equal."""
    if counters == "atomic64" and agg in ("std", "var"):
        pytest.skip("their device pass is mean's")
    n = 20_011
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    x[: n // 3] = 0.41
    w = (rng.normal(size=n) * 10).astype(np.float32)
    w[::11] = np.nan
    kw = dict(agg=agg, width=24, height=16, x_range=(0, 1), y_range=(0, 1))
    for det in (True, False):
        got = hotbin.heatmap(x, y, w, backend="wgpu", deterministic=det, **kw)
        want = hotbin.heatmap(x, y, w, backend="cpu", deterministic=det, **kw)
        for attr in ("counts", "points"):
            np.testing.assert_array_equal(getattr(got, attr), getattr(want, attr), err_msg=attr)
        if det:
            np.testing.assert_array_equal(got.values, want.values)
        else:
            np.testing.assert_allclose(got.values, want.values, rtol=1e-11, atol=1e-12)


def test_histogram_weights_front_door(rng):
    """hotbin.histogram(..., weights=w, backend="wgpu"): the same contract in 1-D."""
    x = rng.normal(size=50_000).astype(np.float32)
    x[::9] = np.round(x[::9])  # values on bin edges
    w = rng.normal(size=x.size).astype(np.float32) * np.float32(1e3)
    for det in (True, False):
        got, e1 = hotbin.histogram(x, 40, (-3, 3), weights=w, backend="wgpu", deterministic=det)
        want, e2 = hotbin.histogram(x, 40, (-3, 3), weights=w, backend="cpu", deterministic=det)
        np.testing.assert_array_equal(e1, e2)
        if det:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-11)
        np.testing.assert_allclose(got, np.histogram(x, 40, (-3, 3), weights=w.astype(np.float64))[0],
                                   rtol=1e-9)


def test_dask_chunks_deterministic(rng):
    """deterministic=True over Dask chunks on the device: the same bits as one cpu call (the
    words merge exactly whatever the chunking)."""
    da = pytest.importorskip("dask.array")
    n = 100_000
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    w = rng.normal(size=n).astype(np.float32)
    kw = dict(agg="mean", width=30, height=20, x_range=(0, 1), y_range=(0, 1), deterministic=True)
    want = hotbin.heatmap(x, y, w, backend="cpu", **kw)
    for chunks in (30_000, 7_777):
        got = hotbin.heatmap(*(da.from_array(a, chunks=chunks) for a in (x, y, w)), backend="wgpu", **kw)
        np.testing.assert_array_equal(np.asarray(got.values), want.values)
