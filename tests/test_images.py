"""Image histograms (issue #5): the exact luma rule on every backend, equalization, CLI."""
import sys

import numpy as np
import pytest

import hotbin
from hotbin import cli, luma
from hotbin.render import png
from hotbin.backend.cpu import luma as cpu_luma
from hotbin.backend.cpu import parallel

from conftest import to_numpy


# --- the reference, written here in plain NumPy int64 arithmetic ------------------------

FTOP = 255 * 256  # float channels: the 8.8 grid of 8-bit levels


def ref_quantize(x):
    """Channel levels: ints as they are, floats rint(clip(v, 0, 1) * 65280) in float64
    (float16: 32 * rint(clip(v, 0, 1) * 2040))."""
    x = np.asarray(x)
    if x.dtype.kind == "f":
        step = 32 if x.dtype == np.float16 else 1
        return step * np.rint(np.clip(x.astype(np.float64), 0, 1) * (FTOP // step)).astype(np.int64)
    return x.astype(np.int64)


def ref_levels(img):
    q = ref_quantize(img)
    if q.ndim == 2:
        return q
    if q.shape[-1] < 3:
        return q[..., 0]
    return (2126 * q[..., 0] + 7152 * q[..., 1] + 722 * q[..., 2]) // 10000


def ref_hist(img, bins=256):
    top = 256 if np.asarray(img).dtype == np.uint8 else 65536
    return np.histogram(ref_levels(img), bins, range=(0, top))[0]


def lh(img, backend, bins=256):
    return to_numpy(hotbin.luminance_histogram(img, bins, backend=backend))


# --- the luma rule -----------------------------------------------------------------

def test_every_gray_level_has_its_own_bin(backend):
    v = np.repeat(np.arange(256, dtype=np.uint8), np.arange(1, 257))  # level v appears v+1 times
    gray = v.reshape(1, -1)
    rgb = np.repeat(gray[..., None], 3, axis=2)
    expected = np.arange(1, 257)
    for img in (gray, rgb, np.concatenate([rgb, rgb[..., :1]], axis=2)):
        np.testing.assert_array_equal(lh(img, backend), expected)


def test_white_lands_in_bin_255(backend):
    img = np.full((3, 5, 4), 255, np.uint8)
    h = lh(img, backend)
    assert h[255] == 15 and h.sum() == 15
    h16 = lh(np.full((2, 2, 3), 65535, np.uint16), backend, bins=65536)
    assert h16[65535] == 4
    hf = lh(np.ones((2, 2, 3), np.float32), backend, bins=65536)
    assert hf[FTOP] == 4 and hf.sum() == 4


@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (64, 97), (131, 257)])
def test_random_rgba_exact(backend, rng, shape):
    img = rng.integers(0, 256, shape + (4,), dtype=np.uint8)
    np.testing.assert_array_equal(lh(img, backend), ref_hist(img))


def test_rgb_equals_rgba_with_any_alpha(backend, rng):
    rgb = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    expected = lh(rgb, backend)
    for alpha in (0, 255, rng.integers(0, 256, (40, 50), dtype=np.uint8)):
        rgba = np.empty((40, 50, 4), np.uint8)
        rgba[..., :3] = rgb
        rgba[..., 3] = alpha
        np.testing.assert_array_equal(lh(rgba, backend), expected)


def test_hot_bin_constant_image(backend):
    img = np.full((300, 301, 4), (10, 200, 30, 7), np.uint8)
    level = (2126 * 10 + 7152 * 200 + 722 * 30) // 10000
    h = lh(img, backend)
    assert h[level] == 300 * 301 and h.sum() == 300 * 301


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_batches_equal_per_image(backend, rng, channels):
    batch = rng.integers(0, 256, (5, 17, 23, channels), dtype=np.uint8)
    h = lh(batch, backend)
    assert h.shape == (5, 256)
    for i in range(5):
        np.testing.assert_array_equal(h[i], lh(batch[i], backend))
        np.testing.assert_array_equal(h[i], ref_hist(batch[i]))


@pytest.mark.parametrize("bins", [1, 3, 10, 100, 255, 256, 512, 1000])
def test_bins_fold_levels_like_numpy(backend, rng, bins):
    img = rng.integers(0, 256, (30, 31, 3), dtype=np.uint8)
    np.testing.assert_array_equal(lh(img, backend, bins), ref_hist(img, bins))
    batch = np.stack([img, img[::-1, ::-1]])
    np.testing.assert_array_equal(lh(batch, backend, bins)[1], ref_hist(img, bins))


