"""hotbin.Histogram through UHI's serialization (uhi.io: dicts, JSON, zip), to and from
boost-histogram and hist, and its notebook view (an inline SVG plot)."""
import json
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest

import hotbin
from hotbin import Histogram

bh = pytest.importorskip("boost_histogram")
uhi_json = pytest.importorskip("uhi.io.json")


def _through_json(obj):
    """``obj`` written with ``uhi.io.json`` and read back as a dict, as a file would be."""
    return json.loads(json.dumps(obj, default=uhi_json.default), object_hook=uhi_json.object_hook)


@pytest.fixture
def hists(rng):
    x = rng.normal(size=3000) * 2
    x[:5] = [np.nan, np.inf, -np.inf, 50.0, -50.0]
    y = rng.permutation(x)
    w = rng.exponential(size=x.size)
    i = rng.integers(-5, 30, x.size)
    return {
        "counts": hotbin.hist(x, 12, (-3, 3), xlabel="x", label="counts"),
        "weighted": hotbin.hist(x, [-3, -1, 0, 0.5, 3], weights=w),
        "int weights": hotbin.hist(x, 7, (-2, 2), weights=i),
        "int edges": hotbin.hist(i, bins=np.arange(0, 21, 4)),
        "float32 edges": hotbin.hist(x.astype(np.float32), 9, (-2, 2)),
        "2d": hotbin.hist2d(x, y, (5, 4), [(-3, 3), (-2, 2)], weights=w, xlabel="x", ylabel="y"),
        "unknown variances": Histogram.from_heatmap(hotbin.heatmap(x, y, w, width=6, height=5,
                                                                   x_range=(-2, 2), y_range=(-2, 2))),
    }


def test_json_round_trip_is_exact(hists):
    for name, h in hists.items():
        back = Histogram.from_uhi(_through_json(h))
        assert back == h, name  # edges and sums with their dtypes, flow bins, variances
        assert [ax.label for ax in back.axes] == [ax.label for ax in h.axes] and back.label == h.label
        assert back.weighted == h.weighted and (back.variances() is None) == (h.variances() is None)


def test_written_dicts_follow_the_schema(hists):
    schema = pytest.importorskip("uhi.schema")
    pytest.importorskip("jsonschema")
    for h in hists.values():
        schema.validate(json.loads(json.dumps(h._to_uhi_(), default=uhi_json.default)))


def test_deterministic_reads_back_weighted(rng):
    x, w = rng.normal(size=500), rng.normal(size=500)
    h = hotbin.hist(x, 6, (-2, 2), weights=w, deterministic=True)
    back = Histogram.from_uhi(_through_json(h))
    assert back.weighted and not back.deterministic
    assert back.values(flow=True).tobytes() == h.values(flow=True).tobytes()
    assert back.variances(flow=True).tobytes() == h.variances(flow=True).tobytes()


def test_zip_and_sparse(hists, tmp_path):
    uhi_zip = pytest.importorskip("uhi.io.zip")
    to_sparse = getattr(pytest.importorskip("uhi.io"), "to_sparse", None)
    if to_sparse is None:
        pytest.skip("uhi.io.to_sparse needs a newer uhi")

    path = tmp_path / "h.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, h in hists.items():
            uhi_zip.write(zf, name.replace(" ", "_"), h)
    with zipfile.ZipFile(path) as zf:
        for name, h in hists.items():
            ir = uhi_zip.read(zf, name.replace(" ", "_"))
            assert Histogram.from_uhi(ir) == h, name
            assert Histogram.from_uhi(to_sparse(ir)) == h, name


def _boost_cases(rng):
    x = rng.normal(size=2000) * 3
    w = rng.exponential(size=x.size)
    reg = bh.Histogram(bh.axis.Regular(10, -2, 2.5), storage=bh.storage.Int64())
    reg.fill(x)
    var = bh.Histogram(bh.axis.Variable([-3, -1, 0, 0.25, 4], underflow=False), storage=bh.storage.Weight())
    var.fill(x, weight=w)
    integer = bh.Histogram(bh.axis.Integer(-2, 5, overflow=False), storage=bh.storage.Int64())
    integer.fill(np.round(x).astype(int))
    dbl = bh.Histogram(bh.axis.Regular(7, 0, 1, metadata="m"), bh.axis.Regular(3, -1, 1), storage=bh.storage.Double())
    dbl.fill(x / 3, x[::-1] / 3, weight=w)
    return {"regular int64": reg, "variable weight": var, "integer": integer, "2d double": dbl}


