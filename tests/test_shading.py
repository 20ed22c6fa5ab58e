"""Shading that survives outliers: eq_hist equalizes values by their exact ranks, so one huge value
takes one step of the colormap instead of squeezing every ordinary cell into the bottom colour."""
import numpy as np
import pytest

from hotbin.render.shade import FLOOR, colormap, eq_hist, normalize, shade


def fares(seed=7, n=200_000, side=120):
    """Mean fares on a grid: gamma fares over a city on a plain, and one stray 1.5e6 fare alone in
    the top-right cell. Returns (means, points per cell), computed by NumPy."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-2.5, 2.5, n // 2), rng.normal(0, 1, n // 2)])
    y = np.concatenate([rng.uniform(-2.5, 2.5, n // 2), rng.normal(0, 1, n // 2)])
    fare = rng.gamma(2.0, 1.5 * (1 + np.hypot(x, y) / 4))
    x, y, fare = np.append(x, 2.8), np.append(y, 2.8), np.append(fare, 1.5e6)
    span = [(-3, 3), (-3, 3)]
    points = np.histogram2d(y, x, side, span)[0]
    with np.errstate(invalid="ignore"):
        return np.histogram2d(y, x, side, span, weights=fare)[0] / points, points


def binned_eq_hist(v, nbins=1 << 16):
    """Equalization over equal-width bins between the extremes (datashader's, and hotbin's before):
    histogram, cumulative sum, interpolation at the bin centres."""
    hist, edges = np.histogram(v, nbins, (v.min(), v.max()))
    cdf = np.cumsum(hist).astype(np.float64)
    t = np.interp(v, (edges[:-1] + edges[1:]) / 2, cdf)
    return np.clip((t - cdf[0]) / (cdf[-1] - cdf[0]), 0, 1)


def test_one_outlier_no_longer_paints_the_map_one_colour():
    means, points = fares()
    on = points > 0
    assert on.sum() >= 10_000
    lut = colormap("inferno")
    # equal-width bins: all but a few cells share the bottom bin, so one colour
    t = binned_eq_hist(means[on])
    idx = np.rint((FLOOR + (1 - FLOOR) * t) * 255).astype(int)
    assert np.bincount(idx).max() >= 0.95 * on.sum()
    img = shade(means, occupied=points)
    colours, k = np.unique(img[on][:, :3], axis=0, return_counts=True)
    assert len(colours) >= 200 and k.max() < 0.01 * on.sum()  # the ordinary cells use the colormap
    top = np.unravel_index(np.nanargmax(means), means.shape)
    assert points[top] == 1 and means[top] == 1.5e6  # the stray fare, alone in its cell
    assert tuple(img[top][:3]) == tuple(lut[-1])  # the top colour
    assert np.all(img[~on] == 0)


def test_values_rank_among_the_distinct_values():
    rng = np.random.default_rng(3)
    v = np.round(rng.gamma(2, 5, 5000), 1)  # many ties
    v[0] = 1.5e6
    t = eq_hist(v)
    distinct = np.unique(v)
    np.testing.assert_array_equal(t, np.searchsorted(distinct, v) / (distinct.size - 1))
    assert t[0] == 1 and t[np.argmin(v)] == 0
    ties = v == v[1]
    assert ties.sum() > 1 and np.all(t[ties] == t[1])  # equal values share a colour


def test_counts_equalize_by_their_cumulative_share():
    """Counts with few levels keep the fraction of cells at or below them (the bincount path)."""
    rng = np.random.default_rng(5)
    c = rng.geometric(0.3, 4000).astype(np.float64)
    t = eq_hist(c)
    s = np.sort(c)
    below = np.searchsorted(s, c, side="right")  # cells at or below each value
    first = np.searchsorted(s, s[0], side="right")
    np.testing.assert_allclose(t, (below - first) / (c.size - first), rtol=0, atol=1e-15)


def test_counts_with_an_outlier_beyond_the_levels_rank():
    c = np.array([1, 1, 2, 3, 5, 8, 10**9], np.float64)  # too many levels for a bincount
    np.testing.assert_array_equal(eq_hist(c), [0, 0, 0.2, 0.4, 0.6, 0.8, 1])


def test_span_still_clips():
    v = np.array([[1.5, 2.5, 3.5, 4.5, 1e6]])
    t = normalize(v, "eq_hist", span=(2.5, 4.5))[0]
    np.testing.assert_array_equal(t, [0, 0, 0.5, 1, 1])  # clipped ends share the end colours


@pytest.mark.cuda
def test_cupy_ranks_as_numpy():
    cp = pytest.importorskip("cupy")
    means, points = fares(side=64)
    a = shade(means, occupied=points)
    b = shade(cp.asarray(means), occupied=cp.asarray(points))
    np.testing.assert_array_equal(a, b)
