"""``Heatmap.plot`` (issue #15 item 7, #16 item 4): the picture on the data's extent, labelled axes,
a colorbar whose ticks are real cell values where the shading puts them, a legend for categories;
and ``hotbin image --plot`` charts with labelled axes."""
import subprocess
import sys

import numpy as np
import pytest

import hotbin
from hotbin.render import png
from hotbin.render.plotting import TICKS
from hotbin.render.shade import normalize

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")


@pytest.fixture
def points(rng):
    n = 20_000
    return {"lon": rng.normal(2.35, 0.05, n), "lat": rng.normal(48.85, 0.03, n),
            "fare": rng.gamma(2, 5, n), "kind": rng.integers(0, 3, n)}


@pytest.fixture
def fig():
    f = plt.figure()
    yield f
    plt.close(f)


def _ticks(cb):
    pos = np.asarray(cb.get_ticks(), np.float64)
    labels = [t.get_text() for t in cb.ax.get_yticklabels()]
    return pos, np.array([float(s) for s in labels])


def test_extent_labels_and_the_shaded_pixels(points, fig):
    hm = hotbin.heatmap("lon", "lat", data=points, width=40, height=30)
    ax = fig.add_subplot()
    im = hm.plot(ax=ax)
    assert tuple(im.get_extent()) == (*hm.x_range, *hm.y_range)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("lon", "lat")
    assert im.origin == "lower"  # row 0 (y_range[0]) at the bottom: north up
    np.testing.assert_array_equal(np.asarray(im.get_array()), hm.shade())


def test_eq_hist_colorbar_ticks_are_cell_values_at_their_colour(points, fig):
    hm = hotbin.heatmap("lon", "lat", data=points, width=40, height=30)
    im = hm.plot(ax=fig.add_subplot())
    pos, vals = _ticks(im.hotbin_colorbar)
    counts = np.asarray(hm.counts, np.float64)
    assert len(vals) >= 4 and np.all(np.diff(vals) > 0) and np.all(np.diff(pos) > 0)
    assert set(vals) <= set(counts[counts > 0].tolist())  # real counts of cells
    assert vals[0] == counts[counts > 0].min() and vals[-1] == counts.max()
    t = normalize(counts, "eq_hist")
    for p, v in zip(pos, vals):  # each tick sits where the picture puts that value
        assert np.allclose(t[counts == v], p)
    quantiles = np.quantile(counts[counts > 0], np.linspace(0, 1, TICKS), method="nearest")
    np.testing.assert_array_equal(np.unique(quantiles), vals)  # the cells' values at quantiles


@pytest.mark.parametrize("how", ["linear", "log", "cbrt"])
def test_other_colorbars_follow_normalize(points, fig, how):
    hm = hotbin.heatmap("lon", "lat", "fare", agg="mean", data=points, width=30, height=20)
    im = hm.plot(ax=fig.add_subplot(), how=how, cmap="viridis")
    pos, vals = _ticks(im.hotbin_colorbar)
    v = np.asarray(hm.values)[np.isfinite(hm.values)]
    lo, hi = v.min(), v.max()
    np.testing.assert_allclose(vals[[0, -1]], [lo, hi], rtol=1e-3)  # the span's ends, printed to 4 digits
    f = {"linear": lambda a: a, "log": np.log1p, "cbrt": np.cbrt}[how]
    np.testing.assert_allclose(pos, (f(vals) - f(lo)) / (f(hi) - f(lo)), atol=2e-3)
    assert im.hotbin_colorbar.ax.get_ylabel() == "mean"


def test_categories_get_a_legend_of_their_colours(points, fig):
    from hotbin.render.colorize import category_colors

    hm = hotbin.heatmap("lon", "lat", by="kind", data=points, width=30, height=20)
    ax = fig.add_subplot()
    im = hm.plot(ax=ax)
    assert im.hotbin_colorbar is None and len(fig.axes) == 1  # no colorbar
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["0", "1", "2"]
    colours = np.array([h.get_facecolor()[:3] for h in legend.legend_handles])
    np.testing.assert_allclose(colours, category_colors(3) / 255.0)


def test_projected_axes_name_the_crs(points, fig):
    hm = hotbin.heatmap("lon", "lat", data=points, width=30, height=None, project="mercator")
    ax = fig.add_subplot()
    hm.plot(ax=ax, colorbar=False)
    assert ax.get_xlabel() == "lon (EPSG:3857, m)" and ax.get_aspect() == 1.0


def test_image_plot_chart_has_labelled_axes(tmp_path, rng):
    from hotbin.cli.image import BOTTOM, LEFT, MARGIN, PLOT_H, PLOT_W

    photo = tmp_path / "p.png"
    png.write(photo, rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))
    r = subprocess.run([sys.executable, "-m", "hotbin", "image", str(photo), "--plot", str(tmp_path / "h.png")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    chart = png.read(tmp_path / "h.png")
    assert chart.shape == (MARGIN + PLOT_H + BOTTOM, LEFT + PLOT_W + 44, 3)
    below = chart[MARGIN + PLOT_H + 6:, LEFT:LEFT + PLOT_W]  # level numbers and "luma level"
    left = chart[MARGIN:MARGIN + PLOT_H, :LEFT - 2]  # 0, the peak and "pixels"
    assert (below.min(axis=2) == 0).sum() > 100 and (left.min(axis=2) == 0).sum() > 50
