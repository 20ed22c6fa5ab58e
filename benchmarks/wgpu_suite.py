"""wgpu backend benchmark: 256-bin histograms of uint8 (uniform / narrow / constant), GB/s.

Run from the repository root on any WebGPU adapter::

    PYTHONPATH=src python3 benchmarks/wgpu_suite.py [--mib 1024] [--sweep] [--out DIR]

Target G7 (ANCHORS.md): the wgpu backend reaches at least 70 % of the cuda backend on the
same GPU. When ``hotbin.backend.cuda`` imports and finds a device, it is timed in the same
process on the same bytes and the ratio is printed; otherwise the ratio is taken against
ANCHORS.md's CUDA figures (and says so).

Inputs (never all zeros): uniform bytes, narrow (61 values, 100..160), constant 7.
Every timed configuration is first checked against ``np.bincount``. GB/s counts input
bytes read once. Two wgpu figures:
  kernel  the counting dispatch on resident data (median of reps, each rep INNER dispatches
          in one submission and a 16-byte read back, wall clock / INNER)
  call    one resident histogram as the backend computes it (``hist.count_u8_resident``):
          one submission (zero the counters, dispatch, copy them out), one map of a reused
          staging buffer, fold into bins (what ``histogram`` does once the data is uploaded).
          "call before" is the call of 2026-11-30 (new counters, a submission, then
          ``queue.read_buffer``), "roundtrip" an empty submission and read-back
``--sweep`` times every (mode, workgroup size, copies, unroll, workgroups) of the tuning space and
reports the best, to justify the table in ``hotbin/backend/wgpu/tuning.py``.

``--heatmap`` times instead the heatmap aggregations of issue #16 on the device:
``histogram2d`` of float32 points on a grid of cells (default 1024 x 1024) with 0 / 90 /
100 % (``--shares``) of the points in one cell: counts, counts by 8 categories (int8 codes), max and
mean of float32 weights. Each is first checked against the cpu backend (bit for bit; the mean's
fixed-point sums to rounding); M points/s are of the
call on NumPy input (upload and read-back of the cells included), median of reps.

``--calls`` times the public calls on NumPy input that the per-call target names, wgpu against
cuda (when CuPy and the cuda backend run here) or else the cpu backend, each answer checked
against the other: ``hotbin.histogram`` of 2**28 uint8 (256 bins), ``hotbin.heatmap``
``agg="mean"`` of 2**24 float32 points into 512 x 512, ``hotbin.cumsum`` of 2**26 int32 (on a
CPU adapter 2**24, 2**22, 2**22; ``--log2`` sets all three). For the wgpu call it also
prints where the time goes: milliseconds in uploads and in read-backs (the wait for the
kernels included), and per call the submissions, buffers created (MB) and staging maps;
with ``--sweep``, the wgpu calls by host copy threads and upload / read-back piece size.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import statistics
import time

import numpy as np

from hotbin.core import reductions
from hotbin.backend import cpu as C, wgpu as W
from hotbin.backend.wgpu import device as D, counts as H, tuning
from hotbin.core.binning import histogram2d_rules, histogram_rule
from hotbin.core.kernel_rule import fold_values, value_table

#: ANCHORS.md, 2026-11-30, H200: best CUDA 256-bin uint8 figures (simple shared-atomic
#: kernel with 16-byte loads, upper end), used only when the cuda backend cannot run here.
ANCHOR_CUDA = {"uniform": 2344.0, "narrow": 3813.0, "constant": 4424.0}
INNER = 20


def datasets(nbytes, seed=1):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 1 << 32, nbytes // 4, dtype=np.uint32).view(np.uint8)
    yield "uniform", u
    v = u % np.uint8(61)
    v += np.uint8(100)
    yield "narrow", v
    del v
    yield "constant", np.full(nbytes, 7, np.uint8)


def reference(host):
    """Exact byte counts: CuPy's bincount where present, else NumPy in 64 MiB pieces."""
    try:
        import cupy as cp
        return cp.bincount(cp.asarray(host), minlength=256).get().astype(np.int64)
    except Exception:
        step = 64 << 20
        return sum(np.bincount(host[s:s + step], minlength=256).astype(np.int64)
                   for s in range(0, host.size, step))


