"""Where the host's time of one ``hotbin.histogram`` call on a CuPy array goes (issue #17 item 2).

Run on a CUDA machine from the repository root, with whichever hotbin ``PYTHONPATH`` names (the
tree before a change too)::

    PYTHONPATH=src:benchmarks python3 benchmarks/probes/gpu_host_call.py --label after --out after.json

For each row (float32 2^28 over (0, 1), uint8 2^31 over (0, 256), 256 bins; uint16 2^28, 4096 and
65536 bins over (0, 65536); uniform, narrow, constant, as gpu_suite.py makes them; every answer
checked against an exact reference first):

* **pre-launch µs**: host time from the call to the counting kernel's launch, the device idle
  (the one-launch plan's kernel wrapped by a timer: backend/cuda/quick.py), median of 31;
  **host µs**: the whole call, likewise;
* **GB/s**: the public call (``backend="cuda"``) from an idle device (CUDA events around one call, as gpu_suite.py's
  "api"), 10 calls queued back to back (per call), the backend primitive from idle, and the
  bare kernel queued (its launch with ready arguments: the device's own time).

Then the host cost of CuPy's and hotbin's steps one by one (µs per call, queued on a 1000-value
array), the 1000-value call of gpu_suite.py's group small, and a cProfile of 10000 such calls.
``--spare both`` also times the new tree with ``quick.SPARE`` off.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import time

import cupy as cp
import numpy as np
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from cuda_timing import timeit
from gpu_suite import datasets_f32, datasets_u8, datasets_u16, gbs, ref_hist, ref_values

import hotbin
from hotbin import backend as registry
from hotbin.backend import cuda as cb
from hotbin.backend.cuda import quick, tuning
from hotbin.backend.cuda.hist1d import blocks
from hotbin.core.binning import histogram_rule

ROWS = [("f32 2^28 256", datasets_f32, 1 << 28, 256, (0.0, 1.0)),
        ("u8 2^31 256", datasets_u8, 1 << 31, 256, (0, 256)),
        ("u16 2^28 4096", datasets_u16, 1 << 28, 4096, (0, 65536)),
        ("u16 2^28 65536", datasets_u16, 1 << 28, 65536, (0, 65536))]


class Timed:
    """A kernel whose launches note the host clock just before they are made."""

    def __init__(self, kern):
        self.kern, self.t = kern, 0

    def __call__(self, *args, **kw):
        self.t = time.perf_counter_ns()
        return self.kern(*args, **kw)


def _entry(x, rule):
    """quick's cached entry of ``(rule, x.dtype)``: its key and the _Quick (None: not taken)."""
    for key, (r, q, *_) in quick._QUICK.items():
        if r is rule and key[1] == x.dtype:
            return key, q
    return None, None


def _put(key, q):
    """quick's entry ``key`` with the _Quick ``q`` (the rest of the entry kept)."""
    quick._QUICK[key] = (quick._QUICK[key][0], q, *quick._QUICK[key][2:])


def host_split(call, timer, reps=31):
    """Median (pre-launch µs, whole-call µs) of ``call()`` from an idle device."""
    pre, whole = [], []
    for _ in range(reps):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter_ns()
        call()
        t1 = time.perf_counter_ns()
        pre.append((timer.t - t0) / 1e3 if timer and timer.t > t0 else float("nan"))
        whole.append((t1 - t0) / 1e3)
    cp.cuda.Device().synchronize()
    return statistics.median(pre), statistics.median(whole)


