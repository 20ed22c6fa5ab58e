"""``Heatmap.plot``: the picture on the data's extent, labelled axes, a colorbar whose ticks are
round numbers where the shading puts them (readable: distinct, spread out, not overlapping), a
legend for categories; and ``hotbin image --plot`` charts with labelled axes."""
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


def _significant(label):
    """Significant digits of a decimal label ("0.05" -> 1, "150" -> 2, "1.5e-06" -> 2)."""
    return len(label.lower().split("e")[0].lstrip("-").replace(".", "").strip("0"))


def _check_readable(fig, cb, pos, vals, labels):
    """Distinct, increasing round ticks whose labels do not overlap on the drawn bar."""
    from hotbin.render.ticks import WINDOW

    assert len(vals) >= 4 and np.all(np.diff(vals) > 0) and len(set(labels)) == len(labels)
    assert np.all(np.diff(pos) >= (1 - 2 * WINDOW) / (TICKS - 1) - 1e-12) and 0 <= pos[0] and pos[-1] <= 1
    assert all(_significant(s) <= 2 for s in labels), labels  # round numbers
    fig.canvas.draw()
    boxes = sorted((t.get_window_extent() for t in cb.ax.get_yticklabels()), key=lambda b: b.y0)
    assert all(lower.y1 <= upper.y0 for lower, upper in zip(boxes, boxes[1:]))  # no overlap


def _eq_position(grid, occupied, vals):
    """Where the equalized bar shows each value: linear between the positions of the cells'
    distinct values (NumPy's unique and interp over normalize's t of those cells)."""
    mask = np.isfinite(grid) & (occupied != 0)
    t = normalize(grid, "eq_hist", mask=mask)[mask]
    distinct, first = np.unique(grid[mask], return_index=True)
    return np.interp(vals, distinct, t[first])


def test_eq_hist_colorbar_of_means_with_an_outlier_is_readable(points, fig):
    fare = points["fare"].copy()
    fare[np.argmax(points["lon"])] = 1.5e6  # one stray fare, alone at the map's edge
    hm = hotbin.heatmap("lon", "lat", "fare", agg="mean", data={**points, "fare": fare}, width=40, height=30)
    im = hm.plot(ax=fig.add_subplot())
    cb = im.hotbin_colorbar
    pos, vals = _ticks(cb)
    _check_readable(fig, cb, pos, vals, [t.get_text() for t in cb.ax.get_yticklabels()])
    grid, n = np.asarray(hm.values), np.asarray(hm.value_counts)
    np.testing.assert_allclose(pos, _eq_position(grid, n, vals), rtol=0, atol=1e-12)
    v = grid[n > 0]
    assert v.min() <= vals[0] and vals[-1] <= v.max() == 1.5e6
    assert pos[-2] < 0.9  # the ordinary fares fill the bar; the outlier does not squeeze them


def test_eq_hist_colorbar_of_counts_is_readable(points, fig):
    hm = hotbin.heatmap("lon", "lat", data=points, width=40, height=30)
    im = hm.plot(ax=fig.add_subplot())
    cb = im.hotbin_colorbar
    pos, vals = _ticks(cb)
    _check_readable(fig, cb, pos, vals, [t.get_text() for t in cb.ax.get_yticklabels()])
    counts = np.asarray(hm.counts, np.float64)
    assert np.all(vals == np.rint(vals)) and counts[counts > 0].min() <= vals[0]  # whole counts
    assert vals[-1] <= counts.max()
    np.testing.assert_allclose(pos, _eq_position(counts, counts, vals), rtol=0, atol=1e-12)
    t = normalize(counts, "eq_hist")
    for p, v in zip(pos, vals):  # a tick on a cell's count sits exactly at that cell's colour
        if (counts == v).any():
            assert np.all(t[counts == v] == p)


@pytest.mark.parametrize("how", ["linear", "log", "cbrt"])
def test_other_colorbars_follow_normalize(points, fig, how):
    hm = hotbin.heatmap("lon", "lat", "fare", agg="mean", data=points, width=30, height=20)
    im = hm.plot(ax=fig.add_subplot(), how=how, cmap="viridis")
    cb = im.hotbin_colorbar
    pos, vals = _ticks(cb)
    _check_readable(fig, cb, pos, vals, [t.get_text() for t in cb.ax.get_yticklabels()])
    v = np.asarray(hm.values)[np.isfinite(hm.values)]
    lo, hi = v.min(), v.max()
    assert lo <= vals[0] and vals[-1] <= hi
    f = {"linear": lambda a: a, "log": np.log1p, "cbrt": np.cbrt}[how]
    np.testing.assert_allclose(pos, (f(vals) - f(lo)) / (f(hi) - f(lo)), rtol=0, atol=1e-12)
    assert cb.ax.get_ylabel() == "mean"


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
