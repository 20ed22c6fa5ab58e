"""Host data late in a process: why a 1 GiB NumPy -> cuda histogram slows after other large calls.

    PYTHONPATH=src python3 benchmarks/probes/gpu_host_late.py [--seconds S]

Times ``hotbin.histogram(x, 256, (0, 1), backend="cuda")`` of a 1 GiB float32 host array
(median of 7, ms) in a fresh process, then after ``S`` seconds of other large calls (host
heatmaps and histograms larger than a slab, device arrays of several GiB, deterministic
sums, the cpu backend, torch and CuPy anchors when installed), then after each remedy in
turn. Beside the call it times the two halves of a host transfer: the host threads' copy of
the pageable array into the pinned buffers (``fill``) and the DMA of the pinned buffers
(``dma``), and prints what the process holds (CuPy's pools, threads, resident memory), so
the part that slows is named.
"""
from __future__ import annotations

import argparse
import gc
import resource
import statistics
import threading
import time

import numpy as np

import cupy as cp

import hotbin
from hotbin.backend.cuda import stage


def wall(fn, reps=7, warm=1):
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t), min(t), max(t)


def fill_only(x):
    """The host threads' copies of ``x`` into the pinned buffers, no DMA (ms)."""
    pin, pool = stage._pinned(), stage._pool()
    flat = x.reshape(-1).view(np.uint8)
    size = len(pin.host[0])
    jobs = []
    for k, lo in enumerate(range(0, flat.size, size)):
        part = flat[lo:lo + size]
        jobs += [pool.submit(np.copyto, d, s) for d, s in stage._pieces(part, pin.host[k % len(pin.host)][:part.size])]
        if len(jobs) > 64:
            for j in jobs:
                j.result()
            jobs = []
    for j in jobs:
        j.result()


def dma_only(dev, nbytes):
    pin, stream = stage._pinned(), stage._copy_stream()
    size = len(pin.host[0])
    for k, lo in enumerate(range(0, nbytes, size)):
        n = min(size, nbytes - lo)
        cp.cuda.runtime.memcpyAsync(dev.data.ptr + lo, pin.mem[k % len(pin.mem)].ptr, n,
                                    cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
    stream.synchronize()


def state():
    mp, pp = cp.get_default_memory_pool(), cp.get_default_pinned_memory_pool()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return (f"pool used {mp.used_bytes() / 2**30:.2f} GiB held {mp.total_bytes() / 2**30:.2f} GiB; pinned pool "
            f"free blocks {pp.n_free_blocks()}; threads {threading.active_count()}; max RSS {rss:.1f} GiB")


def measure(tag, x, dev, want):
    got = hotbin.histogram(x, 256, (0, 1), backend="cuda")[0]
    assert np.array_equal(np.asarray(got), want), tag
    api = wall(lambda: hotbin.histogram(x, 256, (0, 1), backend="cuda"))
    fill = wall(lambda: fill_only(x))
    dma = wall(lambda: dma_only(dev, x.nbytes))
    print(f"| {tag} | {api[0]:.1f} ({api[1]:.1f}-{api[2]:.1f}) | {fill[0]:.1f} | {dma[0]:.1f} | {state()} |",
          flush=True)


def other_calls(seconds, rng):
    """Large calls of every kind for ``seconds``."""
    n = 1 << 28
    xs = rng.random(n, dtype=np.float32)
    ys = rng.random(n, dtype=np.float32)
    big = rng.random(1 << 30, dtype=np.float32)  # 4 GiB: larger than a slab
    w = rng.random(1 << 28)
    try:
        import torch
    except ImportError:
        torch = None
    t0 = time.perf_counter()
    rounds = 0
    while time.perf_counter() - t0 < seconds:
        hotbin.heatmap(xs, ys, width=1024, height=1024, x_range=(0, 1), y_range=(0, 1), backend="cuda")
        hotbin.histogram(big, 256, (0, 1), backend="cuda")
        hotbin.histogram(xs, 256, (0, 1), weights=w, backend="cuda", deterministic=True)
        d = cp.random.random(1 << 30, dtype=cp.float32)  # 4 GiB on the device
        hotbin.histogram(d, 1000, (0, 1))
        hotbin.heatmap(d[:n], d[n:2 * n], width=2048, height=2048, x_range=(0, 1), y_range=(0, 1), agg="count")
        del d
        hotbin.cumsum(rng.integers(0, 9, 1 << 26, dtype=np.int32), backend="cuda")
        hotbin.histogram(xs[: 1 << 25], 256, (0, 1), backend="cpu")
        if torch is not None:
            t = torch.rand(1 << 28, device="cuda")
            torch.histc(t, 256, 0, 1)
            torch.rand(1 << 24).sort()
            del t
        rounds += 1
    cp.cuda.Device().synchronize()
    print(f"other calls: {rounds} rounds in {time.perf_counter() - t0:.0f} s; torch {'yes' if torch else 'no'}",
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=90)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    x = rng.random(1 << 28, dtype=np.float32)
    want = np.histogram(x, 256, (0, 1))[0]
    dev = cp.empty(x.nbytes, cp.uint8)
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {time.strftime('%Y-%m-%d')}")
    print("| state | api ms (min-max) | fill ms | dma ms | process |\n|---|---|---|---|---|")
    measure("fresh", x, dev, want)
    other_calls(args.seconds, rng)
    measure("late", x, dev, want)
    time.sleep(2)
    measure("late, after 2 s idle", x, dev, want)
    cp.get_default_memory_pool().free_all_blocks()
    measure("late, CuPy pool freed", x, dev, want)
    gc.collect()
    measure("late, gc.collect()", x, dev, want)
    stage._THREADS.clear()  # a fresh copy-thread pool
    measure("late, new copy threads", x, dev, want)
    stage._PINNED.clear()  # fresh pinned buffers
    measure("late, new pinned buffers", x, dev, want)


if __name__ == "__main__":
    main()
