"""Float scans on the device: the public call, the lane kernels alone, and their tile shapes.

Every backend scans floats in blocks of ``hotbin.core.scan_order.SCAN_BLOCK`` values,
one GPU thread per block (hotbin.backend.cuda.scan, kernels/scan.cu). Every timing is
checked bitwise against the cpu backend first. Run from the repository root::

    PYTHONPATH=src:benchmarks python3 benchmarks/probes/scan_block_sweep.py [BLOCK ...]
        hotbin.cumsum on 2^28 float32 and the kernels for several block lengths
    ... scan_block_sweep.py --api
        hotbin.cumsum on 2^28 float32 and float64 against the traffic floor (two reads and
        one write of the data at the device's copy speed); runs on older trees too
    ... scan_block_sweep.py --tiles
        the lane kernels at SCAN_BLOCK = 2048 for each tile shape (threads, 16-byte vectors
        per stage): the choice of scan.LANE_THREADS / scan.LANE_VECS
"""
import sys
import time

import cupy as cp
import numpy as np
import os
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from cuda_timing import timeit

import hotbin
from hotbin.core import scan_order
from hotbin.backend.cuda import runtime, scan

N = 1 << 28
TILES = ((128, 16), (128, 8), (64, 16))


def data(dtype):
    x = (cp.arange(N, dtype=cp.uint32) * np.uint32(2654435761) >> np.uint32(8)).astype(dtype)
    return x * dtype(2.0 ** -24)


def bitwise(x):
    got = hotbin.cumsum(x)
    t0 = time.perf_counter()
    ref = hotbin.cumsum(x.get(), backend="cpu")
    return got, bool(np.array_equal(got.get(), ref)), (time.perf_counter() - t0) * 1e3


def kernel_ms(x, block, threads=None, vecs=None, ref=None):
    """CUDA-event ms of lane_sums, lane_chain, lane_scan and lane_scan_chained (lane_chain in
    its first block) alone on one flat lane, and whether both results equal ``ref``."""
    threads, vecs = threads or scan.LANE_THREADS, vecs or scan.LANE_VECS
    n = x.size
    nblk = -(-n // block)
    grid = max(1, min(-(-nblk // threads), scan.LANE_GRID))
    args = (x, np.int64(n), np.int64(1), np.int64(nblk), np.int64(block), np.int64(nblk))
    sums, out = cp.empty(nblk, x.dtype), cp.empty_like(x)
    ct = runtime.CTYPE[x.dtype]
    k_sums, k_scan = scan.lane_kernel("sums", ct, threads, vecs), scan.lane_kernel("scan", ct, threads, vecs)
    k_fused = runtime.kernel("scan.cu", f"lane_scan_chained<{ct}, {threads // 32}, {vecs}>")
    offs2, out2, tot, state = cp.empty_like(sums), cp.empty_like(x), cp.empty(1, x.dtype), cp.zeros(2, cp.uint64)

    def fused():
        state.fill(0)
        runtime.launch(k_fused, grid + 1, threads, (x, np.int64(n), np.int64(nblk), np.int64(block), sums, sums,
                                                     np.int32(0), offs2, out2, tot, state))
    runtime.launch(k_sums, grid, threads, args + (sums,))
    offs, _ = scan._chain(sums, 1, nblk, 1)
    runtime.launch(k_scan, grid, threads, args + (offs, out))
    fused()
    ok = ref is None or (bool(cp.array_equal(out, ref)) and bool(cp.array_equal(out2, ref)))
    return (timeit(lambda: runtime.launch(k_sums, grid, threads, args + (sums,)), reps=10),
            timeit(lambda: scan._chain(sums, 1, nblk, 1), reps=10),
            timeit(lambda: runtime.launch(k_scan, grid, threads, args + (offs, out)), reps=10),
            timeit(fused, reps=10), ok)


def copy_gbs(x):
    """The device's copy speed (read + write GB/s) on x's size."""
    y = cp.empty_like(x)
    return 2 * x.nbytes / timeit(lambda: cp.copyto(y, x), reps=10) / 1e6


def api():
    for dt in (np.float32, np.float64):
        x = data(dt)
        _, ok, _ = bitwise(x)
        floor = 3 * x.nbytes / copy_gbs(x) / 1e6
        for chained in ((True, False) if hasattr(scan, "CHAIN_IN_SCAN") else (None,)):
            if chained is not None:
                scan.CHAIN_IN_SCAN = chained
                ok = ok and bool(cp.array_equal(hotbin.cumsum(x), hotbin.cumsum(x)))
            ms = timeit(lambda: hotbin.cumsum(x), reps=10)
            how = "" if chained is None else (" chain in scan" if chained else " chain launch")
            print(f"API {np.dtype(dt).name} 2^28{how}: hotbin.cumsum {ms:.3f} ms  floor (2 reads + 1 write at "
                  f"copy speed) {floor:.3f} ms  ms/floor {ms / floor:.2f}  bitwise={'yes' if ok else 'NO'}")
        if chained is not None:
            scan.CHAIN_IN_SCAN = True
        del x


def tiles():
    for dt in (np.float32, np.float64):
        x = data(dt)
        ref, ok, _ = bitwise(x)
        for threads, vecs in TILES:
            k1, kc, k2, kf, same = kernel_ms(x, scan_order.SCAN_BLOCK, threads, vecs, ref)
            print(f"TILE {np.dtype(dt).name} threads={threads:3d} vecs={vecs:2d}: lane_sums {k1:.3f} "
                  f"({x.nbytes / k1 / 1e6:.0f} GB/s)  lane_chain {kc:.3f}  lane_scan {k2:.3f} "
                  f"({2 * x.nbytes / k2 / 1e6:.0f} GB/s)  lane_scan_chained {kf:.3f}  "
                  f"bitwise={'yes' if ok and same else 'NO'}")
        del x, ref


def blocks(sizes):
    x = data(np.float32)
    for block in sizes:
        scan_order.SCAN_BLOCK = block
        _, ok, cpu_ms = bitwise(x)
        ms = timeit(lambda: hotbin.cumsum(x), reps=10)
        k1, kc, k2, _, _ = kernel_ms(x, block)
        print(f"SCAN_BLOCK={block:5d}  cuda {ms:7.3f} ms ({x.nbytes / ms / 1e6:6.0f} GB/s; kernels "
              f"lane_sums {k1:.3f} + lane_chain {kc:.3f} + lane_scan {k2:.3f} ms)  cpu(16 cores) "
              f"{cpu_ms:7.1f} ms  bitwise={'yes' if ok else 'NO'}")


if __name__ == "__main__":
    if "--api" in sys.argv:
        api()
    elif "--tiles" in sys.argv:
        tiles()
    else:
        blocks([int(b) for b in (sys.argv[1:] or (512, 1024, 2048, 4096))])