def row(name, dist, x, bins, rng_, variants):
    rule = histogram_rule(x[:1], bins, rng_)
    ref = ref_values(x, bins) if x.dtype.kind in "iu" else ref_hist(x, rule)
    api = lambda: hotbin.histogram(x, bins, rng_, backend="cuda")  # noqa: E731
    prim = lambda: cb.histogram(x, rule)  # noqa: E731
    h, e = api()
    assert cp.array_equal(h, ref) and np.array_equal(e.get(), np.histogram(np.empty(0, x.dtype), bins, rng_)[1]), \
        f"{name} {dist}: wrong answer"
    assert cp.array_equal(prim(), ref)
    key, q = _entry(x, rule)
    assert q is not None, f"{name}: not one launch"
    timer = Timed(q.plan.kern)
    _put(key, q._replace(plan=q.plan._replace(kern=timer)))
    # the bare kernel: the launch quick makes, arguments ready
    p, n = q.plan, x.size
    out = cp.zeros(q.slots, cp.int64)
    n64 = np.int64(n)
    args = (x.reshape(-1), n64, *q.head, out, *((n64,) if q.strided else ()), *q.tail)
    g = blocks(p, x.data.device_id, n)
    kern = lambda: timer.kern((g, 1), (p.pol.block,), args, shared_mem=p.smem)  # noqa: E731
    res = {"row": name, "dist": dist, "bytes": x.nbytes,
           "kernel_ms": timeit(kern, reps=7, warm=2, calls=10)}
    for label, spare in variants:
        if spare is not None:
            quick.SPARE = spare
        api(), api()
        r = res[label] = {}
        r["pre_us"], r["host_us"] = host_split(api, timer)
        r["prim_pre_us"], r["prim_host_us"] = host_split(prim, timer)
        r["api_ms"] = timeit(api, reps=20)
        r["api_queued_ms"] = timeit(api, reps=7, warm=2, calls=10)
        r["prim_ms"] = timeit(prim, reps=20)
        assert cp.array_equal(api()[0], ref)
        print(f"{name:15s} {dist:9s} {label:9s} pre {r['pre_us']:6.1f} host {r['host_us']:6.1f} us "
              f"(primitive {r['prim_pre_us']:5.1f} / {r['prim_host_us']:5.1f}) | API one call "
              f"{gbs(x.nbytes, r['api_ms']):5.0f} queued {gbs(x.nbytes, r['api_queued_ms']):5.0f} | primitive "
              f"{gbs(x.nbytes, r['prim_ms']):5.0f} | kernel {gbs(x.nbytes, res['kernel_ms']):5.0f} GB/s "
              f"({res['kernel_ms'] * 1e3:.0f} us)", flush=True)
    _put(key, q)
    return res


def per_call(fn, reps=2000, rounds=5):
    """Best of ``rounds`` of µs per call of ``reps`` calls queued (a sync after each round)."""
    for _ in range(200):
        fn()
    best = float("inf")
    for _ in range(rounds):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / reps / 1e3)
    cp.cuda.Device().synchronize()
    return best


def steps():
    """µs per call of the steps of one small call, each alone."""
    from hotbin.exec import local as plan
    from hotbin.core import validate
    from hotbin.core.arrays import shared_copy

    x = (cp.arange(1000, dtype=cp.float32) / np.float32(1000))
    rule = histogram_rule(x, 256, (0.0, 1.0))
    tune = tuning.current()
    hotbin.histogram(x, 256, (0.0, 1.0))
    key, q = _entry(x, rule)
    p = q.plan
    out = cp.zeros(q.slots, cp.int64)
    n64 = np.int64(x.size)
    args = (x, n64, *q.head, out, n64, *q.tail)
    g = blocks(p, 0, x.size)
    stream = cp.cuda.get_current_stream()
    ex = plan.executor("cuda", x)
    found = {
        "python call (lambda: None)": lambda: None,
        "hotbin.histogram(x, 256, (0, 1))": lambda: hotbin.histogram(x, 256, (0.0, 1.0)),
        "hotbin.histogram(..., backend='cuda')": lambda: hotbin.histogram(x, 256, (0.0, 1.0), backend="cuda"),
        "cuda.histogram(x, rule) (primitive)": lambda: cb.histogram(x, rule),
        "quick.counts(x, rule, tune)": lambda: quick.counts(x, rule, tune),
        "kernel launch, arguments ready": lambda: p.kern((g, 1), (p.pol.block,), args, shared_mem=p.smem),
        "cp.zeros(256, int64)": lambda: cp.zeros(256, cp.int64),
        "cp.empty(256, int64)": lambda: cp.empty(256, cp.int64),
        "cp.zeros(65536, int64)": lambda: cp.zeros(65536, cp.int64),
        "out.data.memset_async(0, 2048)": lambda: out.data.memset_async(0, 2048),
        "cp.cuda.runtime.getDevice()": cp.cuda.runtime.getDevice,
        "x.flags.c_contiguous": lambda: x.flags.c_contiguous,
        "x.data.device_id": lambda: x.data.device_id,
        "cp.cuda.get_current_stream()": cp.cuda.get_current_stream,
        "stream.is_capturing()": stream.is_capturing,
        "np.int64(n)": lambda: np.int64(1000),
        "hist1d.blocks(plan, dev, n)": lambda: blocks(p, 0, 1000),
        "shared_copy(rule.edges, x)": lambda: shared_copy(rule.edges, x),
        "histogram_rule(x, 256, (0, 1))": lambda: histogram_rule(x, 256, (0.0, 1.0)),
        "plan.executor('cuda', x)": lambda: plan.executor("cuda", x),
        "plan.executor(None, x, None, offload=...)": lambda: plan.executor(None, x, None, offload="histogram"),
        "validate.values(ex, x, None)": lambda: validate.values(ex, x, None),
        "tuning.current()": tuning.current,
        "os.environ.get('HOTBIN_BACKEND')": lambda: os.environ.get("HOTBIN_BACKEND"),
        "backend._claimant((x,))": lambda: registry._claimant((x,)),
    }
    dc = getattr(plan, "device_histogram", None) or getattr(registry, "device_histogram", None)  # either tree
    if dc is not None:
        found["device_histogram(None, x, 256, (0, 1))"] = lambda: dc(None, x, 256, (0.0, 1.0))
    res = {}
    for name, fn in found.items():
        res[name] = per_call(fn)
        print(f"step {name:45s} {res[name]:6.2f} us", flush=True)
    return res


