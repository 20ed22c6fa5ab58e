"""``hotbin image`` (issue #13): bit depth kept, hostile files as one-line errors, outputs all or none."""
import os
import struct
import zlib

import numpy as np
import pytest

import hotbin
from hotbin import cli
from hotbin.render import png

Image = pytest.importorskip("PIL.Image")


def _run(capsys, *argv):
    """Exit code and stderr of ``hotbin image ARGV``, which must never raise."""
    code = cli.main(["image", *map(str, argv)])
    return code, capsys.readouterr().err


def _one_line_error(code, err, name):
    assert code == 1 and err.count("\n") == 1 and name in err and "Traceback" not in err, err


# --- 16-bit stays 16-bit ------------------------------------------------------------------

def test_16bit_colour_tiff_stays_16bit(tmp_path, capsys, rng):
    tifffile = pytest.importorskip("tifffile")
    for c in (3, 4):
        img = rng.integers(1000, 60000, (20, 30, c), dtype=np.uint16)
        tifffile.imwrite(tmp_path / "in.tif", img, photometric="rgb",
                         extrasamples=["unassalpha"] if c == 4 else None)
        for out in ("eq.tif", "eq.png"):
            assert cli.main(["image", str(tmp_path / "in.tif"), "--equalize", str(tmp_path / out)]) == 0
            assert "uint16" in capsys.readouterr().out
            back = tifffile.imread(tmp_path / out) if out.endswith(".tif") else png.read(tmp_path / out)
            assert back.dtype == np.uint16
            np.testing.assert_array_equal(back, hotbin.equalize(img))


def test_16bit_gray_tiff_and_png_stay_16bit(tmp_path, capsys, rng):
    img = rng.integers(100, 60000, (20, 30), dtype=np.uint16)
    Image.fromarray(img).save(tmp_path / "g.tif")
    png.write(tmp_path / "g.png", img)
    png.write(tmp_path / "c.png", rng.integers(0, 65536, (9, 11, 3), dtype=np.uint16))
    for src, out in (("g.tif", "e.tif"), ("g.png", "e.tif"), ("g.tif", "e.png"), ("c.png", "e.png")):
        assert cli.main(["image", str(tmp_path / src), "--equalize", str(tmp_path / out)]) == 0
        with Image.open(tmp_path / out) as im:
            assert im.mode.startswith("I") or out.endswith(".png")
        back = np.asarray(Image.open(tmp_path / out)) if out.endswith(".tif") else png.read(tmp_path / out)
        assert back.astype(np.uint16).max() > 255
        original = np.asarray(Image.open(tmp_path / src)) if src.endswith(".tif") else png.read(tmp_path / src)
        np.testing.assert_array_equal(back, hotbin.equalize(original.astype(np.uint16)))


def test_interlaced_16bit_colour_png_is_not_reduced(tmp_path, capsys, rng):
    from test_png import interlaced_png

    img = rng.integers(0, 65536, (13, 17, 3), dtype=np.uint16)
    (tmp_path / "i.png").write_bytes(interlaced_png(img))
    assert cli.main(["image", str(tmp_path / "i.png"), "--equalize", str(tmp_path / "o.png")]) == 0
    assert "3 channels (RGB), uint16" in capsys.readouterr().out
    np.testing.assert_array_equal(png.read(tmp_path / "o.png"), hotbin.equalize(img))


def test_16bit_to_an_8bit_format_is_refused(tmp_path, capsys, rng):
    png.write(tmp_path / "c.png", rng.integers(0, 65536, (9, 11, 3), dtype=np.uint16))
    for out in ("o.jpg", "o.bmp", "o.gif"):
        _one_line_error(*_run(capsys, tmp_path / "c.png", "--plot", tmp_path / "p.png",
                              "--equalize", tmp_path / out), out)
    assert sorted(os.listdir(tmp_path)) == ["c.png"]


# --- palettes are colours ----------------------------------------------------------------

@pytest.mark.parametrize("ext", ["png", "gif"])
def test_palette_files_counted_by_colour(tmp_path, capsys, rng, ext):
    rgb = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    im = Image.fromarray(rgb).quantize(32)
    im.save(tmp_path / f"p.{ext}")
    colours = np.asarray(im.convert("RGB"))
    assert cli.main(["image", str(tmp_path / f"p.{ext}"), "--equalize", str(tmp_path / "o.png")]) == 0
    out = capsys.readouterr().out
    assert "3 channels (RGB), uint8" in out
    lv = hotbin.luminance(colours)
    p1, p50, p99 = np.percentile(lv, [1, 50, 99], method="inverted_cdf")
    assert f"luma percentiles 1/50/99: {p1} / {p50} / {p99}" in out
    np.testing.assert_array_equal(png.read(tmp_path / "o.png"), hotbin.equalize(colours))


# --- hostile files ---------------------------------------------------------------------------

