"""The command line as a user runs it (a subprocess): version, help, negative ranges, outputs
checked before any work and written by their suffix, a closed pipe (issue #15 items 3 and 4)."""
import subprocess
import sys

import numpy as np
import pytest

import hotbin


def _hotbin(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hotbin", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_version_and_help_with_examples():
    r = _hotbin("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"hotbin {hotbin.__version__}"
    r = _hotbin("--help")
    assert r.returncode == 0 and "examples:" in r.stdout and "--x-range -74.1,-73.8" in r.stdout


def _csv(tmp_path, rng, n=3000):
    x = rng.uniform(-74.2, -73.7, n)
    y = rng.uniform(40.5, 41.0, n)
    path = tmp_path / "trips.csv"
    with open(path, "w") as f:
        f.write("lon,lat\n")
        f.writelines(f"{float(a)!r},{float(b)!r}\n" for a, b in zip(x, y))
    return path, x, y


def test_negative_ranges_as_written(tmp_path, rng):
    path, x, y = _csv(tmp_path, rng)
    out = tmp_path / "counts.npy"
    r = _hotbin("heatmap", path, "--x", "lon", "--y", "lat", "--x-range", "-74.1,-73.8",
                "--y-range", "40.6,40.9", "--width", "30", "--height", "20", "-o", out)
    assert r.returncode == 0, r.stderr
    want = hotbin.heatmap(x, y, width=30, height=20, x_range=(-74.1, -73.8), y_range=(40.6, 40.9))
    np.testing.assert_array_equal(np.load(out), want.counts)
    # the = form and a negative value of another option are read the same way
    r = _hotbin("heatmap", path, "--x", "lon", "--y", "lat", "--x-range=-74.1,-73.8", "--width", "-3",
                "-o", out)
    assert r.returncode == 1 and "width" in r.stderr


@pytest.mark.parametrize("output, message", [("missing/dir/out.png", "no such directory"),
                                             ("out.bogus", "unknown format '.bogus'"),
                                             ("out", "no file suffix"), (".", "is a directory")])
def test_unwritable_outputs_are_refused_before_any_work(tmp_path, output, message):
    # the input does not exist: the output's error proves it was checked first
    r = _hotbin("heatmap", tmp_path / "no-such-input.csv", "--x", "a", "--y", "b", "-o", output, cwd=tmp_path)
    assert r.returncode == 1 and message in r.stderr, r.stderr
    assert "no-such-input" not in r.stderr


def test_outputs_by_suffix(tmp_path, rng):
    path, x, y = _csv(tmp_path, rng)
    base = ("heatmap", path, "--x", "lon", "--y", "lat", "--width", "16", "--height", "12")
    assert _hotbin(*base, "-o", tmp_path / "a.npy").returncode == 0
    want = hotbin.heatmap(x, y, width=16, height=12)
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), want.counts)
    assert _hotbin(*base, "-o", tmp_path / "a.png").returncode == 0
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pytest.importorskip("PIL")
    r = _hotbin(*base, "-o", tmp_path / "a.jpg")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.jpg").read_bytes()[:3] == b"\xff\xd8\xff"  # JPEG bytes, not PNG bytes


def test_a_closed_pipe_exits_quietly():
    p = subprocess.Popen([sys.executable, "-m", "hotbin", "info"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()  # the reader leaves before the first line (as `| head -0`)
    err = p.stderr.read().decode()
    p.stderr.close()
    assert p.wait(timeout=300) == 0 and err == ""


def test_notebook_reprs(rng, tmp_path):
    """Jupyter shows a Heatmap as its picture (opaque: on black under inferno) and a Histogram as an HTML summary."""
    from hotbin.render import png

    x = rng.normal(size=2000)
    hm = hotbin.heatmap(x, x[::-1], width=9, height=7)
    (tmp_path / "h.png").write_bytes(hm._repr_png_())
    np.testing.assert_array_equal(png.read(tmp_path / "h.png"), hm.shade(background="black")[::-1])
    h = hotbin.hist(x, 5, (-1, 1), xlabel="v<1>")
    page = h._repr_html_()
    inside = int(((x >= -1) & (x <= 1)).sum())
    assert f"<td>{inside}</td>" in page and f"<td>{x.size - inside}</td>" in page
    assert "v&lt;1&gt;" in page and "5 bins over [-1.0, 1.0]" in page