def test_16bit_rule(backend, rng):
    img = rng.integers(0, 65536, (33, 45, 3), dtype=np.uint16)
    img[0, :3] = [[65535] * 3, [0, 0, 0], [1000, 1000, 1000]]
    lv = ref_levels(img)
    assert lv[0, 0] == 65535 and lv[0, 2] == 1000
    np.testing.assert_array_equal(lh(img, backend, 65536), np.bincount(lv.ravel(), minlength=65536))
    np.testing.assert_array_equal(lh(img, backend), np.bincount(lv.ravel() >> 8, minlength=256))
    np.testing.assert_array_equal(to_numpy(hotbin.luminance(img)), lv.astype(np.uint16))
    big = img.astype(">u2")[:, ::2]  # big-endian and strided
    np.testing.assert_array_equal(lh(big, backend, 4096), ref_hist(img[:, ::2], 4096))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_rule(backend, rng, dtype):
    img = rng.uniform(-0.1, 1.1, (29, 31, 4)).astype(dtype)
    img[0, 0, :3] = [np.inf, -np.inf, 0.5]  # clipped like any out-of-range value
    step = 32 if dtype == np.float16 else 1
    img[0, 1, :3] = 3 * step / 512  # an exact tie, 382.5 steps: rounds half to even, to 382
    np.testing.assert_array_equal(lh(img, backend, 65536), ref_hist(img, 65536))
    np.testing.assert_array_equal(lh(img, backend, 256), ref_hist(img, 256))
    lum = to_numpy(hotbin.luminance(img))
    assert lum.dtype == np.result_type(dtype, np.float32)
    np.testing.assert_array_equal(lum, (ref_levels(img) / lum.dtype.type(FTOP)).astype(lum.dtype))
    assert ref_levels(img)[0, 1] == 382 * step


def test_float_gray_on_the_8_8_grid_is_its_own_luma(rng):
    levels = rng.integers(0, FTOP + 1, (20, 20))
    gray = levels.astype(np.float32) / np.float32(FTOP)
    np.testing.assert_array_equal(hotbin.luminance(gray), gray)
    np.testing.assert_array_equal(hotbin.luminance(gray, levels=True), levels.astype(np.uint16))
    rgb = np.repeat(gray[..., None], 3, axis=2)
    np.testing.assert_array_equal(hotbin.luminance(rgb), gray)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_k_over_255_is_the_uint8_histogram(backend, rng, dtype):
    """image / 255 has the uint8 image's 256-bin luma histogram, however k/255 was rounded."""
    img = rng.integers(0, 256, (2, 37, 41, 4), dtype=np.uint8)
    img[0, 0, :4] = [[255] * 4, [0] * 4, [254, 255, 255, 0], [1, 0, 0, 9]]
    expected = lh(img, backend)
    for f in ((img / 255).astype(dtype), img.astype(dtype) / dtype(255)):
        np.testing.assert_array_equal(lh(f, backend), expected)
        np.testing.assert_array_equal(lh(f[0, ..., :3], backend), expected[0])
        np.testing.assert_array_equal(lh(f[0, ..., 0], backend), lh(img[0, ..., 0], backend))
        np.testing.assert_array_equal(ref_quantize(f), 256 * img.astype(np.int64))
        levels = to_numpy(hotbin.luminance(f, levels=True)).astype(np.int64)
        np.testing.assert_array_equal(levels >> 8, ref_levels(img))
        p8 = to_numpy(hotbin.percentiles(img, [1, 50, 99], backend=backend))
        pf = to_numpy(hotbin.percentiles(f, [1, 50, 99], backend=backend))
        np.testing.assert_array_equal(np.rint(pf * FTOP).astype(np.int64) >> 8, p8)
    gray = img[0, ..., 0] / 255  # a gray image on the 8-bit grid is its own luma
    np.testing.assert_array_equal(hotbin.luminance(gray), gray)


def test_float_nan_rejected(backend):
    img = np.full((4, 4, 3), 0.25)
    img[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="image: contains NaN"):
        hotbin.luminance_histogram(img, backend=backend)


