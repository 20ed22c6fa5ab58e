"""Heatmaps (#4): cells, orientation, dropped points, determinism, shading, PNG and the CLI."""
import importlib
import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import hotbin
from hotbin.render import png
from hotbin.heatmap import Heatmap
from hotbin.core.ranges import data_range
from hotbin.render.shade import FLOOR, colormap, normalize, shade

from conftest import to_numpy


def hm_np(*args, **kw):
    hm = hotbin.heatmap(*args, **kw)
    return hm, to_numpy(hm.counts)


def points(rng, n=20_000, hot=0.5):
    """Uniform points in [0, 1)^2 with a share piled into one hot spot (never all zero)."""
    x = rng.random(n)
    y = rng.random(n)
    k = int(n * hot)
    x[:k] = 0.3 + 0.01 * rng.random(k)
    y[:k] = 0.7 + 0.01 * rng.random(k)
    return x, y


# --- cells and orientation -------------------------------------------------------

def test_orientation_low_y_is_row_0_and_bottom_of_png(backend, tmp_path):
    x = np.array([0.1, 0.9])
    y = np.array([0.05, 0.95])
    hm, c = hm_np(x, y, width=4, height=3, x_range=(0, 1), y_range=(0, 1), backend=backend)
    assert c.shape == (3, 4) and (hm.height, hm.width) == (3, 4)
    assert c[0, 0] == 1 and c[2, 3] == 1 and c.sum() == 2
    path = tmp_path / "o.png"
    hm.to_png(path, how="linear")
    img = png.read(path)
    assert img.shape == (3, 4, 4)
    assert img[2, 0, 3] == 255  # low y, low x: bottom-left of the picture
    assert img[0, 3, 3] == 255  # high y, high x: top-right
    assert img[0, 0, 3] == 0 and img[2, 3, 3] == 0


def test_half_open_edges_and_neighbours(backend):
    lo, hi = -1.5, 2.5
    below_hi = np.nextafter(hi, -np.inf)
    xs = np.array([lo, hi, below_hi, np.nextafter(lo, -np.inf), np.nextafter(lo, np.inf)])
    y = np.full(xs.size, 0.5)
    hm, c = hm_np(xs, y, width=8, height=1, x_range=(lo, hi), y_range=(0, 1), backend=backend)
    assert hm.dropped == 2  # x == hi and the float just below lo
    assert c[0, 0] == 2 and c[0, 7] == 1
    # the same on the y axis (rows)
    hm, c = hm_np(y, xs, width=1, height=8, x_range=(0, 1), y_range=(lo, hi), backend=backend)
    assert hm.dropped == 2 and c[0, 0] == 2 and c[7, 0] == 1


def test_interior_edges_follow_linspace(backend):
    """A point exactly on an interior edge belongs to the cell above it, as the exact rule says."""
    edges = np.linspace(0.0, 1.0, 11)
    x = np.concatenate([edges[:-1], np.nextafter(edges[1:-1], -np.inf)])
    y = np.full(x.size, 0.5)
    _, c = hm_np(x, y, width=10, height=1, x_range=(0, 1), y_range=(0, 1), backend=backend)
    expect = np.ones(10, np.int64)
    expect[:-1] += 1  # the float below edges[i+1] is still in cell i
    np.testing.assert_array_equal(c[0], expect)


def test_dropped_counts_outside_nan_inf(backend, rng):
    x, y = points(rng, 5000)
    x[:7] = np.nan
    y[7:10] = np.inf
    x[10:15] = -np.inf
    x[15:20] = 2.0
    hm, c = hm_np(x, y, width=16, height=16, x_range=(0, 1), y_range=(0, 1), backend=backend)
    assert hm.dropped == 20
    assert c.dtype == np.int64 and int(c.sum()) + hm.dropped == x.size


def test_automatic_range_keeps_every_finite_point(backend, rng):
    x, y = points(rng, 3000)
    x[5] = np.nan
    y[6] = np.inf
    hm, c = hm_np(x * 40 - 7, y * 3, width=37, height=23, backend=backend)
    assert hm.dropped == 2 and int(c.sum()) == x.size - 2
    fx = (x * 40 - 7)[np.isfinite(x)]
    assert hm.x_range == (fx.min(), fx.max()) and hm.x_closed and hm.y_closed
    assert c[:, -1].sum() >= 1 and c[-1, :].sum() >= 1  # the maxima land in the last cells


def test_constant_and_empty_data(backend):
    hm, c = hm_np(np.full(9, 3.0), np.full(9, -2.0), width=5, height=5, backend=backend)
    assert hm.x_range == (2.5, 3.5) and hm.y_range == (-2.5, -1.5)
    assert c[2, 2] == 9 and hm.dropped == 0
    hm, c = hm_np(np.array([]), np.array([]), width=3, height=2, backend=backend)
    assert c.shape == (2, 3) and c.sum() == 0 and hm.dropped == 0


def test_data_range_is_the_extent():
    assert data_range(1.0, 2.0) == (1.0, 2.0)  # never widened by an ulp
    assert data_range(5, 5) == (4.5, 5.5)