def _flow(b, a):
    """boost-histogram's ``flow=True`` array with the flow bins it lacks as zeros (hotbin has both)."""
    for i, ax in enumerate(b.axes):
        pad = [(0, 0)] * a.ndim
        pad[i] = (0 if ax.traits.underflow else 1, 0 if ax.traits.overflow else 1)
        a = np.pad(a, pad)
    return a


def test_reads_boost_histogram_and_hist(rng):
    from boost_histogram.serialization import to_uhi

    for name, b in _boost_cases(rng).items():
        h = Histogram.from_uhi(_through_json(to_uhi(b)))
        for ax, bax in zip(h.axes, b.axes):
            np.testing.assert_array_equal(ax.edges, bax.edges)  # Regular's edges are boost's own
        np.testing.assert_array_equal(h.values(flow=True), _flow(b, b.values(flow=True)), err_msg=name)
        if b.storage_type is bh.storage.Weight:
            np.testing.assert_array_equal(h.variances(flow=True), _flow(b, b.variances(flow=True)))
        if b.storage_type is bh.storage.Double:
            assert h.weighted and h.variances() is None
        if b.storage_type is bh.storage.Int64:
            assert h.values().dtype == np.int64 and not h.weighted
    assert Histogram.from_uhi(_boost_cases(rng)["integer"]).axes[0].edges.dtype == np.int64
    hist = pytest.importorskip("hist")
    hh = hist.Hist(hist.axis.Regular(8, 0, 4, name="r", label="radius"), storage=hist.storage.Weight())
    hh.fill(r=rng.uniform(-1, 5, 400), weight=rng.random(400))
    h = Histogram.from_uhi(hh)  # an object with _to_uhi_ works as its dict
    assert h.axes[0].label == "radius"
    np.testing.assert_array_equal(h.values(flow=True), hh.values(flow=True))
    np.testing.assert_array_equal(h.variances(flow=True), hh.variances(flow=True))


def test_boost_histogram_reads_hotbin_files(hists):
    from boost_histogram.serialization import from_uhi

    for name, h in hists.items():
        b = bh.Histogram(from_uhi(_through_json(h)))
        np.testing.assert_array_equal(b.values(flow=True), h.values(flow=True), err_msg=name)
        if h.variances() is not None:
            np.testing.assert_array_equal(b.variances(flow=True), h.variances(flow=True))
        for ax, bax in zip(h.axes, b.axes):
            np.testing.assert_array_equal(bax.edges, ax.edges.astype(np.float64))
    hist = pytest.importorskip("hist")
    h = hists["2d"]
    hh = hist.Hist(_through_json(h))
    np.testing.assert_array_equal(hh.values(flow=True), h.values(flow=True))
    assert [ax.label for ax in hh.axes] == ["x", "y"]


def test_unsupported_axes_and_storages():
    cat = bh.Histogram(bh.axis.StrCategory(["a", "b"]))
    with pytest.raises(ValueError, match="axes: a category_str axis"):
        Histogram.from_uhi(cat)
    mean = bh.Histogram(bh.axis.Regular(3, 0, 1), storage=bh.storage.Mean())
    with pytest.raises(ValueError, match="storage: a mean storage"):
        Histogram.from_uhi(mean)
    circ = bh.Histogram(bh.axis.Regular(3, 0, 1, circular=True))
    with pytest.raises(ValueError, match="circular"):
        Histogram.from_uhi(circ)
    with pytest.raises(ValueError, match="uhi_schema"):
        Histogram.from_uhi({"axes": []})


def test_nd_histograms_round_trip(rng):
    """Three axes: built from arrays or read from boost-histogram, indexed, written back."""
    b = bh.Histogram(bh.axis.Regular(3, 0, 1), bh.axis.Regular(4, 0, 1), bh.axis.Variable([0, 0.5, 1]),
                     storage=bh.storage.Int64())
    b.fill(*rng.random((3, 200)))
    h = Histogram.from_uhi(b)
    assert h.ndim == 3 and Histogram.from_uhi(_through_json(h)) == h
    np.testing.assert_array_equal(h[1, ::sum, :].values(flow=True), b[1, ::sum, :].values(flow=True))
    sample = rng.random((300, 3))
    counts, edges = np.histogramdd(sample, bins=(3, 4, [0, 0.5, 1]))
    dens = Histogram(counts.astype(np.int64), *edges).density()
    np.testing.assert_allclose(dens, np.histogramdd(sample, bins=(3, 4, [0, 0.5, 1]), density=True)[0], rtol=1e-12)
    with pytest.raises(TypeError, match="1-D and 2-D"):
        h.fill(*rng.random((3, 5)))