def median_ms(g, encode, reps):
    """Median wall milliseconds per dispatch: INNER dispatches per submission.

    Waits by reading 16 bytes back (wgpu-py 0.32's on_submitted_work_done_sync is broken).
    """
    q = g.device.queue
    sync = g.storage(16)
    ts = []
    for r in range(reps + 1):
        enc = g.device.create_command_encoder()
        for _ in range(INNER):
            encode(enc)
        cb = enc.finish()
        t0 = time.perf_counter()
        q.submit([cb])
        q.read_buffer(sync, 0, 16)
        if r:  # the first is warm-up
            ts.append((time.perf_counter() - t0) * 1e3 / INNER)
    return statistics.median(ts)


def check(g, buf, n16, want, **cfg):
    out = g.storage(256 * 8)
    H.launch_u8(g, buf, n16, out, **cfg)
    got = D.words64(g.read(out))
    if not np.array_equal(got, want):
        raise AssertionError(f"wrong counts with {cfg}")


def cuda_runner():
    """(name, fn(host array) -> (ms kernel, ms call, counts)) for the cuda backend, or None."""
    try:
        import cupy as cp

        from hotbin.backend import cuda as cb
        cb.require()
    except Exception as exc:  # no CuPy, no device, no backend module
        print(f"cuda backend unavailable here ({type(exc).__name__}: {exc})")
        return None

    from cuda_timing import timeit as events

    def run(host, rule, reps):
        x = cp.asarray(host)
        counts = cp.asnumpy(cb.histogram(x, rule))
        call = events(lambda: cb.histogram(x, rule), reps)
        kernel = call
        try:  # the counting launch alone (a private helper: its signature may change)
            out = cp.zeros(256, cp.uint64)
            from hotbin.backend.cuda import hist1d, tuning

            kernel = events(lambda: hist1d.count(x, None, 256, out, tuning.current()), reps)
        except Exception as exc:
            print(f"cuda kernel-only timing unavailable ({exc}); using the call time")
        x = None  # free the device copy
        return kernel, call, counts

    return cb.devices()[0], run


def heatmap_rows(g, log2n, cells, reps, shares=(0.0, 0.9, 1.0)):
    """M points/s of counts, counts by 8 categories, max and mean per cell, with ``shares`` of the
    points in one cell."""
    rng = np.random.default_rng(16)
    n = 1 << log2n
    x0, y0 = rng.random(n, np.float32), rng.random(n, np.float32)
    w = rng.normal(size=n).astype(np.float32)
    codes = rng.integers(0, 8, n).astype(np.int8)
    cases = {"count": {}, "by8": {"by": (codes, 8)},
             "max": {"weights": w, "red": reductions.MAX},
             "mean": {"weights": w, "red": reductions.MEAN}}
    rows = []
    for hot in shares:
        x, y = x0.copy(), y0.copy()
        h = rng.random(n) < hot
        x[h], y[h] = 0.31, 0.77
        rx, ry = histogram2d_rules(x, y, cells, [(0, 1), (0, 1)])
        for name, kw in cases.items():
            got = W.histogram2d(x, y, rx, ry, **kw)
            want = C.histogram2d(x, y, rx, ry, **kw)
            assert got is not NotImplemented and got[1] == want[1], name
            if name == "mean":  # fixed-point sums against float64 running sums: to rounding
                assert np.array_equal(got[0][1], want[0][1]) and np.allclose(
                    got[0][0], want[0][0], rtol=1e-9, atol=1e-9 * np.abs(w).max()), name
            else:
                assert np.array_equal(got[0].view(np.int64), want[0].view(np.int64)), name
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                W.histogram2d(x, y, rx, ry, **kw)
                ts.append(time.perf_counter() - t0)
            row = {"agg": name, "hot": hot, "cells": cells, "points": n,
                   "Mpts_per_s": n / statistics.median(ts) / 1e6}
            rows.append(row)
            print(json.dumps(row))
    return rows