def test_luminance_planes(rng):
    img = rng.integers(0, 256, (3, 11, 12, 4), dtype=np.uint8)
    lum = hotbin.luminance(img)
    assert lum.dtype == np.uint8 and lum.shape == (3, 11, 12)
    np.testing.assert_array_equal(lum, ref_levels(img))
    gray = img[0, ..., 0]
    np.testing.assert_array_equal(hotbin.luminance(gray), gray)
    assert hotbin.luminance(np.full((2, 2, 3), 255, np.uint8)).min() == 255


def test_channel_histograms(backend, rng):
    img = rng.integers(0, 256, (3, 19, 21, 4), dtype=np.uint8)
    h = to_numpy(hotbin.channel_histograms(img, backend=backend))
    assert h.shape == (3, 4, 256)
    for i in range(3):
        for c in range(4):
            np.testing.assert_array_equal(h[i, c], np.bincount(img[i, ..., c].ravel(), minlength=256))
    h8 = to_numpy(hotbin.channel_histograms(img[0], 8, backend=backend))
    np.testing.assert_array_equal(h8[2], np.histogram(img[0, ..., 2], 8, (0, 256))[0])
    assert to_numpy(hotbin.channel_histograms(img[0, ..., 0], backend=backend)).shape == (1, 256)
    f = rng.uniform(0, 1, (9, 9, 3))
    hf = to_numpy(hotbin.channel_histograms(f, 64, backend=backend))
    np.testing.assert_array_equal(hf[1], np.histogram(ref_quantize(f[..., 1]), 64, (0, 65536))[0])


def test_fused_cpu_kernel_odd_sizes(rng):
    for shape in [(1, 1, 1), (3, 1, 7), (2, 5, 3), (1, 129, 255)]:
        for c in (3, 4):
            img = rng.integers(0, 256, shape + (c,), dtype=np.uint8)
            expected = np.stack([ref_hist(im) for im in img])
            np.testing.assert_array_equal(cpu_luma.luma_histogram(img), expected)
            np.testing.assert_array_equal(cpu_luma.luma_histogram(img[:, ::-1]), expected)
    assert cpu_luma.luma_histogram(np.zeros((2, 0, 5, 4), np.uint8)).tolist() == [[0] * 256] * 2
    # task splits and block edges, whatever the thread count: runs that end mid-block
    img = rng.integers(0, 256, (2, 3, 3 * cpu_luma.BLOCK + 5, 4), dtype=np.uint8)
    expected = np.stack([ref_hist(im) for im in img])
    for ntasks in (1, 2, 7):
        for threads in (1, 2, 3):  # thread t takes tasks t, t + threads, ... (any split)
            old = parallel.set_threads(threads)
            try:
                part = np.zeros((2 * ntasks, 256), np.int64)
                cpu_luma._luma_rgba(1 << 30, img.reshape(2, -1).view(np.uint32), ntasks, part)
                np.testing.assert_array_equal(part.reshape(2, ntasks, 256).sum(1), expected)
                part = np.zeros((2 * ntasks, 256), np.int64)
                cpu_luma._luma_rgb(1 << 30, np.ascontiguousarray(img[..., :3]).reshape(2, -1), ntasks, part)
                np.testing.assert_array_equal(part.reshape(2, ntasks, 256).sum(1), expected)
            finally:
                parallel.set_threads(old)


def test_row_blocks_give_the_same_answers(backend, rng, monkeypatch):
    img = rng.uniform(0, 1, (2, 9, 7, 4)).astype(np.float32)
    img8 = rng.integers(0, 256, (9, 7, 2), dtype=np.uint8)
    whole = [to_numpy(f(a, backend=backend)) for a in (img, img8)
             for f in (hotbin.luminance_histogram, hotbin.channel_histograms, hotbin.equalize)]
    monkeypatch.setattr(luma, "BLOCK_PIXELS", 20)  # 2 rows per block, the last one short
    blocks = [to_numpy(f(a, backend=backend)) for a in (img, img8)
              for f in (hotbin.luminance_histogram, hotbin.channel_histograms, hotbin.equalize)]
    for a, b in zip(whole, blocks):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(blocks[0], np.stack([ref_hist(i) for i in img]))


# --- bad input ------------------------------------------------------------------------

@pytest.mark.parametrize("func", [hotbin.luminance_histogram, hotbin.equalize,
                                  hotbin.channel_histograms, hotbin.luminance])
