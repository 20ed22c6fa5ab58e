"""Small runs of the kernels changed for issues #13 and #14, for compute-sanitizer on the GPU machine.

    compute-sanitizer --tool memcheck python3 benchmarks/sanitize_kernels.py

Float scans in the shared block order (scan.cu lane_sums/lane_scan, flat and along an
axis), fixed-point sums with the two-factor scale (hist1d.cu, spatial.cu), a
binary-search rule and a closed heatmap edge; issue #14: spatial.cu on hist_common.cuh's rule
and fixed-point split and scan_common.cuh's block scans (float32 and integer coordinates, integer
weights, every strategy), the luma kernel with its thread count as a template argument; each
checked against the cpu backend.
"""
import cupy as cp
import numpy as np

import hotbin

rng = np.random.default_rng(13)
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