def test_parity_with_numpy_histogram2d_interior(backend, rng):
    x, y = points(rng, 50_000, hot=0.3)
    x = (x * 10 - 3).astype(np.float32)
    y = (y * 5 + 1).astype(np.float32)
    xr, yr = (-3.0, 7.0), (1.0, 6.0)
    ref, _, _ = np.histogram2d(y.astype(np.float64), x.astype(np.float64), bins=(50, 70),
                               range=(yr, xr))
    hm, c = hm_np(x, y, width=70, height=50, x_range=xr, y_range=yr, backend=backend)
    # NumPy closes its last row/column; none of these points sits on the upper edges
    assert not np.any(x == xr[1]) and not np.any(y == yr[1])
    np.testing.assert_array_equal(c, ref.astype(np.int64))
    assert hm.dropped == 0


def test_tiling_quadrants_sum_to_the_whole(backend, rng):
    x, y = points(rng, 40_000, hot=0.5)
    x = np.concatenate([x, [0.5, 0.5, 0.0, 1.0 - 2**-53]])  # points on the seams
    y = np.concatenate([y, [0.5, 0.25, 0.5, 0.5]])
    kw = dict(width=32, height=32, backend=backend)
    whole, c = hm_np(x, y, x_range=(0, 1), y_range=(0, 1), **kw)
    q = {}
    for i, yr in enumerate([(0, 0.5), (0.5, 1)]):
        for j, xr in enumerate([(0, 0.5), (0.5, 1)]):
            q[i, j] = hm_np(x, y, width=16, height=16, x_range=xr, y_range=yr, backend=backend)[1]
    tiled = np.block([[q[0, 0], q[0, 1]], [q[1, 0], q[1, 1]]])
    np.testing.assert_array_equal(tiled, c)
    assert sum(int(v.sum()) for v in q.values()) == int(c.sum()) == x.size - whole.dropped


def test_weights_sum_per_cell(backend, rng):
    x, y = points(rng, 10_000)
    w = rng.normal(size=x.size)
    hm, c = hm_np(x, y, w, width=20, height=10, x_range=(0, 1), y_range=(0, 1), backend=backend)
    ref, _, _ = np.histogram2d(y, x, bins=(10, 20), range=((0, 1), (0, 1)), weights=w)
    assert c.dtype == np.float64
    np.testing.assert_allclose(c, ref, rtol=1e-12, atol=1e-9)
    _, ci = hm_np(x, y, np.ones(x.size, np.int32), width=20, height=10, x_range=(0, 1),
                  y_range=(0, 1), backend=backend)
    assert ci.dtype == np.float64
    np.testing.assert_array_equal(ci, hm_np(x, y, width=20, height=10, x_range=(0, 1),
                                            y_range=(0, 1), backend=backend)[1])


def test_deterministic_sums_are_bitwise_equal_under_permutation(backend, rng):
    x, y = points(rng, 30_000, hot=0.6)
    w = rng.normal(size=x.size) * 10.0 ** rng.integers(-6, 6, x.size)
    kw = dict(width=16, height=16, x_range=(0, 1), y_range=(0, 1), backend=backend,
              deterministic=True)
    _, a = hm_np(x, y, w, **kw)
    for _ in range(2):
        p = rng.permutation(x.size)
        _, b = hm_np(x[p], y[p], w[p], **kw)
        assert a.tobytes() == b.tobytes()
    ref, _, _ = np.histogram2d(y, x, bins=16, range=((0, 1), (0, 1)), weights=w)
    np.testing.assert_allclose(a, ref, rtol=1e-9, atol=1e-9 * np.abs(w).max())


def test_chunks_sum_to_the_whole(backend, rng):
    x, y = points(rng, 9000)
    kw = dict(width=12, height=9, x_range=(0, 1), y_range=(0, 1), backend=backend)
    whole = hotbin.heatmap(x, y, **kw)
    parts = [hotbin.heatmap(x[s:s + 2000], y[s:s + 2000], **kw) for s in range(0, x.size, 2000)]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    np.testing.assert_array_equal(to_numpy(total.counts), to_numpy(whole.counts))
    with pytest.raises(ValueError, match="other"):
        whole + hotbin.heatmap(x, y, width=3, height=9, x_range=(0, 1), y_range=(0, 1))


def test_layouts_and_dtypes(backend, rng):
    x, y = points(rng, 4000)
    kw = dict(width=8, height=8, x_range=(0, 1), y_range=(0, 1), backend=backend)
    _, ref = hm_np(x, y, **kw)
    xy = np.stack([x, y], axis=1)  # non-contiguous columns
    np.testing.assert_array_equal(hm_np(xy[:, 0], xy[:, 1], **kw)[1], ref)
    np.testing.assert_array_equal(hm_np(x.astype(">f8"), y.astype(">f8"), **kw)[1], ref)
    xi = np.array([0, 1, 2, 3, 3], np.int16)
    _, ci = hm_np(xi, xi, width=4, height=4, backend=backend)
    np.testing.assert_array_equal(np.diag(ci), [1, 1, 1, 2])


