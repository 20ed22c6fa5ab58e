"""The built-in PNG codec: round trips, and agreement with Pillow where it is installed."""
import numpy as np
import pytest

from hotbin import png


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("channels", [None, 1, 2, 3, 4])
def test_round_trip(tmp_path, rng, dtype, channels):
    shape = (7, 5) if channels is None else (7, 5, channels)
    img = rng.integers(1, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
    path = tmp_path / "x.png"
    png.write(path, img)
    back = png.read(path)
    expect = img if channels not in (1,) else img[:, :, 0]
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, expect)
    Image = pytest.importorskip("PIL.Image")
    if dtype == np.uint8 or channels in (None, 1):
        pil = np.asarray(Image.open(path))
        np.testing.assert_array_equal(pil.astype(dtype), expect)


def test_reads_filtered_rows(tmp_path, rng):
    Image = pytest.importorskip("PIL.Image")
    img = (np.arange(40 * 30 * 3).reshape(40, 30, 3) * 7 % 251).astype(np.uint8)  # smooth: Pillow filters rows
    Image.fromarray(img).save(tmp_path / "p.png", optimize=True)
    np.testing.assert_array_equal(png.read(tmp_path / "p.png"), img)


def test_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="image"):
        png.encode(np.zeros((2, 2, 5), np.uint8) + 1)
    with pytest.raises(TypeError, match="image"):
        png.encode(np.ones((2, 2), np.float32))
    (tmp_path / "not.png").write_bytes(b"hello")
    with pytest.raises(ValueError, match="not a PNG"):
        png.read(tmp_path / "not.png")
