"""Small runs of the kernels changed for issues #13, #14 and #16, for compute-sanitizer on the GPU machine.

    compute-sanitizer --tool memcheck python3 benchmarks/sanitize_kernels.py [guess|hist16|scan|crossfilter]

(One case alone: ``guess``, the fixed-point scale guessed on the device; ``hist16``, the uint16
many-bin counts and the weighted sums in every forced layout, against NumPy; ``scan``, the float
scans on arrays of several blocks, flat, offset and along an axis, against the cpu backend;
``crossfilter``, the linked views' pass (crossfilter.cu) in its three layouts, against the host
crossfilter.)

Float scans in the shared block order (scan.cu lane_sums/lane_scan, flat and along an
axis), fixed-point sums with the two-factor scale (hist1d.cu, spatial.cu), a
binary-search rule and a closed heatmap edge; issue #14: spatial.cu on hist_common.cuh's rule
and fixed-point split and scan_common.cuh's block scans (float32 and integer coordinates, integer
weights, every strategy), the luma kernel with its thread count as a template argument; issue #16:
spatial.cu's values accumulators (mean, min, max with float32 and float64 weights, NaN skipped,
centered), centered fixed point and categories (int8 and int64 codes, out-of-range ones), every
strategy, a grid that fits shared memory and one that does not; each checked against the cpu backend.
Issue #17: hist1d.cu's rule compared with the nearest edge (values on edges, whole numbers, a
constant on an edge; float32 and float64; counts and sums; every counting layout), against NumPy.
"""
import sys

import cupy as cp
import numpy as np

import hotbin
from hotbin.core import binning, fixedpoint

rng = np.random.default_rng(13)
if sys.argv[1:] == ["guess"]:  # only the scale guessed on the device (sample_scale, hist_sum's guess, fixed_finish)
    from hotbin.backend.cuda import sums

    n = sums.SAMPLE_FROM + 9
    v = rng.random(n).astype(np.float32)
    for wdt in (np.float32, np.float64):
        w = (rng.random(n) * 3).astype(wdt)
        for case in ("hit", "miss", "none"):
            ww = w.copy()
            ww[1] = 1e4 if case == "miss" else ww[1]
            ww[::2] = 0 if case == "none" else ww[::2]
            ww[0] = 0 if case == "none" else ww[0]
            got = hotbin.histogram(cp.asarray(v), 100, (0, 1), weights=cp.asarray(ww), deterministic=True)[0].get()
            ref = hotbin.histogram(v, 100, (0, 1), weights=ww, deterministic=True, backend="cpu")[0]
            assert np.array_equal(got, ref), (wdt, case)
    print("sanitize_kernels guess: all answers equal the cpu backend's")
    sys.exit(0)
if sys.argv[1:] == ["hist16"]:  # hist_shift, hist_sum, max_abs_bits on small inputs, every forced layout
    from hotbin.backend import cuda as cb
    from hotbin.backend.cuda import tuning

    rng = np.random.default_rng(5)
    v = rng.integers(0, 65536, 100003).astype(np.uint16)
    s = rng.integers(-32768, 32768, 100003).astype(np.int16)
    for ov in ({}, {"copies": 1}, {"layout": "shift16"}, {"layout": "shift16", "copies": 1}, {"unroll": 8}):
        with tuning.forced(**ov):
            for a, bins, r in ((v, 4096, (0, 65536)), (v, 65536, (0, 65536)), (v, 2048, (32768, 65536)),
                               (s, 4096, (-32768, 32768))):
                for x in (a, a[1:-3]):
                    h, _ = hotbin.histogram(cp.asarray(x), bins, r)
                    assert np.array_equal(h.get(), np.histogram(x, bins, r)[0]), (ov, bins, r)
    x = rng.normal(0, 2, 100003).astype(np.float32)
    w = rng.normal(size=x.size).astype(np.float32)
    for ov in ({}, {"copies": 1}, {"copies": 32, "blocks_per_sm": 1}, {"layout": "global"}):
        with tuning.forced(**ov):
            for xx, ww in ((x, w), (x[1:], w[1:]), (x[1:], w[:-1]), (x.astype(np.float64), w)):
                for det in (False, True):
                    h, _ = hotbin.histogram(cp.asarray(xx), 256, (-3, 3), weights=cp.asarray(ww), deterministic=det)
                    ref = np.histogram(xx, 256, (-3, 3), weights=ww.astype(np.float64))[0]
                    assert np.allclose(h.get(), ref, rtol=1e-6, atol=1e-6), (ov, det)
    for a in (w, w[1:], w.astype(np.float64)[3:]):
        assert cb.sums.max_abs(cp.asarray(a)) == float(np.max(np.abs(a)))
    print("sanitize_kernels hist16: all answers equal NumPy's")
    sys.exit(0)