@pytest.mark.parametrize("kw, exc, word", [
    (dict(width=0), ValueError, "width"),
    (dict(height=-3), ValueError, "height"),
    (dict(width=2.5), TypeError, "width"),
    (dict(x_range=(1, 0)), ValueError, "x_range"),
    (dict(y_range=(0, np.inf)), ValueError, "y_range"),
    (dict(x_range=(np.nan, 1)), ValueError, "x_range"),
    (dict(x_range=(2, 2)), ValueError, "x_range"),
    (dict(y_range=(0, 1, 2)), ValueError, "y_range"),
    (dict(x_range=(0j, 1)), TypeError, "x_range"),
])
def test_bad_arguments(kw, exc, word):
    x = np.array([0.1, 0.2])
    with pytest.raises(exc, match=word):
        hotbin.heatmap(x, x, **kw)


def test_bad_inputs():
    x = np.array([0.1, 0.2])
    with pytest.raises(ValueError, match="y"):
        hotbin.heatmap(x, np.array([0.1, 0.2, 0.3]))
    with pytest.raises(TypeError, match="x"):
        hotbin.heatmap(x.astype(complex), x)
    with pytest.raises(TypeError, match="y"):
        hotbin.heatmap(x, np.array([object(), object()]))
    with pytest.raises(TypeError, match="weights"):
        hotbin.heatmap(x, x, weights=np.array([1j, 2j]))
    with pytest.raises(ValueError, match="weights"):
        hotbin.heatmap(x, x, weights=np.ones(3))
    with pytest.raises(ValueError, match="x, y"):
        hotbin.heatmap(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="weights"):
        hotbin.heatmap(x, x, weights=np.array([np.nan, 1.0]), deterministic=True)


# --- shading --------------------------------------------------------------------

@pytest.mark.parametrize("how", ["eq_hist", "log", "cbrt", "linear"])
@pytest.mark.parametrize("cmap", ["inferno", "gray", "viridis", "fire"])
def test_shade_empty_transparent_nonempty_visible(how, cmap, rng):
    counts = np.zeros((30, 40), np.int64)
    counts[rng.integers(0, 30, 200), rng.integers(0, 40, 200)] = rng.integers(1, 10**6, 200)
    counts[0, 0] = 1
    img = shade(counts, how=how, cmap=cmap)
    assert img.shape == (30, 40, 4) and img.dtype == np.uint8
    empty = counts == 0
    assert np.all(img[empty] == 0)
    assert np.all(img[~empty, 3] == 255)
    lowest = colormap(cmap)[0]
    assert not np.any(np.all(img[~empty, :3] == lowest, axis=1))  # not the invisible bottom colour


@pytest.mark.parametrize("how", ["linear", "log", "cbrt", "eq_hist"])
def test_shade_is_monotone_in_count(how):
    counts = np.arange(0, 2000, dtype=np.int64).reshape(40, 50) ** 2
    t = normalize(counts.astype(float), how)
    nz = counts.ravel() > 0
    assert np.all(np.diff(t.ravel()[nz]) >= 0)
    assert t.ravel()[nz][0] == 0 and t.ravel()[nz][-1] == 1
    gray = shade(counts, how=how, cmap="gray")[..., 0].ravel()[nz].astype(int)
    assert np.all(np.diff(gray) >= 0) and gray[0] >= round(FLOOR * 255) and gray[-1] == 255


def test_eq_hist_spreads_levels():
    counts = np.array([[1, 1, 1, 1, 2, 3, 1000]])
    t = normalize(counts.astype(float), "eq_hist")[0]
    assert t[0] == 0 and t[-1] == 1 and 0 < t[4] < t[5] < 1
    assert np.all(t[:4] == 0)


def test_span_clips_and_background():
    counts = np.array([[0, 1, 5, 10, 100]])
    t = normalize(counts.astype(float), "linear", span=(5, 10))[0]
    np.testing.assert_allclose(t, [0, 0, 0, 1, 1])
    img = shade(counts, how="linear", background="black")
    assert tuple(img[0, 0]) == (0, 0, 0, 255)
    with pytest.raises(ValueError, match="span"):
        shade(counts, span=(3, 1))
    with pytest.raises(ValueError, match="how"):
        shade(counts, how="sqrt")
    with pytest.raises(ValueError, match="cmap"):
        shade(counts, cmap="jet-ish")


def test_smoothing_spreads_and_keeps_mass():
    counts = np.zeros((21, 21))
    counts[10, 10] = 100.0
    from hotbin.render.shade import blur

    b = blur(counts, 2.0)
    assert abs(b.sum() - 100.0) < 1e-9 and b[10, 10] < 100 and b[10, 13] > 0
    np.testing.assert_allclose(b, b.T)
    img = shade(counts, smooth=2.0)
    assert img[10, 14, 3] == 255 and img[0, 0, 3] == 0
    with pytest.raises(ValueError, match="smooth"):
        shade(counts, smooth=-1)