def edge_uploads():
    """The 65536-bin call's edges (65537 float64, 512 KiB): whether the public call uploads them
    (``cupy.asarray`` calls counted over 100 calls), and what their device copy and an upload cost."""
    from hotbin.core import arrays

    x = cp.asarray(np.arange(1000, dtype=np.uint16))
    rule = histogram_rule(x, 65536, (0, 65536))
    hotbin.histogram(x, 65536, (0, 65536), backend="cuda")
    seen, real = [], cp.asarray

    def counted(*a, **k):
        seen.append(1)
        return real(*a, **k)
    cp.asarray = counted
    try:
        for _ in range(100):
            hotbin.histogram(x, 65536, (0, 65536), backend="cuda")
    finally:
        cp.asarray = real
    res = {"asarray_calls_per_100": len(seen), "by_identity": (id(rule.edges), 0) in arrays._SHARED,
           "shared_copy_us": per_call(lambda: arrays.shared_copy(rule.edges, x), reps=500),
           "upload_us": per_call(lambda: cp.asarray(rule.edges), reps=500)}
    print(f"edges of 65536 bins: {res}", flush=True)
    return res


def spin_probe():
    """The host's µs of one small public call before and after the host waits ~0.3 s for the
    device (CuPy's synchronize spins), and after 2 s asleep, with the cgroup's CPU throttling
    counters: is a slow row the host's state after a long wait (the u8 constant row)?"""
    def cpu_stat():
        try:
            with open("/sys/fs/cgroup/cpu.stat") as f:
                return dict(line.split() for line in f)
        except OSError:
            return {}
    x = (cp.arange(1000, dtype=cp.float32) / np.float32(1000))
    call = lambda: hotbin.histogram(x, 256, (0.0, 1.0), backend="cuda")  # noqa: E731
    big = cp.full(1 << 28, 7, cp.uint8)
    res = {"cpu.max": open("/sys/fs/cgroup/cpu.max").read().strip() if os.path.exists("/sys/fs/cgroup/cpu.max")
           else None, "stat0": cpu_stat(), "idle_us": host_split(call, None)[1]}
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.3:
        cp.bincount(big)  # atomics on one counter: long kernels
        cp.cuda.Device().synchronize()
    res["after_wait_us"] = host_split(call, None)[1]
    res["stat1"] = cpu_stat()
    time.sleep(2)
    res["after_sleep_us"] = host_split(call, None)[1]
    print(f"spin probe: {res}", flush=True)
    return res


def profile(path, n=10000):
    x = (cp.arange(1000, dtype=cp.float32) / np.float32(1000))
    for _ in range(300):
        hotbin.histogram(x, 256, (0.0, 1.0), backend="cuda")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        hotbin.histogram(x, 256, (0.0, 1.0), backend="cuda")
    pr.disable()
    cp.cuda.Device().synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30)
    pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(40)
    with open(path, "w") as f:
        f.write(s.getvalue())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rows", default="all", help="comma-separated row names' first words, or all")
    ap.add_argument("--spare", default="on", choices=["on", "both"], help="both: also quick.SPARE off")
    ap.add_argument("--profile", default=None)
    ap.add_argument("--no-small", action="store_true")
    args = ap.parse_args()
    print(cb.devices()[0], hotbin.__file__, flush=True)
    has_spare = hasattr(quick, "SPARE")
    variants = [(args.label, True if has_spare else None)]
    if args.spare == "both" and has_spare:
        variants.append((args.label + "-nospare", False))
    result = {"label": args.label, "rows": [], "steps": steps()}
    for name, gen, n, bins, rng_ in ROWS:
        if args.rows != "all" and name.split()[0] not in args.rows.split(","):
            continue
        for dist, x in gen(n):
            result["rows"].append(row(name, dist, x, bins, rng_, variants))
            del x
    if has_spare:
        quick.SPARE = True
    result["edges65536"] = edge_uploads()
    result["spin"] = spin_probe()
    if not args.no_small:
        from gpu_suite import ROWS as SUITE, small_group
        small_group()
        result["small"] = SUITE[-1]["us"]
    if args.profile:
        profile(args.profile)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    os.sync()


if __name__ == "__main__":
    main()
