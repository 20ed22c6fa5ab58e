"""Heatmap mean of NumPy points: the wgpu backend (fixed-point sums on the device since issue #16's
WGSL sums) against the cpu backend (what backend="wgpu" ran before: the registry's fallback).

    PYTHONPATH=src python3 benchmarks/probes/wgpu_mean_ab.py

2^26 float32 points and weights, 1024 x 1024 cells, 0 / 90 / 100 % in one cell; M points/s of
the whole public call (median of 5). The wgpu figure includes the upload of x, y and w through
``queue.write_buffer``; the answers are checked by tests/test_wgpu_fixed.py, not here.
"""
import time, statistics, numpy as np, hotbin
rng = np.random.default_rng(16)
n = 1 << 26
x0, y0 = rng.random(n, np.float32), rng.random(n, np.float32)
w = rng.normal(size=n).astype(np.float32)
kw = dict(agg="mean", width=1024, height=1024, x_range=(0, 1), y_range=(0, 1))
for hot in (0.0, 0.9, 1.0):
    x, y = x0.copy(), y0.copy()
    h = rng.random(n) < hot
    x[h], y[h] = 0.31, 0.77
    row = []
    for be in ("wgpu", "cpu"):
        hotbin.heatmap(x, y, w, backend=be, **kw)
        ts = []
        for _ in range(5):
            t0 = time.perf_counter(); hotbin.heatmap(x, y, w, backend=be, **kw); ts.append(time.perf_counter() - t0)
        row.append(n / statistics.median(ts) / 1e6)
    print(f"mean {hot:.0%} hot: wgpu {row[0]:.1f} M pts/s, cpu backend (the fallback before) {row[1]:.1f}")
