"""The built-in PNG codec: round trips, and agreement with Pillow where it is installed."""
import numpy as np
import pytest

from hotbin.render import png


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


def interlaced_png(img) -> bytes:
    """An Adam7-interlaced PNG of ``img`` (no row filters), written here independently of png.read."""
    import struct
    import zlib

    img = np.asarray(img)
    h, w = img.shape[:2]
    c = 1 if img.ndim == 2 else img.shape[2]
    px = np.ascontiguousarray(img, img.dtype.newbyteorder(">")).reshape(h, w, c)
    raw = b""
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
                           (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
        sub = np.ascontiguousarray(px[y0::dy, x0::dx])
        if sub.size:
            rows = sub.reshape(sub.shape[0], -1).view(np.uint8)
            raw += np.concatenate([np.zeros((rows.shape[0], 1), np.uint8), rows], axis=1).tobytes()
    hdr = struct.pack(">IIBBBBB", w, h, 8 * img.dtype.itemsize, {1: 0, 2: 4, 3: 2, 4: 6}[c], 0, 0, 1)
    return png._SIG + png._chunk(b"IHDR", hdr) + png._chunk(b"IDAT", zlib.compress(raw)) + png._chunk(b"IEND", b"")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("shape", [(1, 1, 3), (2, 9), (7, 5, 3), (13, 17, 4), (30, 31, 2), (8, 8, 1)])
def test_reads_interlaced(tmp_path, rng, dtype, shape):
    img = rng.integers(0, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
    (tmp_path / "i.png").write_bytes(interlaced_png(img))
    back = png.read(tmp_path / "i.png")
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, img[..., 0] if shape[-1:] == (1,) else img)
    Image = pytest.importorskip("PIL.Image")
    if dtype == np.uint8:  # Pillow agrees (it reads 16-bit colour as 8-bit)
        np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "i.png")), back)


def _bomb(w, h, depth=8, color=0, idat=b""):
    import struct
    import zlib

    hdr = struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, 0)
    return png._SIG + png._chunk(b"IHDR", hdr) + png._chunk(b"IDAT", zlib.compress(idat)) + png._chunk(b"IEND", b"")