def test_bad_images(func):
    with pytest.raises(TypeError, match="image"):
        func(np.ones((4, 4, 3), np.int32))
    with pytest.raises(TypeError, match="image"):
        func(np.ones((4, 4), bool))
    with pytest.raises(ValueError, match="image: 5 channels"):
        func(np.ones((4, 4, 5), np.uint8))
    with pytest.raises(ValueError, match="image"):
        func(np.ones(16, np.uint8))
    with pytest.raises(ValueError, match="image"):
        func(np.ones((2, 2, 2, 2, 3), np.uint8))


def test_bad_bins_and_q():
    img = np.full((4, 4), 9, np.uint8)
    with pytest.raises(ValueError, match="bins"):
        hotbin.luminance_histogram(img, 0)
    with pytest.raises(TypeError, match="bins"):
        hotbin.luminance_histogram(img, 2.5)
    with pytest.raises(ValueError, match="q"):
        hotbin.percentiles(img, 101)
    with pytest.raises(ValueError, match="q"):
        hotbin.percentiles(img, [50, np.nan])
    with pytest.raises(ValueError, match="image"):
        hotbin.percentiles(np.zeros((0, 3), np.uint8), 50)


# --- percentiles --------------------------------------------------------------------

def test_percentiles_match_numpy_inverted_cdf(backend, rng):
    q = [0, 0.5, 1, 10, 29, 33.3, 50, 90, 99, 100]
    img = rng.integers(0, 256, (37, 41, 3), dtype=np.uint8)
    expected = np.percentile(ref_levels(img), q, method="inverted_cdf")
    np.testing.assert_array_equal(to_numpy(hotbin.percentiles(img, q, backend=backend)), expected)
    assert to_numpy(hotbin.percentiles(img, 50, backend=backend)).shape == ()
    batch = np.stack([img, 255 - img])
    p = to_numpy(hotbin.percentiles(batch, q, backend=backend))
    assert p.shape == (2, len(q))
    np.testing.assert_array_equal(p[1], np.percentile(ref_levels(255 - img), q, method="inverted_cdf"))
    f = rng.uniform(0, 1, (20, 20))
    pf = to_numpy(hotbin.percentiles(f, [1, 50, 99], backend=backend))
    assert pf.dtype == np.float64
    np.testing.assert_array_equal(
        pf * FTOP, np.percentile(ref_levels(f), [1, 50, 99], method="inverted_cdf"))


# --- equalization ---------------------------------------------------------------------

def _uniformity_gap(levels, top):
    """Largest distance of the CDF of ``levels`` from the uniform CDF over [0, top]."""
    cdf = np.cumsum(np.bincount(levels.ravel(), minlength=top + 1)) / levels.size
    return np.abs(cdf - np.arange(1, top + 2) / (top + 1)).max()


def test_equalize_gray_is_monotone_and_spreads(backend, rng):
    img = np.clip(rng.normal(100, 12, (120, 130)), 0, 255).astype(np.uint8)  # low contrast
    eq = to_numpy(hotbin.equalize(img, backend=backend))
    assert eq.shape == img.shape and eq.dtype == img.dtype
    order = np.argsort(img.ravel(), kind="stable")
    assert np.all(np.diff(eq.ravel()[order].astype(int)) >= 0)  # monotone mapping
    assert eq.min() == 0 and eq.max() == 255
    assert np.ptp(eq) > np.ptp(img)
    assert _uniformity_gap(eq, 255) < _uniformity_gap(img, 255) / 4


def test_equalize_colour_keeps_hue_and_alpha(backend, rng):
    rgb = rng.integers(20, 120, (60, 70, 3)).astype(np.uint8)
    rgb[:5] = rng.integers(0, 100, (5, 70, 1)).astype(np.uint8)  # some gray rows
    alpha = rng.integers(0, 256, (60, 70, 1), dtype=np.uint8)
    img = np.concatenate([rgb, alpha], axis=2)
    eq = to_numpy(hotbin.equalize(img, backend=backend))
    assert eq.shape == img.shape and eq.dtype == np.uint8
    np.testing.assert_array_equal(eq[..., 3], img[..., 3])
    g = eq[:5, :, :3]
    assert np.all(g[..., 0] == g[..., 1]) and np.all(g[..., 1] == g[..., 2])  # gray stays gray
    # same R:G:B ratios: out = in * gain, up to the rounding of each channel
    inp, out = rgb.astype(float), eq[..., :3].astype(float)
    gain = out.sum(axis=2, keepdims=True) / inp.sum(axis=2, keepdims=True)
    assert np.abs(out - inp * gain).max() <= 1.5
    # luma spreads: more of the level range used, the CDF closer to uniform
    lin, lout = ref_levels(img), ref_levels(eq)
    assert np.ptp(lout) > np.ptp(lin)
    assert _uniformity_gap(lout, 255) < _uniformity_gap(lin, 255)
    np.testing.assert_array_equal(to_numpy(hotbin.equalize(rgb, backend=backend)), eq[..., :3])


