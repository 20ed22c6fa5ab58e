"""Small runs of the kernels changed for issue #13, for compute-sanitizer on the GPU machine.

    compute-sanitizer --tool memcheck python3 benchmarks/sanitize_kernels.py

Float scans in the shared block order (scan.cu lane_sums/lane_scan, flat and along an
axis), fixed-point sums with the two-factor scale (hist1d.cu, spatial.cu), a
binary-search rule and a closed heatmap edge; each checked against the cpu backend.
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