def test_weighted_negative_values_shade(rng):
    counts = rng.normal(size=(10, 10))
    counts[0, :] = 0
    for how in ("linear", "log", "cbrt", "eq_hist"):
        img = shade(counts, how=how)
        assert np.all(img[0, :, 3] == 0) and np.all(img[1:, :, 3] == 255)


def test_png_roundtrip_and_xarray(backend, rng, tmp_path):
    x, y = points(rng, 5000)
    hm = hotbin.heatmap(x, y, width=40, height=30, backend=backend)
    path = tmp_path / "h.png"
    hm.to_png(path, cmap="viridis", smooth=1.0)
    img = png.read(path)
    np.testing.assert_array_equal(img, hm.shade(cmap="viridis", smooth=1.0)[::-1])
    xr = pytest.importorskip("xarray")
    da = hm.to_xarray()
    assert isinstance(da, xr.DataArray) and da.dims == ("y", "x") and da.shape == (30, 40)
    np.testing.assert_allclose(da.x.values[[0, -1]], hm.x_edges[[0, -2]] + np.diff(hm.x_edges)[[0, -1]] / 2)
    assert da.attrs["x_range"] == hm.x_range and da.attrs["dropped"] == hm.dropped


# --- CLI ------------------------------------------------------------------------

def cli(*args, cwd=None, block=()):
    """Run ``hotbin heatmap ARGS``; ``block`` names modules made unimportable (a bare machine)."""
    # not ``-m hotbin.cli``: that runs cli.py as __main__, a second copy of its UserError class
    main = (f"import sys; sys.modules.update(dict.fromkeys({list(block)!r})); "
            "from hotbin.cli import main; sys.exit(main())")
    return limited(main, "heatmap", *args, cwd=cwd)


#: address space of the subprocesses that try hostile sizes: a regression fails with a
#: MemoryError there instead of calling the OOM killer onto the machine
LIMIT = 6 << 30