def test_equalize_batch_16bit_float_and_constant(backend, rng):
    batch = rng.integers(0, 256, (3, 16, 18, 3), dtype=np.uint8) // np.uint8(3)
    eq = to_numpy(hotbin.equalize(batch, backend=backend))
    for i in range(3):
        np.testing.assert_array_equal(eq[i], to_numpy(hotbin.equalize(batch[i], backend=backend)))
    img16 = rng.integers(1000, 5000, (20, 20), dtype=np.uint16)
    e16 = to_numpy(hotbin.equalize(img16, backend=backend))
    assert e16.dtype == np.uint16 and e16.min() == 0 and e16.max() == 65535
    f = rng.uniform(0.2, 0.4, (15, 16, 3)).astype(np.float32)
    ef = to_numpy(hotbin.equalize(f, backend=backend))
    assert ef.dtype == np.float32 and ef.shape == f.shape and 0 <= ef.min() and ef.max() <= 1
    assert np.ptp(ref_levels(ef)) > np.ptp(ref_levels(f))
    const = np.full((8, 9, 3), 77, np.uint8)
    np.testing.assert_array_equal(to_numpy(hotbin.equalize(const, backend=backend)), const)


# --- real photographs (scikit-image ships them) -----------------------------------------

@pytest.mark.parametrize("name", ["camera", "moon", "astronaut", "coffee", "chelsea"])
def test_photographs(backend, name):
    data = pytest.importorskip("skimage.data")
    img = getattr(data, name)()
    np.testing.assert_array_equal(lh(img, backend), ref_hist(img))
    q = [1, 50, 99]
    np.testing.assert_array_equal(to_numpy(hotbin.percentiles(img, q, backend=backend)),
                                  np.percentile(ref_levels(img), q, method="inverted_cdf"))
    eq = to_numpy(hotbin.equalize(img, backend=backend))
    assert eq.shape == img.shape and eq.dtype == img.dtype
    lin, lout = ref_levels(img), ref_levels(eq)
    assert _uniformity_gap(lout, 255) < _uniformity_gap(lin, 255)
    rgba = np.concatenate([img, np.full(img.shape[:2] + (1,), 128, np.uint8)], axis=2) \
        if img.ndim == 3 else img
    np.testing.assert_array_equal(lh(rgba, backend), ref_hist(img))


# --- GPU arrays stay on the GPU ------------------------------------------------------------

def test_cupy_in_cupy_out():
    cp = pytest.importorskip("cupy")
    if "cuda" not in hotbin.backends():
        pytest.skip("no CUDA backend here")
    img = cp.asarray(np.random.default_rng(5).integers(0, 256, (2, 33, 35, 4), dtype=np.uint8))
    h = hotbin.luminance_histogram(img)
    assert isinstance(h, cp.ndarray)
    np.testing.assert_array_equal(h.get(), np.stack([ref_hist(i) for i in img.get()]))
    assert isinstance(hotbin.equalize(img), cp.ndarray)


# --- the CLI ------------------------------------------------------------------------------

def test_cli_end_to_end(tmp_path, capsys, rng):
    src = tmp_path / "in.png"
    img = np.clip(rng.normal(90, 20, (48, 64, 3)), 0, 255).astype(np.uint8)
    img[0, 0] = 255
    png.write(src, img)
    plot, out = tmp_path / "hist.png", tmp_path / "eq.png"
    assert cli.main(["image", str(src), "--equalize", str(out), "--plot", str(plot)]) == 0
    text = capsys.readouterr().out
    assert "64x48 pixels, 3 channels (RGB), uint8" in text
    p1, p50, p99 = np.percentile(ref_levels(img), [1, 50, 99], method="inverted_cdf")
    assert f"luma percentiles 1/50/99: {p1} / {p50} / {p99}" in text
    assert f"mean luma: {ref_levels(img).mean():.2f}" in text
    assert f"highlights (level 255): {100 / img[..., 0].size:.2f}%" in text
    chart = png.read(plot)
    assert chart.ndim == 3 and chart.shape[2] == 3 and len(np.unique(chart.reshape(-1, 3), axis=0)) >= 3
    eq = png.read(out)
    np.testing.assert_array_equal(eq, hotbin.equalize(img))