# --- the notebook view ------------------------------------------------------------------

def _svg(h):
    page = h._repr_html_()
    root = ET.fromstring(page)  # well-formed: a notebook's sanitizer and a browser both take it
    svg = root.find("{http://www.w3.org/2000/svg}svg")
    frame = [r for r in svg.findall("{http://www.w3.org/2000/svg}rect") if r.get("class") == "hotbin-frame"]
    assert len(frame) == 1  # the plot's area
    return page, svg, float(frame[0].get("height"))


def _tops(svg, height):
    line = svg.find("{http://www.w3.org/2000/svg}polyline")
    pts = np.array([[float(v) for v in p.split(",")] for p in line.get("points").split()])
    return pts, height - pts[1:-1:2, 1]  # bin i: points 1 + 2i and 2 + 2i


def test_html_step_plot_follows_the_counts(rng):
    x = rng.normal(size=5000)
    h = hotbin.hist(x, 15, (-3, 3), xlabel="v<1>")
    page, svg, height = _svg(h)
    pts, tops = _tops(svg, height)
    v = np.histogram(x, 15, (-3, 3))[0]
    np.testing.assert_allclose(tops, v / v.max() * height, atol=0.01)
    edges = h.axes[0].edges
    np.testing.assert_allclose(pts[1::2, 0][:15], (edges[:-1] + 3) / 6 * float(svg.get("width")), atol=0.01)
    texts = [t.text for t in svg.findall("{http://www.w3.org/2000/svg}text")]
    assert texts[:3] == ["-3", "3", "v<1>"] and float(texts[3]) == v.max()
    inside = int(((x >= -3) & (x <= 3)).sum())
    assert f"<td>{inside}</td>" in page and "v&lt;1&gt;" in page and "15 bins over [-3.0, 3.0]" in page


def test_html_negative_weights_and_many_bins(rng):
    x = rng.uniform(0, 1, 3000)
    w = np.where(x < 0.5, -1.0, 2.0)
    h = hotbin.hist(x, 4, (0, 1), weights=w)
    _, svg, height = _svg(h)
    pts, tops = _tops(svg, height)
    v = h.values()
    lo, hi = min(v.min(), 0), max(v.max(), 0)
    np.testing.assert_allclose(tops, (v - lo) / (hi - lo) * height, atol=0.01)
    np.testing.assert_allclose(height - pts[0, 1], (0 - lo) / (hi - lo) * height, atol=0.01)  # the baseline
    many = hotbin.hist(rng.normal(size=20000), 5000, (-4, 4))
    _, svg, height = _svg(many)
    _, tops = _tops(svg, height)
    top = many.values().reshape(1000, 5).max(axis=1)  # 5 bins a column, each at its largest
    np.testing.assert_allclose(tops, top / top.max() * height, atol=0.01)


def test_html_2d_cells(rng):
    x, y = rng.normal(size=(2, 4000))
    h = hotbin.hist2d(x, y, (4, 3), [(-2, 2), (-1.5, 1.5)])
    _, svg, height = _svg(h)
    rects = svg.findall("{http://www.w3.org/2000/svg}rect")[:-1]  # the last one is the frame
    v = h.values()
    assert len(rects) == np.count_nonzero(v)
    w = float(svg.get("width")) / 4
    for r in rects:
        i = round(float(r.get("x")) / w)
        j = 2 - round(float(r.get("y")) / (height / 3))  # y up
        assert float(r.get("fill-opacity")) == pytest.approx(v[i, j] / v.max(), abs=1e-3)
    nd = Histogram.from_uhi(bh.Histogram(*[bh.axis.Regular(2, 0, 1)] * 3))._repr_html_()
    assert "<svg" not in nd and "axis 2" in nd  # no plot beyond 2-D, the table still