def test_pixel_limit_checked_before_allocating(tmp_path, monkeypatch):
    path = tmp_path / "bomb.png"
    path.write_bytes(_bomb(100000, 100000))  # 65 bytes claiming 10^10 pixels
    assert path.stat().st_size == 65
    with pytest.raises(ValueError, match="over the limit of .* pixels"):
        png.read(path)
    # a small compressed file inflating far beyond the limit: refused from its header
    big = tmp_path / "zeros.png"
    big.write_bytes(_bomb(12000, 12000, idat=bytes(12001 * 1000)))
    with pytest.raises(ValueError, match="decompression bomb"):
        png.read(big)
    Image = pytest.importorskip("PIL.Image")
    img = np.full((40, 40), 7, np.uint8)
    png.write(tmp_path / "ok.png", img)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1599)  # Pillow's limit is honoured
    with pytest.raises(ValueError, match="1599"):
        png.read(tmp_path / "ok.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)
    np.testing.assert_array_equal(png.read(tmp_path / "ok.png"), img)


def test_corrupt_data_is_a_clear_error(tmp_path, rng):
    good = png.encode(rng.integers(0, 256, (20, 30, 3), dtype=np.uint8))
    cases = {
        "truncated chunk": good[:60],
        "truncated image data": _bomb(30, 20, color=2, idat=bytes(100)),
        "corrupt": good[:41] + bytes(len(good) - 41),
        "no pixels": _bomb(0, 5),
        "filter type": _bomb(2, 2, idat=b"\x07\x00\x00" * 2),
    }
    for what, data in cases.items():
        (tmp_path / "c.png").write_bytes(data)
        with pytest.raises(ValueError, match="c.png"):
            png.read(tmp_path / "c.png")


# --- the legend of a heatmap by category -------------------------------------------------

def _by_category(rng):
    import hotbin

    x, y = rng.normal(size=(2, 5000))
    kind = np.where(x > 0, "east", np.where(y > 0, "north-west", "south-west"))
    return hotbin.heatmap(x, y, by=kind, width=24, height=16)


def test_category_png_carries_its_legend(tmp_path, rng):
    import json

    from hotbin.render.colorize import category_colors
    from hotbin.render.legend import encode_heatmap

    hm = _by_category(rng)
    path = tmp_path / "by.png"
    path.write_bytes(encode_heatmap(hm))
    np.testing.assert_array_equal(png.read(path), hm.shade()[::-1])  # the pixels are the cells
    pairs = json.loads(png.read_text(path)["legend"])
    rgb = category_colors(3)
    assert pairs == [[lab, "#%02x%02x%02x" % tuple(c)] for lab, c in zip(["east", "north-west", "south-west"], rgb)]
    pil = pytest.importorskip("PIL.Image")
    assert json.loads(pil.open(path).text["legend"]) == pairs  # as other readers see it
    key = {"east": "#ff0000", "north-west": "#00ff00", "south-west": "#0000ff"}
    path.write_bytes(encode_heatmap(hm, color_key=key))
    assert [c for _, c in json.loads(png.read_text(path)["legend"])] == list(key.values())


def test_plain_heatmap_png_has_no_legend(tmp_path, rng):
    import hotbin
    from hotbin.render.legend import encode_heatmap

    x, y = rng.normal(size=(2, 1000))
    path = tmp_path / "plain.png"
    path.write_bytes(encode_heatmap(hotbin.heatmap(x, y, width=8, height=8)))
    assert "legend" not in png.read_text(path)


def test_drawn_legend_beside_the_picture(tmp_path, rng):
    pytest.importorskip("PIL")
    from hotbin.render.colorize import category_colors
    from hotbin.render.legend import PAD, SWATCH, encode_heatmap

    hm = _by_category(rng)
    path = tmp_path / "drawn.png"
    path.write_bytes(encode_heatmap(hm, legend=True, background="black"))
    img = png.read(path)
    pic = hm.shade(background="black")[::-1]
    h, w = pic.shape[:2]
    assert img.shape[1] > w + 2 * PAD + SWATCH and img.shape[0] >= h
    np.testing.assert_array_equal(img[:h, :w], pic)
    panel = img[:, w:]
    assert np.all(panel[..., 3] == 255)
    tops = []
    for c in category_colors(3):  # each swatch in its category's colour, in order down the panel
        hits = np.flatnonzero(np.all(panel[:, PAD + SWATCH // 2, :3] == c, axis=1))
        assert hits.size == SWATCH
        tops.append(hits[0])
    assert tops == sorted(tops) and tops[0] == PAD
    text = panel[:, 2 * PAD + SWATCH:, :3]
    assert (text.min(axis=2) > 128).sum() > 50  # white labels on black


# --- a heatmap in a notebook --------------------------------------------------------------

def _decode(data):
    import io

    pil = pytest.importorskip("PIL.Image")
    img = pil.open(io.BytesIO(data))
    return np.asarray(img.convert("RGBA")), img


def test_notebook_png_is_opaque_on_a_background_that_suits_the_colormap(rng):
    import hotbin
    from hotbin.render.notebook import heatmap_png

    x, y = rng.normal(size=(2, 3000))
    hm = hotbin.heatmap(x, y, width=40, height=30)
    counts = np.asarray(hm.counts)[::-1]  # north up, as the picture
    assert (counts == 0).sum() > 100
    for cmap, bg in (("inferno", 0), ("fire", 0), (["#ffffff", "#0000ff"], 255)):
        rgba, img = _decode(heatmap_png(hm, cmap=cmap))
        assert img.mode == "RGBA" and rgba.shape == (30, 40, 4)
        assert np.all(rgba[..., 3] == 255)  # no transparent speckle
        assert np.all(rgba[counts == 0][:, :3] == bg)  # empty cells: black under a dark bottom
        np.testing.assert_array_equal(rgba[counts > 0], hm.shade(cmap=cmap)[::-1][counts > 0])


def test_notebook_png_of_categories_has_its_legend(rng):
    from hotbin.render.colorize import category_colors
    from hotbin.render.notebook import heatmap_png

    hm = _by_category(rng)
    rgba, img = _decode(heatmap_png(hm))
    assert rgba.shape[1] > hm.width and np.all(rgba[..., 3] == 255)
    empty = np.asarray(hm.counts)[::-1] == 0
    assert np.all(rgba[:hm.height, :hm.width][empty][:, :3] == 255)  # white under categories
    assert "legend" in img.text
    for c in category_colors(3):  # each category's swatch is in the drawn legend
        assert np.all(rgba[:, hm.width:, :3] == c, axis=2).sum() >= 100


def test_notebook_html_shows_the_picture_and_the_summary(rng):
    import base64
    import re

    import hotbin
    from hotbin.render.notebook import heatmap_html

    x, y = rng.normal(size=(2, 4000))
    w = rng.gamma(2, 5, 4000)
    w[:7] = np.nan  # points without a value: skipped
    hm = hotbin.heatmap("lon <E>", "lat", "fare", data={"lon <E>": x, "lat": y, "fare": w}, agg="mean",
                        width=20, height=10, x_range=(-2, 2), y_range=(-2, 2))
    page = heatmap_html(hm)
    data = base64.b64decode(re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page).group(1))
    rgba, _ = _decode(data)
    np.testing.assert_array_equal(rgba.shape, (10, 20, 4))
    assert np.all(rgba[..., 3] == 255)
    cells = np.asarray(hm.value_counts)
    inside = int(cells.sum())
    n = inside + hm.dropped + hm.skipped
    assert hm.dropped > 0 and hm.skipped > 0 and n == 4000
    text = re.sub(r"<[^>]+>", " ", page)
    for key, value in (("cells", "20 &times; 10"), ("agg", "mean"), ("n", f"{n:,}"), ("dropped", f"{hm.dropped:,}"),
                       ("skipped", f"{hm.skipped:,}"), ("in cells", f"{inside:,}")):
        assert re.search(rf"\b{key}\s+{re.escape(value)}\s", text), key
    v = np.asarray(hm.values)[cells > 0]
    assert f"{v.min():.6g} to {v.max():.6g}" in text
    assert "[-2, 2)" in text and "lon &lt;E&gt;" in page and "<E>" not in page  # names escaped