def heatmap_main(args, g, date):
    cells = (args.cells, args.cells)
    log2n = args.log2n or (22 if g.kind == "cpu" else 26)
    shares = [float(s) for s in args.shares.split(",")]
    rows = heatmap_rows(g, log2n, cells, max(3, args.reps // 3), shares)
    lines = [f"# wgpu_suite --heatmap: {g.name}", "",
             f"{date}; 2**{log2n} float32 points, {cells[0]} x {cells[1]} cells, "
             f"workgroups={g.workgroups}; M points/s of the call on NumPy input", "",
             "| agg | " + " | ".join(f"{s:.0%} hot" for s in shares) + " |",
             "|---|" + "---|" * len(shares)]
    for name in ("count", "by8", "max", "mean"):
        lines.append(f"| {name} | " + " | ".join(
            f"{r['Mpts_per_s']:.4g}" for r in rows if r["agg"] == name) + " |")
    text = "\n".join(lines)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "wgpu_heatmap.md"), "w") as f:
            f.write(text + "\n")
    print()
    print(text)


#: --calls: the three calls on NumPy input, log2 of their sizes on a GPU and on a CPU adapter
CALLS = {"histogram u8": (28, 24), "heatmap mean": (24, 22), "cumsum i32": (26, 22)}


def call_cases(log2):
    """(name, size, fn(backend) -> result, check(got, want)) of the --calls cases."""
    import hotbin

    rng = np.random.default_rng(7)
    n = {k: 1 << v for k, v in log2.items()}
    a = rng.integers(0, 256, n["histogram u8"], dtype=np.uint8)
    m = n["heatmap mean"]
    x, y = rng.random(m, np.float32), rng.random(m, np.float32)
    w = rng.normal(size=m).astype(np.float32)
    c = rng.integers(-(1 << 20), 1 << 20, n["cumsum i32"], dtype=np.int32)

    def heat(be):
        h = hotbin.heatmap(x, y, w, agg="mean", width=512, height=512, x_range=(0, 1),
                           y_range=(0, 1), backend=be)
        return np.asarray(h.values), np.asarray(h.counts)

    def same_heat(got, want):  # fixed-point sums against another backend's: to rounding
        ok = np.allclose(got[0], want[0], rtol=1e-9, atol=1e-9 * float(np.abs(w).max()), equal_nan=True)
        return ok and np.array_equal(got[1], want[1])

    exact = np.array_equal
    return [("histogram u8", a.nbytes,
             lambda be: hotbin.histogram(a, bins=256, range=(0, 256), backend=be)[0], exact),
            ("heatmap mean", x.nbytes * 3, heat, same_heat),
            ("cumsum i32", c.nbytes, lambda be: hotbin.cumsum(c, backend=be), exact)]


