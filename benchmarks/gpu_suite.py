"""GPU benchmark suite: hotbin's cuda backend against CUB, CuPy and torch, in one process.

Run on a CUDA machine from the repository root::

    nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC -o /tmp/libcub_anchor.so benchmarks/anchors/cub_anchor.cu
    PYTHONPATH=src python3 benchmarks/gpu_suite.py --cub /tmp/libcub_anchor.so --out results.md

Every timed answer is checked against an exact reference first (integer
references computed another way on the device). Inputs are uniform, narrow
(about 60 bins used) and constant (never all zeros). Times are CUDA-event
medians after warm-up; GB/s counts input bytes read once; the floor is the
input size over the bandwidth of a measured read-only kernel. ``--sweep`` also
times the alternatives behind each entry of cuda.py's tuning table.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import sys

import cupy as cp
import numpy as np
from cuda_timing import timeit

import hotbin
from hotbin.core import fixedpoint, reductions
from hotbin.backend import cuda as cb
from hotbin.backend.cuda import tuning
from hotbin.core.binning import histogram_rule

ROWS: list[dict] = []




def hash_u32(n, seed):
    """n pseudo-random uint32 words (a murmur3 finalizer over a counter)."""
    x = cp.arange(n, dtype=cp.uint32)
    x *= np.uint32(0x9E3779B1)
    x += np.uint32(seed)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x85EBCA6B)
    x ^= x >> np.uint32(13)
    x *= np.uint32(0xC2B2AE35)
    x ^= x >> np.uint32(16)
    return x


def datasets_u8(n):
    u = hash_u32(n // 4, 1).view(cp.uint8)
    yield "uniform", u
    v = u % np.uint8(61)
    v += np.uint8(100)
    del u
    yield "narrow", v
    del v
    yield "constant", cp.full(n, 7, cp.uint8)


def datasets_u16(n):
    u = hash_u32(n // 2, 2).view(cp.uint16)
    yield "uniform", u
    v = u % np.uint16(960)
    v += np.uint16(30000)
    del u
    yield "narrow", v
    del v
    yield "constant", cp.full(n, 12345, cp.uint16)


def datasets_f32(n):
    u = (hash_u32(n, 3) >> np.uint32(8)).astype(cp.float32)
    u *= np.float32(2.0 ** -24)
    yield "uniform", u
    v = u * np.float32(60 / 256)
    v += np.float32(0.3)
    del u
    yield "narrow", v
    del v
    yield "constant", cp.full(n, 0.37, cp.float32)


def datasets_f32_edges(n):
    """float32 values on the edges of 256 bins over (0, 1), against uniform values."""
    yield "uniform", next(datasets_f32(n))[1]
    yield "constant 0.5", cp.full(n, 0.5, cp.float32)
    k = hash_u32(n, 6) % np.uint32(257)  # k/256, 0 <= k <= 256: every edge, the closed end too
    x = k.astype(cp.float32)
    del k
    x *= np.float32(1 / 256)
    yield "k/256", x


def datasets_f32_whole(n):
    """Whole numbers 0-99 in 100 unit bins over (0, 100), against uniform values."""
    u = (hash_u32(n, 3) >> np.uint32(8)).astype(cp.float32)
    u *= np.float32(100 * 2.0 ** -24)
    yield "uniform", u
    del u
    yield "whole 0-99", (hash_u32(n, 7) % np.uint32(100)).astype(cp.float32)


def ref_hist(x, rule):
    """Exact reference: searchsorted in the comparison dtype (NumPy's rule), then bincount."""
    e = cp.asarray(rule.cmp)
    c = x.astype(e.dtype)
    i = cp.searchsorted(e, c, side="right") - 1
    i[c == e[-1]] = rule.nbins - 1
    keep = (c >= e[0]) & (c <= e[-1])
    return cp.bincount(i[keep], minlength=rule.nbins)


def ref_values(x, nbins):
    """Exact reference for integer data over (0, 2^bits) with nbins equal bins."""
    nvals = 1 << (8 * x.dtype.itemsize)
    counts = cp.zeros(nvals, cp.int64)
    step = 1 << 28
    for s in range(0, x.size, step):
        counts += cp.bincount(x[s:s + step], minlength=nvals)
    return counts.reshape(nbins, -1).sum(axis=1)


class Cub:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path) if path else None

    def call(self, name, *args):
        rc = getattr(self.lib, name)(*[ctypes.c_void_p(a.data.ptr) if isinstance(a, cp.ndarray) else a
                                       for a in args], ctypes.c_void_p(0))
        if rc:
            raise RuntimeError(f"{name} returned {rc}")