def _gif_bomb():
    return (b"GIF89a" + struct.pack("<HHBBB", 65535, 65535, 0, 0, 0) + b","
            + struct.pack("<HHHHB", 0, 0, 65535, 65535, 0) + b"\x08\x02\x4c\x01\x00;")


def _bmp_bomb():
    info = struct.pack("<IiiHHIIiiII", 40, 100000, 100000, 1, 24, 0, 0, 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 54 + 16, 0, 0, 54) + info + bytes(16)


def _tiff_bomb():
    entries = [(256, 4, 1, 100000), (257, 4, 1, 100000), (258, 3, 1, 8), (259, 3, 1, 1),
               (262, 3, 1, 1), (273, 4, 1, 8), (277, 3, 1, 1), (278, 4, 1, 100000), (279, 4, 1, 16)]
    ifd = struct.pack("<H", len(entries)) + b"".join(
        struct.pack("<HHII", tag, typ, n, v) if typ == 4 else struct.pack("<HHIHH", tag, typ, n, v, 0)
        for tag, typ, n, v in entries) + struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", 24) + bytes(16) + ifd


def _png_bomb():
    hdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 0, 0, 0, 0)
    return png._SIG + png._chunk(b"IHDR", hdr) + png._chunk(b"IDAT", zlib.compress(b"")) + png._chunk(b"IEND", b"")


@pytest.mark.parametrize("name, data", [("bomb.png", _png_bomb()), ("bomb.gif", _gif_bomb()),
                                        ("bomb.bmp", _bmp_bomb()), ("bomb.tif", _tiff_bomb())])
def test_decompression_bombs_are_one_line(tmp_path, capsys, name, data):
    (tmp_path / name).write_bytes(data)
    code, err = _run(capsys, tmp_path / name, "--plot", tmp_path / "p.png")
    _one_line_error(code, err, name)
    assert "pixels" in err and not (tmp_path / "p.png").exists()


def test_over_pillows_limit_is_an_error_not_a_warning(tmp_path, capsys, monkeypatch):
    Image.fromarray(np.zeros((40, 40, 3), np.uint8)).save(tmp_path / "x.gif")
    png.write(tmp_path / "x.png", np.zeros((40, 40, 3), np.uint8))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 1600 pixels: over, but under twice
    for name in ("x.gif", "x.png"):
        _one_line_error(*_run(capsys, tmp_path / name), name)


@pytest.mark.parametrize("fmt", ["GIF", "BMP", "TIFF", "PNG"])
def test_mutated_files_never_raise(tmp_path, capsys, rng, fmt):
    buf = tmp_path / "seed"
    Image.fromarray(rng.integers(0, 256, (12, 10, 3), dtype=np.uint8)).quantize(8).save(buf, format=fmt)
    good = buf.read_bytes()
    mutant = tmp_path / f"m.{fmt.lower()}"
    for _ in range(40):
        data = bytearray(good)
        for pos in rng.integers(0, len(data), rng.integers(1, 4)):
            data[pos] = rng.integers(0, 256)
        mutant.write_bytes(bytes(data))
        code, err = _run(capsys, mutant)
        assert code == 0 or (code == 1 and err.count("\n") == 1 and "Traceback" not in err), err


def test_memory_error_is_one_line(tmp_path, capsys, monkeypatch):
    from hotbin import images

    png.write(tmp_path / "x.png", np.zeros((4, 5, 3), np.uint8))

    def boom(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(images, "percentiles", boom)
    code, err = _run(capsys, tmp_path / "x.png")
    _one_line_error(code, err, "x.png")
    assert "memory" in err


# --- outputs all or none -------------------------------------------------------------------

def test_outputs_written_only_when_everything_succeeds(tmp_path, capsys, rng):
    png.write(tmp_path / "x.png", rng.integers(0, 256, (8, 9, 4), dtype=np.uint8))  # RGBA
    for out in ("out.jpg", "out.xyz", "nodir/out.png"):  # JPEG has no alpha; unknown suffix; no folder
        code, err = _run(capsys, tmp_path / "x.png", "--plot", tmp_path / "p.png",
                         "--equalize", tmp_path / out)
        _one_line_error(code, err, out)
        assert sorted(os.listdir(tmp_path)) == ["x.png"], out  # no plot, no temporary file
    _one_line_error(*_run(capsys, tmp_path / "x.png", "--plot", tmp_path / "s.png",
                          "--equalize", tmp_path / "s.png"), "s.png")
    assert cli.main(["image", str(tmp_path / "x.png"), "--plot", str(tmp_path / "p.png"),
                     "--equalize", str(tmp_path / "e.tif")]) == 0
    assert sorted(os.listdir(tmp_path)) == ["e.tif", "p.png", "x.png"]
    with Image.open(tmp_path / "e.tif") as im:
        assert im.mode == "RGBA"