class Parts:
    """Counts the wgpu device's submissions, buffers created and staging maps, and the time in
    uploads and read-backs, by wrapping the device's methods (any version of the module)."""

    def __init__(self, g):
        self.n = dict(submits=0, buffers=0, made_MB=0.0, maps=0, upload_ms=0.0, read_ms=0.0)
        self.maps = True
        dev, q = g.device, g.device.queue
        create, submit, create_data = dev.create_buffer, q.submit, dev.create_buffer_with_data

        def made(**kw):
            self.n["buffers"] += 1
            self.n["made_MB"] += kw.get("size", 0) / 2 ** 20
            return create(**kw)

        def made_data(**kw):
            self.n["buffers"] += 1
            return create_data(**kw)

        def sub(cbs):
            self.n["submits"] += 1
            return submit(cbs)
        dev.create_buffer, dev.create_buffer_with_data, q.submit = made, made_data, sub
        for name, key in (("upload", "upload_ms"), ("read_many" if hasattr(g, "read_many") else "read",
                                                    "read_ms")):
            setattr(g, name, self._timed(getattr(g, name), key))
        try:  # the staging maps of this tree (older trees: not counted)
            from hotbin.backend.wgpu import memory as M
            for name in ("map_read", "write_mapped"):
                setattr(M, name, self._counted(getattr(M, name)))
        except ImportError:
            self.maps = False

    def _timed(self, fn, key):
        def run(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.n[key] += (time.perf_counter() - t0) * 1e3
        return run

    def _counted(self, fn):
        def run(*a, **kw):
            self.n["maps"] += 1
            return fn(*a, **kw)
        return run

    def per_call(self, fn, reps):
        """``fn``'s counts and times, mean per call over ``reps`` calls."""
        self.n = dict.fromkeys(self.n, 0)
        for _ in range(reps):
            fn()
        got = {k: v / reps for k, v in self.n.items()}
        if not self.maps:
            got["maps"] = float("nan")
        return got


def median_call_ms(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def transfer_sweep(g, cases, reps):
    """Lines of the wgpu calls' median ms by copy threads and upload / read-back piece size."""
    from hotbin.backend.wgpu import memory as M

    keep = g.copy_threads, M.UPLOAD_PIECE, M.READ_PIECE
    lines = ["", "wgpu call (ms) by host copy threads and upload / read-back piece:", "",
             "| threads | piece MiB | " + " | ".join(c[0] for c in cases) + " |",
             "|---|---|" + "---|" * len(cases)]
    try:
        for threads, mib in itertools.product((1, 2, 4, 8), (16, 64)):
            g.copy_threads, M.UPLOAD_PIECE, M.READ_PIECE = threads, mib << 20, mib << 20
            ms = [median_call_ms(lambda: c[2]("wgpu"), reps) for c in cases]
            lines.append(f"| {threads} | {mib} | " + " | ".join(f"{m:.1f}" for m in ms) + " |")
            print(lines[-1], flush=True)
    finally:
        g.copy_threads, M.UPLOAD_PIECE, M.READ_PIECE = keep
    return lines


def calls_main(args, g, date):
    """The --calls table: each call on NumPy input, wgpu against cuda (or the cpu backend)."""
    log2 = {k: args.log2 or v[g.kind == "cpu"] for k, v in CALLS.items()}
    other = "cuda" if cuda_runner() is not None else "cpu"
    cases = call_cases(log2)
    rows = []
    for name, nbytes, fn, same in cases:
        got, want = fn("wgpu"), fn(other)
        assert same(got, want), f"{name}: wgpu's answer is not {other}'s"
        ms = {be: median_call_ms(lambda: fn(be), args.reps) for be in ("wgpu", other)}
        row = {"call": name, "log2": log2[name], "MB": nbytes / 2 ** 20, "wgpu_ms": ms["wgpu"],
               f"{other}_ms": ms[other], "ratio": ms[other] / ms["wgpu"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    sweep = transfer_sweep(g, cases, args.reps) if args.sweep else []
    parts = Parts(g)  # after the timing: the wrappers cost nothing there
    for row, (name, _, fn, _) in zip(rows, cases):
        row.update(parts.per_call(lambda: fn("wgpu"), max(1, args.reps // 3)))
    lines = [f"# wgpu_suite --calls: {g.name}", "",
             f"{date}; the public call on NumPy input, median of {args.reps}, ms; ratio = {other} "
             "call / wgpu call (target >= 0.7 against cuda)", "",
             f"| call | size | input MB | wgpu | {other} | ratio | upload | read-back (with the wait) "
             "| submits | buffers made (MB) | staging maps |", "|---" * 11 + "|"]
    for r in rows:
        lines.append(f"| {r['call']} | 2^{r['log2']} | {r['MB']:.0f} | {r['wgpu_ms']:.1f} | "
                     f"{r[other + '_ms']:.1f} | {r['ratio']:.2f} | {r['upload_ms']:.1f} | "
                     f"{r['read_ms']:.1f} | {r['submits']:.1f} | {r['buffers']:.1f} ({r['made_MB']:.0f}) | "
                     f"{r['maps']:.1f} |")
    text = "\n".join(lines + sweep)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "wgpu_calls.md"), "w") as f:
            f.write(text + "\n")
    print()
    print(text)


def main():
    global INNER
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=None, help="input size (default 1024; 64 on CPU adapters)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--inner", type=int, default=INNER, help="dispatches per timed submission")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--out", default=None, help="directory for wgpu_suite.json / .md")
    ap.add_argument("--heatmap", action="store_true", help="time the heatmap aggregations instead")
    ap.add_argument("--calls", action="store_true",
                    help="time the public calls on NumPy input against cuda (or the cpu backend)")
    ap.add_argument("--log2", type=int, default=None, help="--calls: 2**N values for every call")
    ap.add_argument("--log2n", type=int, default=None,
                    help="--heatmap: 2**N points (default 26; 22 on CPU adapters)")
    ap.add_argument("--cells", type=int, default=1024, help="--heatmap: cells along each axis")
    ap.add_argument("--shares", default="0,0.9,1",
                    help="--heatmap: shares of the points in one cell, comma-separated")
    args = ap.parse_args()
    INNER = args.inner
    g = D.gpu()
    if args.calls:
        return calls_main(args, g, datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC"))
    if args.heatmap:
        return heatmap_main(args, g, datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC"))
    cpu_adapter = g.kind == "cpu"
    mib = args.mib or (64 if cpu_adapter else 1024)
    nbytes = mib << 20
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"wgpu adapter: {g.name}; {date}; {mib} MiB uint8, 256 bins; "
          f"binding {g.limits['max-storage-buffer-binding-size']} B, "
          f"workgroup storage {g.limits['max-compute-workgroup-storage-size']} B")
    cuda = cuda_runner()
    rule = histogram_rule(np.zeros(1, np.uint8), 256, (0, 256))
    atomic = [dict(mode="atomic", wg=wg, copies=c, unroll=u, groups=gr)
              for wg, c, u, gr in itertools.product(
                  (256, 512, 1024), (8, 32), (1, 2, 4),
                  # whole waves on an H200 (132 SMs x 7 or 8 resident workgroups), and more
                  (1056, 2112, 4224) if not cpu_adapter else (4, 16))
              if 256 * c * 4 <= g.limits["max-compute-workgroup-storage-size"]
              and wg <= g.limits["max-compute-invocations-per-workgroup"]]
    private = [dict(mode="private", wg=wg, unroll=u, groups=gr)
               for wg, u, gr in itertools.product(
                   (32, 64) if not cpu_adapter else (16, 32), (1, 2, 4),
                   (924, 1848, 3696) if not cpu_adapter else (4, 16))
               if (128 * wg + 256) * 4 <= g.limits["max-compute-workgroup-storage-size"]]
    space = atomic + private
    rows, sweep = [], []
    uniform = None
    for name, host in datasets(nbytes):
        uniform = host if uniform is None else uniform
        want = reference(host)
        n16 = nbytes // 16
        buf = g.with_data(host)
        out = g.storage(256 * 8)
        check(g, buf, n16, want)
        kernel = median_ms(g, lambda enc: H.launch_u8(g, buf, n16, out, encoder=enc), args.reps)

        def call():
            return fold_values(H.count_u8_resident(buf, n16), value_table(rule, np.uint8), 256)

        def call_before():  # the call of 2026-11-30: new counters, two submissions, read_buffer
            o = g.storage(256 * 8)
            H.launch_u8(g, buf, n16, o)
            raw = np.frombuffer(g.device.queue.read_buffer(o), np.uint8)
            return fold_values(D.words64(raw), value_table(rule, np.uint8), 256)

        tiny = g.storage(16)

        kept = g.storage(256 * 8)

        def record():  # the host's part of a call: recording and finishing, no submission
            enc = g.device.create_command_encoder()
            enc.clear_buffer(kept, 0, kept.size)
            H.launch_u8(g, buf, n16, kept, encoder=enc)
            enc.finish()

        parts = {"call": call, "call_before": call_before,
                 # one submission and read-back with no work: the fixed cost of a call
                 "roundtrip": lambda: g.read(tiny, 16, g.device.create_command_encoder()),
                 "record": record}
        assert np.array_equal(call(), want) and np.array_equal(call_before(), want)
        wall = {}

        def timed(key, fn):
            ts = []
            for _ in range(args.reps + 1):
                t0 = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t0) * 1e3)
            wall[key] = statistics.median(ts[1:])

        for key, fn in parts.items():
            timed(key, fn)
        g.cache_binds = False  # each call makes its uniform buffer and bind group
        timed("call_nocache", call)
        g.cache_binds = True
        spin = g.spin_s
        g.spin_s = 0.0 if spin else 0.002  # the other way of waiting for the read-back
        timed("call_poll", call)
        timed("roundtrip_poll", parts["roundtrip"])
        g.spin_s = spin
        call_ms = wall["call"]
        best = None
        if args.sweep:
            for cfg in space:
                check(g, buf, n16, want, **cfg)
                ms = median_ms(g, lambda enc: H.launch_u8(g, buf, n16, out, encoder=enc, **cfg),
                               max(3, args.reps // 3))
                sweep.append({"input": name, **cfg, "ms": ms, "GBps": nbytes / ms / 1e6})
                if best is None or ms < best[1]:
                    best = (cfg, ms)
        row = {"input": name, "wgpu_kernel_GBps": nbytes / kernel / 1e6,
               "wgpu_call_GBps": nbytes / call_ms / 1e6, "kernel_ms": kernel,
               **{f"{k}_ms": v for k, v in wall.items()}}
        if best:
            row["best_cfg"], row["best_GBps"] = best[0], nbytes / best[1] / 1e6
            cfg = best[0]
            assert np.array_equal(fold_values(H.count_u8_resident(buf, n16, **cfg),
                                              value_table(rule, np.uint8), 256), want)
            timed("call_best", lambda: H.count_u8_resident(buf, n16, **cfg))
            row["call_best_ms"] = wall["call_best"]
        buf = None  # free the resident copy
        if cuda is not None:
            try:
                ck, cc, counts = cuda[1](host, rule, args.reps)
            except Exception as exc:
                print(f"cuda backend failed ({type(exc).__name__}: {exc}); ratios against ANCHORS.md")
                cuda = None
        if cuda is not None:
            assert np.array_equal(counts, want), "cuda backend counts differ"
            row.update(cuda_kernel_GBps=nbytes / ck / 1e6, cuda_call_GBps=nbytes / cc / 1e6,
                       cuda_call_ms=cc)
            row["ratio_kernel"] = row["wgpu_kernel_GBps"] / row["cuda_kernel_GBps"]
            row["ratio_call"] = row["wgpu_call_GBps"] / row["cuda_call_GBps"]
        else:
            row["anchor_cuda_GBps"] = ANCHOR_CUDA[name]
            row["ratio_vs_anchor"] = row["wgpu_kernel_GBps"] / ANCHOR_CUDA[name]
        rows.append(row)
        print(json.dumps(row))
        del host
    # host input, upload included (what a NumPy caller sees)
    W.histogram(uniform, rule)
    t0 = time.perf_counter()
    W.histogram(uniform, rule)
    upload_GBps = nbytes / (time.perf_counter() - t0) / 1e9

    lines = [f"# wgpu_suite: {g.name}", "", f"{date}; {mib} MiB uint8, 256 bins; "
             f"tuning {tuning.U8[g.kind]}, workgroups={g.workgroups}", ""]
    if cuda is not None:
        lines += [f"cuda backend in the same process: {cuda[0]}", "",
                  "| input | wgpu kernel GB/s | wgpu call GB/s | cuda kernel GB/s | cuda call GB/s "
                  "| ratio kernel | ratio call | best swept GB/s |", "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['input']} | {r['wgpu_kernel_GBps']:.4g} | {r['wgpu_call_GBps']:.4g} | "
                         f"{r['cuda_kernel_GBps']:.4g} | {r['cuda_call_GBps']:.4g} | "
                         f"{r['ratio_kernel']:.2f} | {r['ratio_call']:.2f} | "
                         f"{r.get('best_GBps', float('nan')):.4g} |")
    else:
        lines += ["cuda backend not runnable here: ratio against ANCHORS.md's CUDA figures", "",
                  "| input | wgpu kernel GB/s | wgpu call GB/s | ANCHORS CUDA GB/s | ratio | best swept GB/s |",
                  "|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['input']} | {r['wgpu_kernel_GBps']:.4g} | {r['wgpu_call_GBps']:.4g} | "
                         f"{r['anchor_cuda_GBps']:.4g} | {r['ratio_vs_anchor']:.2f} | "
                         f"{r.get('best_GBps', float('nan')):.4g} |")
    other = 0.0 if g.spin_s else 0.002
    lines += ["", "Per call, ms (median wall clock): kernel = one dispatch of the kernel column; "
              "call = one submission (zero counters, count, copy out) and one map of a reused "
              "staging buffer, bind group kept; no cache = the call making its bind group; poll = "
              f"the call waiting the other way (spin_s={other}, default {g.spin_s}); best = the call "
              "with the best swept config; before = new counters, a submission, then "
              "queue.read_buffer (a second submission and a new staging buffer); record = the "
              "host's recording (and finish) alone; roundtrip = one empty submission and "
              "read-back (poll: the other wait).", "",
              "| input | kernel | call | no cache | poll | best | before | record | roundtrip | "
              "roundtrip poll | cuda call | call / cuda call |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    nan = float("nan")
    for r in rows:
        lines.append(f"| {r['input']} | {r['kernel_ms']:.3f} | {r['call_ms']:.3f} | "
                     f"{r['call_nocache_ms']:.3f} | {r['call_poll_ms']:.3f} | "
                     f"{r.get('call_best_ms', nan):.3f} | "
                     f"{r['call_before_ms']:.3f} | {r['record_ms']:.3f} | {r['roundtrip_ms']:.3f} | "
                     f"{r['roundtrip_poll_ms']:.3f} | {r.get('cuda_call_ms', nan):.3f} | "
                     f"{r.get('cuda_call_ms', nan) / r['call_ms']:.2f} |")
    lines += ["", f"NumPy input, upload included (uniform): {upload_GBps:.4g} GB/s"]
    for r in rows:
        if "best_cfg" in r:
            lines.append(f"best swept config ({r['input']}): {r['best_cfg']}")
    if sweep:
        lines += ["", "sweep, fastest five per input (GB/s):"]
        for name in ("uniform", "narrow", "constant"):
            top = sorted((x for x in sweep if x["input"] == name), key=lambda x: x["ms"])[:5]
            lines += [f"  {name}: " + "; ".join(
                f"{x['mode']} wg={x['wg']} copies={x.get('copies', '-')} unroll={x['unroll']} "
                f"groups={x['groups']}: "
                f"{x['GBps']:.4g}" for x in top)]
        mean = {}
        for x in sweep:
            k = (x["mode"], x["wg"], x.get("copies"), x["unroll"], x["groups"])
            mean[k] = mean.get(k, 0.0) + x["ms"]
        k = min(mean, key=mean.get)
        lines.append(f"best over all three inputs (least total time): {k[0]} wg={k[1]} "
                     f"copies={k[2]} unroll={k[3]} groups={k[4]}")
    text = "\n".join(lines)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "wgpu_suite.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(args.out, "wgpu_suite.json"), "w") as f:
            json.dump({"device": g.name, "date": date, "mib": mib, "rows": rows, "sweep": sweep}, f,
                      indent=1, default=str)
    print()
    print(text)


if __name__ == "__main__":
    main()