if sys.argv[1:] == ["scan"]:  # float scans of several blocks: flat, from an offset, along an axis
    rng = np.random.default_rng(1)
    for dt in (np.float32, np.float64):
        for shape, axis, skip in ((((1 << 18) + 7,), None, 0), (((1 << 18) + 7,), None, 1), ((5, 4100), 1, 0),
                                  ((3, 9001), 1, 0), ((300, 3), 0, 0)):
            a = (rng.standard_normal(shape) * 100).astype(dt)
            d = cp.asarray(a)
            got = hotbin.cumsum(d[skip:] if skip else d, axis=axis).get()
            ref = hotbin.cumsum(a[skip:] if skip else a, axis=axis, backend="cpu")
            assert got.tobytes() == ref.tobytes(), (dt, shape, axis, skip)
    print("sanitize_kernels scan: all answers equal the cpu backend's")
    sys.exit(0)
if sys.argv[1:] == ["crossfilter"]:  # the pass: 32 shared copies, one copy, global atomics; every brush kind
    from hotbin.backend.cuda import crossfilter as kx
    from hotbin.serve.crossfilter import Crossfilter, Filters, Panel
    from hotbin.serve.crossfilter_gpu import DeviceCrossfilter

    n = 70001
    cols = {"a": (rng.normal(0, 2, n) * 4).round().astype(np.float32) / 4, "b": rng.integers(-9, 9, n).astype(np.int16),
            "c": rng.gamma(2, 3, n)}
    cols["a"][::50] = np.nan
    x, y, codes = rng.normal(0, 1, n).astype(np.float32), rng.normal(0, 1, n), rng.integers(-1, 4, n)
    host = Crossfilter(cols, (x, y), codes, ["p", "q", "r"], "k")
    dev = DeviceCrossfilter({k: cp.asarray(v) for k, v in cols.items()}, (cp.asarray(x), cp.asarray(y)),
                            cp.asarray(codes), ["p", "q", "r"], "k")
    panels = [Panel("a", 40, -6.0, 6.0), Panel("b", 18, -9.0, 9.0), Panel("c", 10000, 0.0, 30.0), Panel("c", 1, 0.0, 5.0)]
    filters = [Filters((("a", -1.0, 2.5), ("c", 1.0, 9.0))), Filters((("b", -3.0, 4.0),), (0, 2), (-1.0, 1.0, -0.5, 2.0)),
               Filters((), (), None), Filters((("a", 50.0, 60.0),))]
    for layout in ({}, {"PRIVATE_BYTES": 0}, {"copies_for": lambda slots, smem: 0}):
        saved = {k: getattr(kx, k) for k in layout}
        for k, v in layout.items():
            setattr(kx, k, v)
        for f in filters:
            dev._kept.clear()
            for p, g, w in zip(panels, dev.histograms(f, panels), host.histograms(f, panels)):
                assert np.array_equal(g, w), (layout, f, p)
            assert np.array_equal(dev.passing(f).get(), host.passing(f)), (layout, f)
        for k, v in saved.items():
            setattr(kx, k, v)
    print("sanitize_kernels crossfilter: all answers equal the host crossfilter's")
    sys.exit(0)
for dt in (np.float32, np.float64):
    x = rng.normal(size=(3, 5000)).astype(dt)
    for axis in (None, 0, 1):
        for ex in (False, True):
            got = hotbin.cumsum(cp.asarray(x), axis=axis, exclusive=ex).get()
            assert np.array_equal(got, hotbin.cumsum(x, axis=axis, exclusive=ex, backend="cpu")), (dt, axis, ex)
w = rng.random(20000) * 1e-310  # subnormal weights: the scale needs both factors
v = rng.random(20000)
for sub in (w, w * 1e300):
    got = hotbin.histogram(cp.asarray(v), 16, (0, 1), weights=cp.asarray(sub), deterministic=True)[0].get()
    assert np.array_equal(got, hotbin.histogram(v, 16, (0, 1), weights=sub, deterministic=True, backend="cpu")[0])
    hm = hotbin.heatmap(cp.asarray(v), cp.asarray(v[::-1]), cp.asarray(sub), width=33, height=17, deterministic=True)
    ref = hotbin.heatmap(v, v[::-1], sub, width=33, height=17, deterministic=True, backend="cpu")
    assert np.array_equal(hm.counts.get(), ref.counts)
