"""The colormaps and the category palette hotbin ships are the published tables, entry for entry:
matplotlib's viridis family and colorcet's fire and glasbey, each rounded to the nearest 8-bit value
(tools/colormap_tables.py writes them)."""
import numpy as np
import pytest

from hotbin.render.colorize import category_colors
from hotbin.render.shade import CMAPS, colormap

MATPLOTLIB = ("inferno", "magma", "plasma", "viridis", "cividis")


def _bytes(floats):
    return np.rint(np.asarray(floats, np.float64)[:, :3] * 255).astype(np.uint8)


@pytest.mark.parametrize("name", MATPLOTLIB)
def test_matplotlib_tables_exactly(name):
    mpl = pytest.importorskip("matplotlib")
    want = _bytes(mpl.colormaps[name].colors)
    assert want.shape == (256, 3)
    np.testing.assert_array_equal(colormap(name), want)
    np.testing.assert_array_equal(colormap(name), colormap(mpl.colormaps[name]))  # as the object shades


def test_colorcet_fire_exactly():
    cc = pytest.importorskip("colorcet")
    np.testing.assert_array_equal(colormap("fire"), _bytes(cc.linear_kryw_0_100_c71))
    # colorcet's own hex strings truncate (0.843137 * 255 -> 214): within one step of ours
    hexes = np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in cc.fire])
    assert np.abs(hexes - colormap("fire").astype(int)).max() <= 1


def test_gray_and_aliases():
    ramp = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(colormap("gray"), np.stack([ramp] * 3, axis=1))
    np.testing.assert_array_equal(colormap("Grey"), colormap("gray"))
    assert set(CMAPS) == {*MATPLOTLIB, "fire", "gray"}


def test_resampled_tables_keep_the_ends():
    small = colormap("viridis", 5)
    assert small.shape == (5, 3)
    np.testing.assert_array_equal(small[[0, -1]], colormap("viridis")[[0, -1]])


def test_category_palette_is_glasbey_exactly():
    cc = pytest.importorskip("colorcet")
    want = _bytes(cc.glasbey_bw_minc_20)
    np.testing.assert_array_equal(category_colors(256), want)
    np.testing.assert_array_equal(category_colors(3), want[:3])
    assert len({tuple(c) for c in want}) == 256  # all distinct
    np.testing.assert_array_equal(category_colors(300)[256:], want[:44])  # beyond 256: again


def test_other_colorcet_names_use_the_published_floats():
    cc = pytest.importorskip("colorcet")
    pytest.importorskip("matplotlib")
    np.testing.assert_array_equal(colormap("bmy"), _bytes(cc.linear_bmy_10_95_c78))
