"""Which SCAN_BLOCK (the float scans' shared block length) the GPU can afford.

Every backend scans floats in blocks of ``hotbin.scan_order.SCAN_BLOCK`` values,
one GPU thread per block. Times ``hotbin.cumsum`` (the public call) on 2^28 float32
values on the device for several block lengths, each checked bitwise against the
cpu backend with the same block length::

    PYTHONPATH=src:benchmarks python3 benchmarks/scan_block_sweep.py
"""
import sys
import time

import cupy as cp
import numpy as np
from cuda_timing import timeit

import hotbin
from hotbin import scan_order
from hotbin.backend.cuda import runtime, scan


def kernel_ms(x, block):
    """CUDA-event times of the two lane kernels alone (no host chaining, no transfers)."""
    n = x.size
    nblk = -(-n // block)
    grid = max(1, min(-(-nblk // scan.LANE_THREADS), scan.LANE_GRID))
    args = (np.int64(n), np.int64(1), np.int64(nblk), np.int64(block), np.int64(nblk))
    sums, offs, out = cp.empty(nblk, x.dtype), cp.zeros(nblk, x.dtype), cp.empty_like(x)
    ct = runtime.CTYPE[x.dtype]
    k_sums, k_scan = scan.lane_kernel("sums", ct), scan.lane_kernel("scan", ct)
    return (timeit(lambda: runtime.launch(k_sums, grid, scan.LANE_THREADS, (x,) + args + (sums,)), reps=10),
            timeit(lambda: runtime.launch(k_scan, grid, scan.LANE_THREADS, (x,) + args + (offs, out)), reps=10))

n = 1 << 28
x = (cp.arange(n, dtype=cp.uint32) * np.uint32(2654435761) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -24)
host = x.get()
for block in [int(b) for b in (sys.argv[1:] or (64, 128, 256, 512, 1024, 4096))]:
    scan_order.SCAN_BLOCK = block
    got = hotbin.cumsum(x)
    t0 = time.perf_counter()
    ref = hotbin.cumsum(host, backend="cpu")
    cpu_ms = (time.perf_counter() - t0) * 1e3
    ok = np.array_equal(got.get(), ref)
    ms = timeit(lambda: hotbin.cumsum(x), reps=10)
    k1, k2 = kernel_ms(x, block)
    print(f"SCAN_BLOCK={block:5d}  cuda {ms:7.3f} ms ({x.nbytes / ms / 1e6:6.0f} GB/s; kernels "
          f"lane_sums {k1:.3f} + lane_scan {k2:.3f} ms)  cpu(16 cores) {cpu_ms:7.1f} ms  "
          f"bitwise={'yes' if ok else 'NO'}")