tiny = hotbin.histogram(cp.asarray(v * 1e-309), 10**5, (0, 1e-308))[0].get()  # scale overflows: search
assert np.array_equal(tiny, hotbin.histogram(v * 1e-309, 10**5, (0, 1e-308), backend="cpu")[0])
whole = np.arange(101.0)
hm = hotbin.heatmap(cp.asarray(whole), cp.asarray(whole), width=100, height=100)  # closed top edge
assert np.array_equal(hm.counts.get(), np.histogram2d(whole, whole, 100)[0].T.astype(np.int64))
print("sanitize_kernels: all checks passed")

from hotbin.backend.cuda import tuning  # noqa: E402

x32 = (rng.normal(size=50000) * 3).astype(np.float32)
y32 = rng.integers(-40, 40, 50000).astype(np.int32)
wi = rng.integers(-5, 6, 50000)
for strategy in ("direct", "private", "tiled"):
    with tuning.forced(strategy=strategy):
        for w in (None, wi):
            got = hotbin.heatmap(cp.asarray(x32), cp.asarray(y32), None if w is None else cp.asarray(w),
                                 width=300, height=70)
            ref = hotbin.heatmap(x32, y32, w, width=300, height=70, backend="cpu")
            assert np.array_equal(cp.asnumpy(got.counts), ref.counts), (strategy, w is None)
img = rng.integers(0, 256, (2, 300, 257, 4), dtype=np.uint8)
assert np.array_equal(hotbin.luminance_histogram(cp.asarray(img)).get(),
                      hotbin.luminance_histogram(img, backend="cpu"))
print("sanitize_kernels: all checks passed")

from hotbin.core import reductions  # noqa: E402
from hotbin.backend import cpu  # noqa: E402
from hotbin.backend.cuda import spatial as cs  # noqa: E402

n = 20000
xa = rng.uniform(-0.1, 1.1, n).astype(np.float32)
ya = rng.uniform(-0.1, 1.1, n).astype(np.float32)
xa[: n // 2], ya[: n // 2] = np.float32(0.5), np.float32(0.25)  # half in one cell
xa[:4096], ya[:4096] = np.float32(0.75), np.float32(0.75)  # whole warps in one cell
wa = rng.normal(size=n).astype(np.float32)
wa[::9] = np.nan
codes8, codes64 = rng.integers(-1, 5, n).astype(np.int8), rng.integers(0, 6, n)
for nx, ny in ((40, 30), (200, 100)):  # a grid in shared memory, one in tiles
    rx, ry = binning.cell_rule(nx, 0, 1, "w"), binning.cell_rule(ny, 0, 1, "h")
    center = rng.normal(size=(5, nx, ny))
    runs = [(reductions.MEAN, wa), (reductions.MIN, wa), (reductions.MAX, wa.astype(np.float64)),
            (reductions.centered(reductions.MEAN, center), wa),
            (reductions.centered(reductions.fixed(fixedpoint.scale_for(100.0, n)), center), wa),
            (reductions.COUNT, None)]
    for strategy in ("direct", "private", "tiled"):
        with tuning.forced(strategy=strategy):
            for red, w in runs:
                codes = codes64 if w is None else codes8
                got, kept = cs.histogram2d(cp.asarray(xa), cp.asarray(ya), rx, ry, None if w is None else cp.asarray(w),
                                           red, by=(cp.asarray(codes), 4))
                ref, kref = cpu.histogram2d(xa, ya, rx, ry, w, red, by=(codes, 4))
                got = got.get()
                assert kept == kref and got.shape == ref.shape, (strategy, red.acc)
                if red.acc == "mean":
                    assert np.array_equal(got[1], ref[1]) and np.allclose(got[0], ref[0], rtol=1e-9, atol=1e-9)
                else:
                    assert np.array_equal(got, ref), (strategy, red.acc, nx)
print("sanitize_kernels: all checks passed")

for dt in (np.float32, np.float64):
    k = rng.integers(0, 257, 30000)
    cases = [(np.tile(np.arange(100), 30), 100, (0, 100)), (np.full(4099, 0.5), 256, (0, 1)),
             (k / 256, 256, (0, 1)), (k / 256 * 0.3 - 0.1, 5000, (-0.1, 0.2))]
    for override in ({}, {"shortcut": False}, {"layout": "copies", "copies": 2}, {"layout": "global"}):
        with tuning.forced(**override):
            for v, bins, r in cases:
                v = v.astype(dt)
                ref = np.histogram(v, bins, r)[0]
                assert np.array_equal(hotbin.histogram(cp.asarray(v), bins, r)[0].get(), ref), (dt, bins)
                s = hotbin.histogram(cp.asarray(v), bins, r, weights=cp.ones(v.size, cp.int64))[0].get()
                assert np.array_equal(s, ref), (dt, bins, "sums")
print("sanitize_kernels: all checks passed")