def _png16_writes():
    try:
        png.encode(np.ones((1, 2), np.uint16))
        return True
    except ValueError:  # hotbin.render.png.encode reshapes 16-bit rows by bytes, not elements
        return False


@pytest.mark.skipif(not _png16_writes(), reason="hotbin.render.png cannot write 16-bit PNGs yet")
def test_cli_gray_16bit(tmp_path, capsys, rng):
    src = tmp_path / "g16.png"
    png.write(src, rng.integers(100, 60000, (20, 30), dtype=np.uint16))
    assert cli.main(["image", str(src), "--equalize", str(tmp_path / "o.png")]) == 0
    assert "(gray), uint16" in capsys.readouterr().out
    assert png.read(tmp_path / "o.png").dtype == np.uint16


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert cli.main(["image", str(tmp_path / "missing.png")]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.png" in err and "Traceback" not in err
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    assert cli.main(["image", str(bad)]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.png" in err


def test_cli_without_pillow_names_the_install(tmp_path, capsys, monkeypatch):
    jpg = tmp_path / "x.jpg"
    jpg.write_bytes(b"\xff\xd8\xff\xe0 not a real jpeg")
    monkeypatch.setitem(sys.modules, "PIL", None)
    assert cli.main(["image", str(jpg)]) != 0
    err = capsys.readouterr().err
    assert 'pip install "hotbin[image]"' in err and err.count("\n") == 1


def test_cli_reads_jpeg_with_pillow(tmp_path, capsys, rng):
    Image = pytest.importorskip("PIL.Image")
    path = tmp_path / "c.jpg"
    Image.fromarray(rng.integers(30, 200, (24, 32, 3), dtype=np.uint8)).save(path)
    assert cli.main(["image", str(path), "--equalize", str(tmp_path / "e.tif")]) == 0
    assert "32x24 pixels" in capsys.readouterr().out
    with Image.open(tmp_path / "e.tif") as im:
        assert im.size == (32, 24)


# --- Pillow images: counted by their colours, never by palette indices -------------------------

@pytest.mark.parametrize("mode", ["P", "PA", "P+transparency", "LA", "1", "I;16", "I", "RGBX", "CMYK"])
def test_pillow_images_counted_by_colour(rng, mode):
    Image = pytest.importorskip("PIL.Image")
    rgba = rng.integers(0, 256, (23, 29, 4), dtype=np.uint8)
    base = Image.fromarray(rgba[..., :3])
    if mode == "P+transparency":
        im = base.quantize(16)
        im.info["transparency"] = 3
        want = np.asarray(im.convert("RGBA"))
    elif mode in ("P", "PA"):
        im = Image.fromarray(rgba).convert("PA") if mode == "PA" else base.quantize(16)
        want = np.asarray(im.convert("RGBA" if mode == "PA" else "RGB"))
    elif mode == "I;16":
        want = rng.integers(0, 65536, (23, 29), dtype=np.uint16)
        im = Image.fromarray(want)
    elif mode == "I":
        want = rng.integers(0, 65536, (23, 29), dtype=np.uint16)
        im = Image.fromarray(want.astype(np.int32))
    else:
        im = base.convert(mode)
        want = np.asarray(im.convert({"LA": "LA", "1": "L"}.get(mode, "RGB")))
    assert im.mode == mode.split("+")[0]
    bins = 256 if want.dtype == np.uint8 else 65536
    np.testing.assert_array_equal(hotbin.luminance_histogram(im, bins), ref_hist(want, bins))
    np.testing.assert_array_equal(hotbin.luminance(im), ref_levels(want))
    eq = hotbin.equalize(im)
    assert isinstance(eq, np.ndarray) and eq.shape == want.shape
    np.testing.assert_array_equal(eq, hotbin.equalize(want))
    np.testing.assert_array_equal(hotbin.percentiles(im, 50), hotbin.percentiles(want, 50))