def timeit_queued(fn):
    """Per-call milliseconds of 10 calls queued back to back (:func:`cuda_timing.timeit`)."""
    return timeit(fn, reps=7, warm=2, calls=10)


def host_us(fn, reps=15):
    """Median host microseconds of one call from an idle device, not waiting for it: the
    host's work around the launches (before it, the device idles in :func:`timeit`)."""
    import time
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
        cp.cuda.Device().synchronize()
    return sorted(out)[reps // 2]


def gbs(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e9 if ms else float("nan")


def row(group, case, nbytes, **times):
    r = {"group": group, "case": case, "bytes": nbytes, **times}
    ROWS.append(r)
    parts = [f"{k}={gbs(nbytes, v):7.0f} GB/s ({v:.3f} ms)" for k, v in times.items() if v]
    print(f"{group:10s} {case:28s} " + "  ".join(parts), flush=True)
    return r


def torch_of(x):
    import torch
    return torch.from_dlpack(x)


def hist_group(name, gen, n, bins, rng_, cub, cub_fn, level_t, anchors_n, sweep, variants):
    for dist, x in gen(n):
        rule = histogram_rule(x[:1], bins, rng_)
        if x.dtype.kind in "iu":
            ref = ref_values(x, bins)
        else:
            ref = ref_hist(x, rule)
        got = cb.histogram(x, rule)
        assert cp.array_equal(got, ref), f"{name} {dist}: wrong histogram"
        api, _ = hotbin.histogram(x, bins=bins, range=rng_)
        assert cp.array_equal(api, ref)
        t = {"ours": timeit(lambda: cb.histogram(x, rule)),
             "ours_api": timeit(lambda: hotbin.histogram(x, bins=bins, range=rng_), reps=10),
             "ours_queued": timeit_queued(lambda: cb.histogram(x, rule)),
             "api_queued": timeit_queued(lambda: hotbin.histogram(x, bins=bins, range=rng_))}
        if cub.lib:
            h = cp.zeros(bins, cp.int32)
            lo, hi = level_t(rng_[0]), level_t(rng_[1])
            cub.call(cub_fn, x, ctypes.c_longlong(x.size), h, ctypes.c_int(bins), lo, hi)
            t["cub"] = timeit(lambda: cub.call(cub_fn, x, ctypes.c_longlong(x.size), h,
                                               ctypes.c_int(bins), lo, hi))
        r = row(name, dist, x.nbytes, **t)
        r["host_us"] = {k: host_us(fn) for k, fn in (("ours", lambda: cb.histogram(x, rule)),
                                                     ("api", lambda: hotbin.histogram(x, bins=bins, range=rng_)))}
        print(" " * 40 + "host µs per call (no wait): " + "  ".join(f"{k}={v:.1f}" for k, v in r["host_us"].items()))
        if anchors_n:
            xs = x[:anchors_n]
            fr = anchors_n / x.size
            a = {"cupy_histogram": timeit(lambda: cp.histogram(xs, bins, rng_), reps=3, warm=1) / fr}
            if x.dtype.kind == "u":
                a["cupy_bincount"] = timeit(lambda: cp.bincount(xs), reps=3, warm=1) / fr
            try:
                import torch
                tx = torch_of(xs)
                if x.dtype.kind == "f":
                    a["torch_histc"] = timeit(lambda: torch.histc(tx, bins, *rng_), reps=3, warm=1) / fr
                elif x.dtype == np.uint8:
                    a["torch_bincount"] = timeit(lambda: torch.bincount(tx), reps=3, warm=1) / fr
            except ImportError:
                pass
            r.update(a)
            print(" " * 40 + "  ".join(f"{k}={gbs(x.nbytes, v):.0f} GB/s" for k, v in a.items()))
        if sweep:
            for label, ov in variants:
                with tuning.forced(**ov):
                    got = cb.histogram(x, rule)
                    ok = bool(cp.array_equal(got, ref))
                    ms = timeit(lambda: cb.histogram(x, rule), reps=10)
                row(name + "/sweep", f"{dist} {label}{'' if ok else ' WRONG'}", x.nbytes, ours=ms)
        del x


def weighted_group(n, sweep, variants):
    """Weighted float32 sums, 256 bins over (0, 1), float32 weights (issue #17): float64 sums
    and ``deterministic=True`` (fixed point at the scale of a sample's max |w|, confirmed by the
    max |w| the sums saw; once more with a largest weight the sample misses, which sums twice). GB/s count the
    values and the weights. Checked: float64 sums against a float64 bincount on the device
    (close: atomics add in any order), fixed-point sums bitwise the same run to run and close to
    it (and bitwise the cpu backend's on a 2^22 prefix)."""
    w = (hash_u32(n, 11) >> np.uint32(8)).astype(cp.float32)
    w *= np.float32(2.0 ** -23)
    w -= np.float32(0.25)  # in [-0.25, 1.75): signed sums
    for dist, x in datasets_f32(n):
        rule = histogram_rule(x[:1], 256, (0.0, 1.0))
        keep = (x >= 0) & (x <= 1)
        idx = cp.minimum((x * np.float32(256)).astype(cp.int32), 255)  # no value sits on an edge here
        ref = cp.bincount(idx[keep], weights=w[keep].astype(cp.float64), minlength=256)
        del idx, keep
        got = cb.histogram(x, rule, w, reductions.SUM_F64)
        assert cp.allclose(got, ref, rtol=1e-9, atol=1e-6), f"weighted {dist}: wrong sums"
        api, _ = hotbin.histogram(x, bins=256, range=(0.0, 1.0), weights=w)
        assert cp.allclose(api, ref, rtol=1e-9, atol=1e-6)
        det, _ = hotbin.histogram(x, bins=256, range=(0.0, 1.0), weights=w, deterministic=True)
        assert cp.array_equal(det, hotbin.histogram(x, bins=256, range=(0.0, 1.0), weights=w,
                                                    deterministic=True)[0]), "deterministic sums differ"
        assert cp.allclose(det, ref, rtol=1e-6, atol=1e-3)
        m = 1 << 22
        h0, _ = hotbin.histogram(x[:m].get(), bins=256, range=(0.0, 1.0), weights=w[:m].get(),
                                 deterministic=True, backend="cpu")
        h1, _ = hotbin.histogram(x[:m], bins=256, range=(0.0, 1.0), weights=w[:m], deterministic=True)
        assert np.array_equal(h1.get(), h0), f"weighted {dist}: deterministic != cpu"
        scale = fixedpoint.scale_for(cb.max_abs(w), n)
        red = reductions.fixed(scale)
        f64 = lambda: cb.histogram(x, rule, w, reductions.SUM_F64)  # noqa: E731
        fixed = lambda: cb.histogram(x, rule, w, red)  # noqa: E731
        api_f64 = lambda: hotbin.histogram(x, bins=256, range=(0.0, 1.0), weights=w)  # noqa: E731
        api_det = lambda: hotbin.histogram(x, bins=256, range=(0.0, 1.0), weights=w, deterministic=True)  # noqa: E731
        nbytes = x.nbytes + w.nbytes
        t = {"ours": timeit(f64), "ours_api": timeit(api_f64, reps=10),
             "ours_queued": timeit_queued(f64), "api_queued": timeit_queued(api_f64)}
        r = row("W f32 256", f"{dist} float64 sums", nbytes, **t)
        r["host_us"] = {"ours": host_us(f64), "api": host_us(api_f64)}
        t = {"ours": timeit(fixed), "ours_api": timeit(api_det, reps=10),
             "ours_queued": timeit_queued(fixed), "api_queued": timeit_queued(api_det)}
        r = row("W f32 256", f"{dist} deterministic", nbytes, **t)
        r["host_us"] = {"ours": host_us(fixed), "api": host_us(api_det)}
        r["max_abs_ms"] = timeit(lambda: cb.max_abs(w))
        if dist == "uniform":  # the scale's guess from a sample misses the largest weight: sums twice
            wo = w.copy()
            wo[1] = np.float32(1e3)
            miss = lambda: hotbin.histogram(x, bins=256, range=(0.0, 1.0), weights=wo, deterministic=True)  # noqa: E731
            ref_miss = reductions.fixed(fixedpoint.scale_for(1e3, n)).finalize(
                cb.histogram(x, rule, wo, reductions.fixed(fixedpoint.scale_for(1e3, n))))
            assert cp.array_equal(miss()[0], cp.asarray(ref_miss)), "deterministic, sample missed: wrong"
            row("W f32 256", f"{dist} deterministic, largest |w| unsampled", nbytes,
                ours_api=timeit(miss, reps=10))
            del wo
        print(" " * 40 + f"max |w| alone: {r['max_abs_ms']:.3f} ms ({gbs(w.nbytes, r['max_abs_ms']):.0f} GB/s of w); "
              "host µs per call: " + "  ".join(f"{k}={v:.1f}" for k, v in r["host_us"].items()))
        if sweep:
            for label, ov in variants:
                with tuning.forced(**ov):
                    a = cb.histogram(x, rule, w, reductions.SUM_F64)
                    b = cb.histogram(x, rule, w, red)
                    ok = bool(cp.allclose(a, ref, rtol=1e-9, atol=1e-6)) and bool(cp.array_equal(b, fixed()))
                    ta, tb = timeit(lambda: cb.histogram(x, rule, w, reductions.SUM_F64), reps=10), \
                        timeit(lambda: cb.histogram(x, rule, w, red), reps=10)
                row("W/sweep", f"{dist} {label}{'' if ok else ' WRONG'}", nbytes, f64=ta, fixed=tb)
        del x


def scan_group(n, cub, anchors_n):
    import torch
    for name, x in (("int32", (hash_u32(n, 4) % np.uint32(2001)).astype(cp.int32) - 1000),
                    ("float32", (hash_u32(n, 5) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -24))):
        got = hotbin.cumsum(x)
        if name == "int32":
            ref = cp.cumsum(x.astype(cp.int64))
            assert cp.array_equal(got, ref), "scan int32 wrong"
        else:
            ref = cp.cumsum(x.astype(cp.float64))
            err = float(cp.max(cp.abs(got - ref) / cp.maximum(ref, 1)))
            assert err < 1e-3, f"scan float32 error {err}"
            assert cp.array_equal(got, hotbin.cumsum(x)), "float scan not reproducible"
            assert np.array_equal(got.get(), hotbin.cumsum(x.get(), backend="cpu")), "float scan != cpu"
        t = {"ours": timeit(lambda: hotbin.cumsum(x))}
        if cub.lib:
            if name == "int32":
                o32 = cp.empty(n, cp.int32)
                o64 = cp.empty(n, cp.int64)
                t["cub_same_dtype"] = timeit(lambda: cub.call("anchor_scan_i32", x, o32, ctypes.c_longlong(n)))
                t["cub_to_int64"] = timeit(lambda: cub.call("anchor_scan_i32_i64", x, o64, ctypes.c_longlong(n)))
                assert cp.array_equal(o64, ref), "CUB int64 scan disagrees"
            else:
                o = cp.empty(n, cp.float32)
                t["cub_same_dtype"] = timeit(lambda: cub.call("anchor_scan_f32", x, o, ctypes.c_longlong(n)))
        xs = x[:anchors_n]
        fr = anchors_n / n
        t["cupy_cumsum"] = timeit(lambda: cp.cumsum(xs), reps=3, warm=1) / fr
        tx = torch_of(xs)
        t["torch_cumsum"] = timeit(lambda: torch.cumsum(tx, 0), reps=3, warm=1) / fr
        r = row("scan", f"{name} 2^{int(np.log2(n))}", x.nbytes, **t)
        r["out_bytes"] = got.nbytes
        for nvec in (4, 16):
            with tuning.forced(scan_nvec=nvec):
                ok = bool(cp.array_equal(hotbin.cumsum(x), got)) if name == "int32" else True
                ms = timeit(lambda: hotbin.cumsum(x))
            row("scan/sweep", f"{name} nvec={nvec}{'' if ok else ' WRONG'}", x.nbytes, ours=ms)


def _device_context():
    with cp.cuda.Device(0):
        pass


def small_group(n=1000, bins=256, reps=3000, profile=None):
    """Host-side cost of one small call: ``hotbin.histogram`` on ``n`` float32 device values
    against ``cupy.histogram`` (issue #17 item 5). Host µs: wall time of ``reps`` calls queued
    back to back, over ``reps`` (the GPU keeps up); sync µs: each call followed by a device
    synchronize (the latency of one call)."""
    import time
    x = (hash_u32(n, 8) >> np.uint32(8)).astype(cp.float32) * np.float32(2.0 ** -24)
    ref, ref_e = np.histogram(x.get(), bins, (0.0, 1.0))
    h, e = hotbin.histogram(x, bins=bins, range=(0.0, 1.0), backend="cuda")
    assert np.array_equal(h.get(), ref) and np.array_equal(e.get(), ref_e), "small: wrong histogram"
    hc, _ = cp.histogram(x, bins, (0.0, 1.0))
    assert np.array_equal(hc.get(), ref), "small: cupy.histogram disagrees"
    dev = cp.cuda.Device()
    calls = {"hotbin": lambda: hotbin.histogram(x, bins=bins, range=(0.0, 1.0), backend="cuda"),
             "cupy": lambda: cp.histogram(x, bins, (0.0, 1.0))}
    out = {}
    for name, fn in calls.items():
        for _ in range(300):
            fn()
        dev.synchronize()
        best_host, best_sync = float("inf"), float("inf")
        for _ in range(5):  # best of 5 rounds: the host is shared with nothing, noise only adds
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            t1 = time.perf_counter()
            dev.synchronize()
            best_host = min(best_host, (t1 - t0) / reps * 1e6)
            t0 = time.perf_counter()
            for _ in range(reps // 10):
                fn()
                dev.synchronize()
            best_sync = min(best_sync, (time.perf_counter() - t0) / (reps // 10) * 1e6)
        out[name] = (best_host, best_sync)
        print(f"small      {name:8s} {n} float32, {bins} bins: host {best_host:6.1f} us/call, "
              f"with sync {best_sync:6.1f} us/call", flush=True)
    ROWS.append({"group": "small", "case": f"{n} float32, {bins} bins", "us": out})
    edges = np.linspace(0, 1, bins + 1, dtype=np.float32)
    d_edges = cp.asarray(edges)
    rule = histogram_rule(x, bins, (0.0, 1.0))
    parts = {"cb.histogram (backend primitive)": lambda: cb.histogram(x, rule),
             "cp.zeros(256, int64)": lambda: cp.zeros(bins, cp.int64),
             "cp.asarray(host edges)": lambda: cp.asarray(edges),
             "device edges .copy()": lambda: d_edges.copy(),
             "x.__cuda_array_interface__": lambda: x.__cuda_array_interface__,
             "with cp.cuda.Device(0)": _device_context}
    for name, fn in parts.items():
        for _ in range(100):
            fn()
        dev.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        us = (time.perf_counter() - t0) / reps * 1e6
        dev.synchronize()
        print(f"small part {name:34s} {us:6.1f} us/call", flush=True)
    if profile:
        import cProfile
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(reps):
            calls["hotbin"]()
        pr.disable()
        dev.synchronize()
        with open(profile, "w") as f:
            pstats.Stats(pr, stream=f).sort_stats("tottime").print_stats(40)
            pstats.Stats(pr, stream=f).sort_stats("cumulative").print_stats(60)


def floor(cub):
    x = hash_u32(1 << 29, 9)  # 2 GiB
    sink = cp.zeros(1, cp.uint32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = {}
    if cub.lib:
        out["read_only"] = timeit(lambda: cub.call("anchor_read", x, ctypes.c_longlong(x.nbytes), sink,
                                                    ctypes.c_int(sms * 4)))
    y = cp.empty_like(x)
    out["d2d_copy"] = timeit(lambda: cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, x.nbytes, 3, 0))
    r = row("floor", "2 GiB", x.nbytes, **out)
    return gbs(x.nbytes, out.get("read_only", out["d2d_copy"] / 2))


def table(floor_gbs, device, date):
    lines = [f"# hotbin cuda backend: GPU benchmark ({device}, {date})", "",
             f"Floor: read-only kernel {floor_gbs:.0f} GB/s. GB/s = input bytes / median time.", "",
             "ours: the backend primitive, one call from an idle device; api: hotbin.histogram, likewise; "
             "queued: 10 calls back to back, per call (the device's own time).", "",
             "| group | case | ours GB/s | ours (api) | ours queued | api queued | CUB | cupy | torch | ours/CUB "
             "| ours/floor |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    small = [r for r in ROWS if r["group"] == "small"]
    for r in ROWS:
        if "ours" not in r:
            continue
        b = r["bytes"]
        ours = gbs(b, r.get("ours"))
        cub = r.get("cub") or r.get("cub_same_dtype")
        cupy_t = r.get("cupy_histogram") or r.get("cupy_cumsum")
        torch_t = r.get("torch_histc") or r.get("torch_bincount") or r.get("torch_cumsum")
        extra = ""
        if "cub_to_int64" in r:
            extra = f" (to int64: {gbs(b, r['cub_to_int64']):.0f}; times ours {r['ours']:.3f} ms, CUB {r['cub_same_dtype']:.3f} / {r['cub_to_int64']:.3f} ms)"
        elif "cub_same_dtype" in r:
            extra = f" (times ours {r['ours']:.3f} ms, CUB {r['cub_same_dtype']:.3f} ms)"
        if "cupy_bincount" in r:
            extra += f" cupy.bincount {gbs(b, r['cupy_bincount']):.0f}"
        fmt = lambda t: f"{gbs(b, t):.0f}" if t else "–"  # noqa: E731
        ratio = f"{r['ours'] and cub and cub / r['ours']:.2f}" if cub and r.get("ours") else "–"
        lines.append(f"| {r['group']} | {r['case']} | {ours:.0f} | {fmt(r.get('ours_api'))} | "
                     f"{fmt(r.get('ours_queued'))} | {fmt(r.get('api_queued'))} | {fmt(cub)}{extra} | "
                     f"{fmt(cupy_t)} | {fmt(torch_t)} | {ratio} | "
                     f"{ours / floor_gbs:.2f} |")
    if small:
        lines += ["", "Small calls (host µs per call, best of 5 rounds; with sync: each call waited for):", "",
                  "| case | hotbin host | hotbin with sync | cupy.histogram host | cupy with sync |",
                  "|---|---|---|---|---|"]
        for r in small:
            (hh, hs), (ch, cs) = r["us"]["hotbin"], r["us"]["cupy"]
            lines.append(f"| {r['case']} | {hh:.1f} | {hs:.1f} | {ch:.1f} | {cs:.1f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cub", default=None, help="path of libcub_anchor.so")
    ap.add_argument("--out", default="gpu-h200.md", help="results/<suite>-<machine>.md")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--small", action="store_true", help="smaller inputs (smoke test)")
    ap.add_argument("--only", default="G1,G2,G3,scan", help="comma-separated groups to run "
                    "(also: E, values on edges; W, weighted sums; small, small calls)")
    ap.add_argument("--no-anchors", action="store_true", help="G1, G2: no cupy / torch rows (CUB stays)")
    ap.add_argument("--profile", default=None, help="group small: write a cProfile of the calls here")
    args = ap.parse_args()
    cub = Cub(args.cub)
    dev = cb.devices()[0]
    date = datetime.date.today().isoformat()
    print(dev, date)
    big, mid = (1 << 31, 1 << 28) if not args.small else (1 << 24, 1 << 22)
    fl = floor(cub)
    # issue #17 item 2 (`bash benchmarks/device.sh suite`): the lanes layout's loads in flight and
    # block shapes, on the kernels whose grid is one wave of what registers allow
    u8_variants = [("unroll2", {"unroll": 2}), ("unroll8", {"unroll": 8}),
                   ("1024x2", {"block": 1024, "blocks_per_sm": 2}), ("256x8", {"block": 256, "blocks_per_sm": 8}),
                   ("512x3", {"blocks_per_sm": 3})]
    f32_variants = [("no shortcut", {"shortcut": False}), ("unroll2", {"unroll": 2}), ("unroll8", {"unroll": 8}),
                    ("no shortcut unroll2", {"shortcut": False, "unroll": 2}),
                    ("1024x2", {"block": 1024, "blocks_per_sm": 2}), ("256x8", {"block": 256, "blocks_per_sm": 8})]
    # issue #17e: hist_shift's counters (16-bit, 32-bit), copies and loads in flight, and the
    # value-count windows it replaced for these rules (the table before it)
    u16_variants = [("values windows2 unroll4 (before)", {"layout": "windows", "windows": 2, "unroll": 4}),
                    ("unroll2", {"unroll": 2}), ("unroll8", {"unroll": 8}),
                    ("copies4", {"copies": 4}), ("copies16 (16-bit)", {"layout": "shift16", "copies": 16}),
                    ("copies8 (16-bit)", {"layout": "shift16", "copies": 8})]
    w_variants = [("copies1", {"copies": 1}), ("copies4", {"copies": 4}), ("copies8", {"copies": 8}),
                  ("copies32", {"copies": 32}), ("256x8", {"block": 256, "blocks_per_sm": 8})]
    groups = {
        "G1": lambda: hist_group("G1 u8 256", datasets_u8, big, 256, (0, 256), cub, "anchor_hist_u8",
                                 ctypes.c_int, 0 if args.no_anchors else mid, args.sweep,
                                 u8_variants[:3]),
        "G2": lambda: hist_group("G2 f32 256", datasets_f32, mid, 256, (0.0, 1.0), cub, "anchor_hist_f32",
                                 ctypes.c_float, 0 if args.no_anchors else mid, args.sweep,
                                 f32_variants),
        "G3": lambda: [hist_group(f"G3 u16 {nb}", datasets_u16, mid, nb, (0, 65536), cub, "anchor_hist_u16",
                                  ctypes.c_int, 0, args.sweep, u16_variants if nb == 4096 else u16_variants[:3])
                       for nb in (4096, 65536)],
        # issue #17: weighted float32 sums, float64 and deterministic
        "W": lambda: weighted_group(mid, args.sweep, w_variants),
        # issue #17 item 1: values on edges cost what uniform values cost ("no shortcut": every
        # value takes the two compares)
        "E": lambda: [hist_group("E f32 256", datasets_f32_edges, mid, 256, (0.0, 1.0), cub,
                                 "anchor_hist_f32", ctypes.c_float, 0, args.sweep,
                                 [("no shortcut", {"shortcut": False})]),
                      hist_group("E f32 100", datasets_f32_whole, mid, 100, (0.0, 100.0), cub,
                                 "anchor_hist_f32", ctypes.c_float, 0, args.sweep,
                                 [("no shortcut", {"shortcut": False})])],
        "small": lambda: small_group(profile=args.profile),
        "scan": lambda: scan_group(mid, cub, 1 << 28 if not args.small else mid),
    }
    for name in args.only.split(","):
        groups[name]()
    md = table(fl, dev, date)
    with open(args.out, "w") as f:
        f.write(md)
    with open(args.out.rsplit(".", 1)[0] + ".json", "w") as f:
        json.dump({"device": dev, "date": date, "floor_gbs": fl, "rows": ROWS}, f, indent=1)
    print(md)


if __name__ == "__main__":
    sys.exit(main())