def limited(code, *args, cwd=None):
    """Run ``python -c code ARGS`` with at most :data:`LIMIT` bytes of address space."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120, preexec_fn=cap)


def _table(rng, n=30_000):
    x, y = points(rng, n, hot=0.5)
    x[:3] = np.nan
    return x * 100, y * 50 - 10, rng.random(n)


def _in_memory(x, y, width, height):
    return hotbin.heatmap(x, y, width=width, height=height)


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas not installed")
def test_cli_csv_streams_chunks_like_in_memory(rng, tmp_path):
    import pandas as pd

    x, y, w = _table(rng)
    path = tmp_path / "pts.csv"
    pd.DataFrame({"lon": x, "lat": y, "w": w}).to_csv(path, index=False)
    out = tmp_path / "out.png"
    r = cli(path, "--x", "lon", "--y", "lat", "--width", 64, "--height", 48, "--chunk-rows", 7000,
            "-o", out)
    assert r.returncode == 0, r.stderr
    back = pd.read_csv(path)
    ref = _in_memory(back["lon"].to_numpy(), back["lat"].to_numpy(), 64, 48)
    np.testing.assert_array_equal(png.read(out), ref.shade()[::-1])
    r = cli(path, "--x", "lon", "--y", "lat", "--weight", "w", "--width", 16, "--height", 16,
            "--x-range", "0,100", "--y-range=-10,40", "--how", "log", "--cmap", "viridis", "-o", out)
    assert r.returncode == 0, r.stderr and png.read(out).shape == (16, 16, 4)


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow not installed")
def test_cli_parquet(rng, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    x, y, _ = _table(rng)
    path = tmp_path / "pts.parquet"
    pq.write_table(pa.table({"x": x, "y": y}), path, row_group_size=5000)
    out = tmp_path / "p.png"
    r = cli(path, "--x", "x", "--y", "y", "--width", 50, "--height", 50, "--chunk-rows", 4000,
            "--how", "linear", "-o", out)
    assert r.returncode == 0, r.stderr
    ref = _in_memory(x, y, 50, 50)
    np.testing.assert_array_equal(png.read(out), ref.shade(how="linear")[::-1])


def test_cli_demo_needs_only_numpy_and_numba(tmp_path):
    out = tmp_path / "demo.png"
    r = cli("--demo", "--width", 256, "--height", 256, "-o", out,
            block=("pandas", "pyarrow", "xarray", "datashader", "matplotlib", "PIL", "scipy"))
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    img = png.read(out)
    assert img.shape == (256, 256, 4)
    assert len(np.unique(img.reshape(-1, 4), axis=0)) > 50  # a picture, not a flat field


@pytest.mark.parametrize("args, word", [
    (["missing.csv", "--x", "a", "--y", "b"], "missing.csv"),
    (["pts.csv", "--x", "nope", "--y", "b"], "nope"),
    (["garbage.parquet", "--x", "a", "--y", "b"], "garbage.parquet"),
    (["pts.csv", "--x", "a"], "--y"),
    ([], "INPUT"),
    (["pts.csv", "--x", "a", "--y", "b", "--cmap", "nosuch"], "nosuch"),
])
def test_cli_errors_are_one_line(args, word, tmp_path):
    (tmp_path / "pts.csv").write_text("a,b\n1,2\n3,4\n")
    (tmp_path / "garbage.parquet").write_bytes(b"PAR1 this is not parquet at all")
    r = cli(*args, "-o", tmp_path / "x.png", cwd=tmp_path)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr and word in lines[0]


def test_cli_without_pyarrow_names_the_install_command(tmp_path):
    """CSV and Parquet are both read by pyarrow (pandas is not needed to read files)."""
    (tmp_path / "pts.csv").write_text("a,b\n1,2\n")
    (tmp_path / "pts.parquet").write_bytes(b"PAR1")
    for name in ("pts.csv", "pts.parquet"):
        r = cli(tmp_path / name, "--x", "a", "--y", "b", "-o", tmp_path / "o.png", block=("pyarrow",))
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and len(lines) == 1 and 'pip install "hotbin[io]"' in lines[0]


def test_heatmap_is_exported():
    assert hotbin.Heatmap is Heatmap and "heatmap" in hotbin.__all__


# --- automatic ranges: NumPy's edges, closed top (issue #13 item 1) ----------------

def _np2d(x, y, width, height):
    """numpy.histogram2d of the finite points, as a heatmap grid (rows = y)."""
    f = np.isfinite(x) & np.isfinite(y)
    ref, ye, xe = np.histogram2d(y[f], x[f], bins=(height, width))
    return ref.astype(np.int64), xe, ye


def test_whole_numbers_land_where_numpy_puts_them(backend):
    v = np.arange(101, dtype=np.float64)  # 0..100 in 100 cells: v in cell v (100 in the last)
    hm, c = hm_np(v, v[::-1].copy(), width=100, height=100, backend=backend)
    ref, xe, ye = _np2d(v, v[::-1], 100, 100)
    np.testing.assert_array_equal(c, ref)
    assert c.sum(axis=0).tolist() == [1] * 99 + [2] and hm.dropped == 0  # v in column v
    assert c.sum(axis=1).tolist() == [1] * 99 + [2]
    np.testing.assert_array_equal(hm.x_edges, xe)
    np.testing.assert_array_equal(hm.y_edges, ye)
    assert hm.x_range == (0.0, 100.0) and hm.x_closed and hm.y_closed
    xi = np.arange(101, dtype=np.int32)  # integer data too
    np.testing.assert_array_equal(hm_np(xi, xi, width=100, height=100, backend=backend)[1],
                                  _np2d(xi.astype(float), xi.astype(float), 100, 100)[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gps_like_rounded_values_equal_numpy(backend, rng, dtype):
    n = 40_000
    x = np.round(rng.normal(2.35, 0.02, n), 4).astype(dtype)  # 1e-4 grid: many on edges
    y = np.round(rng.normal(48.86, 0.015, n), 4).astype(dtype)
    x[:3] = np.nan
    for w, h in ((100, 80), (97, 61), (512, 512)):
        hm, c = hm_np(x, y, width=w, height=h, backend=backend)
        ref, _, _ = _np2d(x.astype(np.float64), y.astype(np.float64), w, h)
        np.testing.assert_array_equal(c, ref)
        assert hm.dropped == 3


def test_given_range_stays_half_open_and_closed_overrides(backend):
    v = np.arange(101, dtype=np.float64)
    hm, c = hm_np(v, v, width=100, height=100, x_range=(0, 100), y_range=(0, 100), backend=backend)
    assert hm.dropped == 1 and not hm.x_closed and not hm.y_closed  # 100 is outside [0, 100)
    hm, c = hm_np(v, v, width=100, height=100, x_range=(0, 100), y_range=(0, 100), closed=True,
                  backend=backend)
    assert hm.dropped == 0 and c[-1, -1] == 2
    hm, c = hm_np(v, v, width=100, height=100, closed=(False, True), backend=backend)
    assert (hm.x_closed, hm.y_closed) == (False, True) and hm.dropped == 1
    with pytest.raises(TypeError, match="closed"):
        hotbin.heatmap(v, v, closed="yes")


def test_closure_is_recorded_in_repr_add_and_xarray(rng):
    x, y = points(rng, 2000)
    auto = hotbin.heatmap(x, y, width=8, height=8)
    given = hotbin.heatmap(x, y, width=8, height=8, x_range=auto.x_range, y_range=auto.y_range)
    assert "]" in repr(auto).split("x_range=")[1].split(",")[1] and ")" in repr(given)
    with pytest.raises(ValueError, match="other"):
        auto + given  # same ranges, different cells (the top is closed on one side only)
    half = hotbin.heatmap(x[:1000], y[:1000], width=8, height=8, x_range=auto.x_range,
                          y_range=auto.y_range, closed=True)
    rest = hotbin.heatmap(x[1000:], y[1000:], width=8, height=8, x_range=auto.x_range,
                          y_range=auto.y_range, closed=True)
    total = half + rest
    np.testing.assert_array_equal(total.counts, auto.counts)
    assert total.x_closed and total.dropped == 0
    xr = pytest.importorskip("xarray")
    da = auto.to_xarray()
    assert isinstance(da, xr.DataArray) and da.attrs["x_closed"] and da.attrs["y_closed"]


# --- percentile ranges (issue #13 item 2) -------------------------------------------

def test_clip_ranges_are_exact_percentiles(backend, rng):
    x, y = points(rng, 20_000)
    x[:5] = 1e9  # outliers squeeze the picture into one column without clip
    y[5:8] = -1e9
    x[8] = np.nan
    hm, c = hm_np(x, y, width=50, height=40, clip=(0.1, 99.9), backend=backend)
    fx, fy = x[np.isfinite(x)], y
    assert hm.x_range == (np.percentile(fx, 0.1, method="lower"), np.percentile(fx, 99.9, method="higher"))
    assert hm.y_range == (np.percentile(fy, 0.1, method="lower"), np.percentile(fy, 99.9, method="higher"))
    assert hm.x_closed and hm.y_closed
    inside = ((x >= hm.x_range[0]) & (x <= hm.x_range[1]) & (y >= hm.y_range[0]) & (y <= hm.y_range[1]))
    assert hm.dropped == x.size - inside.sum() and int(c.sum()) == inside.sum()
    ref, _, _ = np.histogram2d(y[inside], x[inside], bins=(40, 50), range=(hm.y_range, hm.x_range))
    np.testing.assert_array_equal(c, ref.astype(np.int64))
    full = hotbin.heatmap(x, y, width=50, height=40, clip=(0, 100))
    assert full.x_range == (fx.min(), fx.max()) and full.dropped == 1
    # a given range is kept; only the other axis is clipped
    hm = hotbin.heatmap(x, y, width=50, height=40, x_range=(0, 1), clip=(1, 99))
    assert hm.x_range == (0.0, 1.0) and not hm.x_closed and hm.y_closed


def test_percentile_selection_in_passes_equals_numpy(rng):
    from hotbin.core.ranges import percentile_ranges

    a = rng.normal(size=300_000) * 10.0 ** rng.integers(-8, 8, 300_000)
    a[:30_000] = np.round(a[:30_000], 1)  # many ties
    a[5] = -0.0
    a[7] = np.inf
    b = rng.integers(-3, 3, a.size).astype(np.float64)
    b[0] = np.nan
    chunks = [slice(i, i + 70_000) for i in range(0, a.size, 70_000)]
    calls = []

    def run_pass(fn, merge):  # merged as they come, like the streaming CLI
        calls.append(1)
        acc = merge([])
        for s in chunks:
            acc = merge([acc, fn(a[s], b[s])])
        return acc

    for q in [(0, 100), (0.1, 99.9), (50, 50.0001), (3.7, 61.2)]:
        calls.clear()
        got = percentile_ranges(run_pass, 2, q)
        assert len(calls) <= 4
        for col, g in zip((a, b), got):
            f = col[np.isfinite(col)]
            assert g == (np.percentile(f, q[0], method="lower"), np.percentile(f, q[1], method="higher"))
    assert percentile_ranges(lambda fn, merge: merge([fn(np.array([np.nan]))]), 1, (1, 99)) == [None]


@pytest.mark.parametrize("clip", [(5, 1), (-1, 50), (0, 101), (1, 2, 3), "0,1", (np.nan, 50)])
def test_bad_clip(clip):
    with pytest.raises(ValueError, match="clip"):
        hotbin.heatmap(np.array([0.1, 0.2]), np.array([0.1, 0.2]), clip=clip)


# --- weighted shading and colormaps (issue #13 item 6) ---------------------------------

def test_weighted_zero_sum_cells_are_not_empty(backend):
    x = np.array([0.1, 0.1, 0.6, 0.9])
    y = np.array([0.1, 0.1, 0.1, 0.9])
    w = np.array([1.0, -1.0, 2.0, 3.0])  # cell (0, 0) holds two points summing to 0
    hm = hotbin.heatmap(x, y, w, width=4, height=4, x_range=(0, 1), y_range=(0, 1), backend=backend)
    c, p = to_numpy(hm.counts), to_numpy(hm.points)
    assert c[0, 0] == 0 and p[0, 0] == 2 and p.dtype == np.int64 and int(p.sum()) == 4
    for how in ("linear", "log", "cbrt", "eq_hist"):
        img = hm.shade(how=how)
        assert img[0, 0, 3] == 255 and img[0, 1, 3] == 0
        assert (img[..., 3] == 255).sum() == 3
    unweighted = hotbin.heatmap(x, y, width=4, height=4, x_range=(0, 1), y_range=(0, 1), backend=backend)
    assert unweighted.points is unweighted.counts
    merged = hm + hm
    np.testing.assert_array_equal(to_numpy(merged.points), 2 * p)


def test_cmap_list_of_unit_floats_is_not_black():
    counts = np.arange(1, 17, dtype=np.int64).reshape(4, 4)
    img = shade(counts, how="linear", cmap=[(0.0, 0.0, 0.0), (1.0, 0.5, 0.0)])
    assert tuple(img[-1, -1, :3]) == (255, 128, 0)
    np.testing.assert_array_equal(colormap([(0.0, 0.0, 0.0), (1.0, 0.5, 0.0)]),
                                  colormap([(0, 0, 0), (255, 127.5, 0)]))
    np.testing.assert_array_equal(colormap(np.array([[0, 0, 0, 1], [1, 1, 1, 1]], float))[-1], [255] * 3)
    assert tuple(colormap([[10, 20, 30]])[0]) == (10, 20, 30)
    with pytest.raises(ValueError, match="cmap"):
        colormap([(0, 0, 300)])
    with pytest.raises(ValueError, match="cmap"):
        colormap([(0.5, 0.5)])


def test_cmap_matplotlib_objects_and_names():
    mpl = pytest.importorskip("matplotlib")
    cm = mpl.colormaps["Blues"]
    table = colormap(cm)
    want = np.rint(cm(np.linspace(0, 1, 256))[:, :3] * 255).astype(np.uint8)
    np.testing.assert_array_equal(table, want)
    np.testing.assert_array_equal(colormap("Blues"), want)
    assert colormap("viridis_r")[0].tolist() == colormap("viridis")[-1].tolist()
    img = shade(np.arange(1, 5).reshape(2, 2), cmap=cm)
    assert img.shape == (2, 2, 4) and np.all(img[..., 3] == 255)


def test_cmap_unknown_name_lists_the_choices():
    with pytest.raises(ValueError, match="cmap.*inferno.*viridis"):
        colormap("no-such-map")


# --- sizes checked before allocating (issue #13 item 9) --------------------------------

@pytest.mark.parametrize("w, h", [(10**9, 10**9), (2**16, 2**16), (2**31, 2), (10**12, 1)])
def test_huge_grids_are_refused_before_allocating(w, h):
    code = ("import numpy as np, hotbin\n"
            "try:\n"
            f"    hotbin.heatmap(np.array([0.5]), np.array([0.5]), width={w}, height={h})\n"
            "except ValueError as e:\n"
            "    print('refused:', e)\n")
    r = limited(code)
    assert r.returncode == 0 and "refused: width, height" in r.stdout, r.stderr[-2000:]


def test_grid_larger_than_memory_is_refused(monkeypatch):
    from hotbin.core import ranges

    monkeypatch.setattr(ranges, "_available_memory", lambda: 1 << 20)
    monkeypatch.setattr(ranges, "ASK_MEMORY", 0)
    with pytest.raises(ValueError, match="width, height.*memory"):
        hotbin.heatmap(np.array([0.5]), np.array([0.5]), width=1000, height=1000)
    hotbin.heatmap(np.array([0.5]), np.array([0.5]), width=100, height=100)  # 160 kB fits


def test_small_grids_do_not_ask_for_memory(monkeypatch):
    """Reading the memory available costs ~170 µs: only grids over ASK_MEMORY bytes ask."""
    from hotbin.core import ranges

    asked = []
    monkeypatch.setattr(ranges, "_available_memory", lambda: asked.append(1) or 1 << 40)
    hotbin.heatmap(np.array([0.5]), np.array([0.5]), width=1024, height=1024)
    assert not asked
    ranges.check_cells(1 << 15, 1 << 15)  # 16 GiB of cells: asked
    assert asked


def test_huge_smoothing_does_not_allocate_taps():
    code = ("import numpy as np\n"
            "from hotbin.render.shade import blur, shade\n"
            "counts = np.zeros((9, 9)); counts[4, 4] = 5.0\n"
            "assert np.all(shade(counts, smooth=1e9)[..., 3] == 255)\n"  # reaches every cell
            "b = blur(counts, 1e12)\n"
            "assert np.all(b > 0) and b.sum() < 5.0\n"  # most of the mass leaves the grid
            "assert abs(blur(counts, 1.0).sum() - 5.0) < 1e-12\n"  # narrow blurs keep their mass
            "print('ok')\n")
    r = limited(code)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


@pytest.mark.parametrize("args, word", [
    (["--width", "1000000000"], "width"),
    (["--width", "1000000000", "--height", "1000000000"], "width"),
    (["--clip", "50,10"], "clip"),
    (["--clip", "0,200"], "clip"),
    (["--smooth", "nan"], "smooth"),
])
def test_cli_sizes_and_clip_are_checked_first(tmp_path, args, word):
    (tmp_path / "pts.csv").write_text("a,b\n1,2\n3,4\n")
    r = cli(tmp_path / "pts.csv", "--x", "a", "--y", "b", *args, "-o", tmp_path / "o.png")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and "Traceback" not in r.stderr and word in lines[0]


def test_cli_huge_smoothing_renders(tmp_path):
    (tmp_path / "pts.csv").write_text("a,b\n1,2\n3,4\n")
    out = tmp_path / "s.png"
    r = cli(tmp_path / "pts.csv", "--x", "a", "--y", "b", "--width", 16, "--height", 16,
            "--smooth", "1e9", "-o", out)
    assert r.returncode == 0, r.stderr
    assert np.all(png.read(out)[..., 3] == 255)
    assert "ranges: x [1, 3], y [2, 4]; 0 of 2 points outside (dropped)" in r.stderr


def test_count_values_are_made_when_first_read():
    """A plain count leaves its float64 values to the first read (a pass over the grid that
    callers of counts never need); they are the counts, made once."""
    x = np.random.default_rng(3).random(50_000)
    hm = hotbin.heatmap(x, x[::-1], width=256, height=128)
    v = hm.values
    assert v.dtype == np.float64 and np.array_equal(v, hm.counts.astype(np.float64))
    assert hm.values is v
    assert np.array_equal((hm + hm).values, 2 * v)


def _ulps_around(lo, hi, dtype):
    """Values of ``dtype`` from a few floats below ``lo`` to a few above ``hi``."""
    vals = []
    for end in (lo, hi):
        v = np.array(end, dtype)
        down, up = [v], [v]
        for _ in range(3):
            down.append(np.nextafter(down[-1], dtype(-np.inf)))
            up.append(np.nextafter(up[-1], dtype(np.inf)))
        vals += down + up
    return np.unique(np.array(vals, dtype))


#: ranges a few floats wide, where linspace's cells have zero width at one end
_NARROW = [(1.0, float(np.nextafter(1.0, 2.0))), (1.0, float(np.nextafter(np.nextafter(1.0, 2.0), 2.0))),
           (-1.0, float(np.nextafter(-1.0, 0.0))), (0.0, 5e-324), (-0.0, 1e-323),
           (1e300, float(np.nextafter(1e300, np.inf))), (1.0, float(np.nextafter(np.float32(1), 2)))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("r", _NARROW)
def test_narrow_range_cells_as_numpy_edges(backend, dtype, r):
    """Cells narrower than a float: every value lands in the cell of NumPy's edges
    (``linspace(lo, hi, n + 1)``, ``edges[i] <= v < edges[i+1]``), on both axes, open or closed."""
    if max(abs(r[0]), abs(r[1])) > float(np.finfo(dtype).max):
        pytest.skip("the range is beyond float32's")
    v = _ulps_around(*r, dtype)
    for n in range(1, 6):
        edges = np.linspace(*r, n + 1)
        x64 = v.astype(np.float64)
        keep = (x64 >= r[0]) & (x64 < r[1])
        want = np.bincount(np.searchsorted(edges, x64[keep], "right") - 1, minlength=n)
        other = np.zeros(v.size, dtype)
        hm = hotbin.heatmap(v, other, width=n, height=1, x_range=r, y_range=(-1, 1), backend=backend)
        assert to_numpy(hm.counts)[0].tolist() == want.tolist(), n
        assert hm.dropped == v.size - keep.sum()
        hm = hotbin.heatmap(other, v, width=1, height=n, x_range=(-1, 1), y_range=r, backend=backend)
        assert to_numpy(hm.counts)[:, 0].tolist() == want.tolist(), n
        closed = hotbin.heatmap(v, other, width=n, height=1, x_range=r, y_range=(-1, 1), closed=True,
                                backend=backend)
        ref, _, _ = np.histogram2d(other, v, [1, n], [(-1, 1), r])
        assert to_numpy(closed.counts).tolist() == ref.astype(np.int64).tolist(), n


def test_mercator_drops_points_off_the_map_symmetrically(backend, rng):
    """Web Mercator keeps ``|lon| <= 180`` and ``|lat| < MAX_LAT``: points off the map (infinite,
    beyond the poles' cut, past the antimeridian) are NaN from ``mercator`` and dropped and
    counted by the heatmap, for every range, and north and south alike."""
    from hotbin.render.project import MAX_LAT, mercator

    edge = [np.inf, -np.inf, 86.0, -86.0, 85.0, -85.0, MAX_LAT, -MAX_LAT, 90.0, -90.0, np.nan, 0.0, 0.0]
    lon = np.concatenate([np.zeros(len(edge) - 2), [181.0, -180.0], rng.uniform(-180, 180, 200),
                          [180.0, -180.0, np.inf, -200.0]])
    lat = np.concatenate([edge, rng.uniform(-89, 89, 200), [1.0, 1.0, 0.0, 0.0]])
    on = (np.abs(lon) <= 180) & (np.abs(lat) < MAX_LAT)
    x, y = mercator(lon, lat)
    assert np.array_equal(np.isnan(x), ~on) and np.array_equal(np.isnan(y), ~on)
    assert np.array_equal(y[on], -mercator(lon, -lat)[1][on])  # odd in lat, bit for bit
    for y_range in (None, (-90, 90), (-MAX_LAT, MAX_LAT), (-85.06, 85.06)):
        for x_range in (None, (-180, 180), (-200, 200)):
            kw = dict(width=5, height=6, project="mercator", x_range=x_range, y_range=y_range,
                      backend=backend)
            hm = hotbin.heatmap(lon, lat, **kw)
            assert int(to_numpy(hm.counts).sum()) == on.sum() and hm.dropped == (~on).sum()
            south = hotbin.heatmap(lon, -lat, **kw)
            assert to_numpy(south.counts).tolist() == to_numpy(hm.counts)[::-1].tolist()
