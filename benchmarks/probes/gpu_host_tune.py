"""Tuning of the pinned buffers of ``backend.cuda.stage`` (issue #17 item 3), one device call.

    PYTHONPATH=src python3 benchmarks/probes/gpu_host_tune.py

On a 1 GiB float32 NumPy array: (1) pageable -> pinned copies alone by the host threads (GB/s
by threads and piece size), (2) registering the array's own pages (``cudaHostRegister``,
32 MiB at a time) and copying from them, (3) ``hotbin.histogram(x, 256, (0, 1),
backend="cuda")`` by (threads, buffer MiB, buffers, smallest piece MiB), answers checked.
Wall-clock medians in ms.
"""
from __future__ import annotations

import concurrent.futures
import time

import numpy as np

import cupy as cp

import hotbin
from hotbin.backend.cuda import stage
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from gpu_host import wall  # benchmarks/ is on the path when run as a script

MiB = 1 << 20


def fills(x, threads, piece):
    """x copied into 4 pinned buffers of 32 MiB in turn, pieces of ``piece`` bytes."""
    bufs = [cp.cuda.alloc_pinned_memory(32 * MiB) for _ in range(4)]
    views = [np.frombuffer(b, np.uint8, 32 * MiB).view(np.float32) for b in bufs]
    pool = concurrent.futures.ThreadPoolExecutor(threads)
    per = 32 * MiB // 4
    step = piece // 4

    def run():
        fs = []
        for k, s in enumerate(range(0, x.size, per)):
            v = views[k % 4]
            fs += [pool.submit(np.copyto, v[i:i + step], x[s + i:s + i + step]) for i in range(0, per, step)]
        concurrent.futures.wait(fs)
    t = wall(run, 5)
    pool.shutdown()
    return t


def registered(x, chunk=32 * MiB):
    """The array's own pages registered a chunk at a time, copied, unregistered."""
    rt = cp.cuda.runtime
    d = cp.empty(x.size, x.dtype)
    s = cp.cuda.Stream(non_blocking=True)
    ptr, n, page = x.ctypes.data, x.nbytes, 4096
    cuts = [ptr] + [-(-(ptr + c) // page) * page for c in range(chunk, n, chunk)] + [ptr + n]
    pieces = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    out = {}

    def run():
        evs = []
        t0 = time.perf_counter()
        for a, b in pieces:
            rt.hostRegister(a, b - a, 0)
            rt.memcpyAsync(d.data.ptr + (a - ptr), a, b - a, rt.memcpyHostToDevice, s.ptr)
            e = cp.cuda.Event(disable_timing=True)
            e.record(s)
            evs.append(e)
        t1 = time.perf_counter()
        for (a, _), e in zip(pieces, evs):
            e.synchronize()
            rt.hostUnregister(a)
        out["register"] = (t1 - t0) * 1e3
    t = wall(run, 5)
    assert bool((d == cp.asarray(x)).all())
    reg = wall(lambda: [rt.hostRegister(a, b - a, 0) for a, b in pieces], 1, 0)
    unreg = wall(lambda: [rt.hostUnregister(a) for a, _ in pieces], 1, 0)
    return t, out["register"], reg, unreg


def main():
    x = np.random.default_rng(5).random(1 << 28, dtype=np.float32)
    want = hotbin.histogram(cp.asarray(x), 256, (0, 1))[0].get()
    print("fill GB/s by (threads, piece MiB):")
    for threads in (4, 8, 12, 16):
        for piece in (4, 32):
            t = fills(x, threads, piece * MiB)
            print(f"  fill {threads:2d} threads, {piece:2d} MiB pieces: {t:6.1f} ms {x.nbytes / t / 1e6:5.1f} GB/s")
    try:
        t, issue, reg, unreg = registered(x)
        print(f"registered: {t:.1f} ms ({x.nbytes / t / 1e6:.1f} GB/s), issuing {issue:.1f} ms; "
              f"register alone {reg:.1f} ms, unregister {unreg:.1f} ms")
    except Exception as exc:  # noqa: BLE001
        print("registered:", repr(exc))
    p = cp.cuda.alloc_pinned_memory(x.nbytes)
    pv = np.frombuffer(p, np.float32, x.size)
    pv[...] = x
    d = cp.empty_like(cp.asarray(pv))
    print(f"link (set from pinned, synced): {wall(lambda: (d.set(pv), cp.cuda.Device().synchronize()), 5):.1f} ms")
    print("api by (threads, buffer MiB, buffers, smallest piece MiB):")
    for threads, mib, nbuf, piece in [(8, 32, 4, 1), (12, 32, 4, 1), (16, 32, 4, 1), (8, 32, 8, 32),
                                      (12, 32, 12, 32), (16, 16, 16, 16), (8, 64, 4, 1), (12, 64, 6, 8),
                                      (16, 64, 8, 8)]:
        stage.PIN_THREADS, stage.PIN_BYTES, stage.PIN_BUFFERS, stage.PIN_MIN_CHUNK = threads, mib * MiB, nbuf, piece * MiB
        stage._THREADS.clear()
        got = hotbin.histogram(x, 256, (0, 1), backend="cuda")[0]
        assert got.tobytes() == want.tobytes()
        t = wall(lambda: hotbin.histogram(x, 256, (0, 1), backend="cuda"), 5)
        print(f"  api {threads:2d} threads, {nbuf:2d} x {mib} MiB, pieces >= {piece:2d} MiB: {t:6.1f} ms")


if __name__ == "__main__":
    main()
