"""GPU 2-D binning (G4) and fused luma histogram (G6): hotbin's kernels against the anchors.

    PYTHONPATH=src python3 benchmarks/gpu_spatial.py [--out DIR] [--smoke [STRATEGY ...]]
        [--points LOG2] [--skip-luma] [--skip-weights] [--api-only]

2-D: 2^28 float32 points into a 1024 x 1024 heatmap, 0/50/90/100 % of them in one
hot cell (the rest uniform; positions shuffled; never constant data): hotbin
through the public call (``hotbin.heatmap(x, y, width=1024, height=1024, x_range,
y_range, backend="cuda")``: "api") and the backend primitive (``spatial.histogram2d``:
"hotbin"), each one call from an idle device (CUDA events around the call: the host's
work before the first launch is inside) and 10 calls queued back to back ("queued": the
device's own time per call); the tiled strategy with its other scatter (scatter_codes,
"block") and the "direct" strategy; against a plain global-atomic kernel and a
warp-aggregated one (benchmarks/anchors/anchor_spatial.cu, u32 grid, float-multiply cells)
and cupy.histogram2d (2^26 points). G points/s, ratios to the anchors in the same
run, and the floor: 8 bytes per point over a measured read bandwidth. ``--api-only``
times the public call and the primitive alone (any version of the package: the
same rows before a change).

Luma: 2^29 RGBA8 pixels (2 GiB): hotbin's fused kernel against CuPy (fused luma
kernel, then bincount) and torch (luma, then torch.bincount), GB/s of input.

Every timed result is checked: hotbin's strategies agree bit for bit, totals
match the points kept, luma histograms equal the baselines'.
``--smoke`` runs small cases of every kernel (for compute-sanitizer) and exits; with
strategy names (private, tiled, tiled-block, direct), those alone.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import numpy as np
from cuda_timing import timeit

import cupy as cp

import hotbin
from hotbin.core import binning, fixedpoint, reductions
from hotbin.backend.cuda import luma as cl, runtime, spatial as cs, tuning


HERE = Path(__file__).resolve().parent




KERNELS = ("sample_tiles", "plan_tiles", "scatter_codes", "scatter_warps", "fill_offsets", "accumulate_tiles",
           "fold_words", "private_grid", "direct_grid")
#: the public call of the G4 row (heatmap cells over [0, 1) on both axes)
API_KW = dict(width=1024, height=1024, x_range=(0.0, 1.0), y_range=(0.0, 1.0), backend="cuda")


def profile(fn):
    """Milliseconds per kernel of one ``fn()`` (events around each launch of cuda.spatial)."""
    rec, orig = [], cs.launch

    def timed(kern, grid, block, args, smem=0):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        orig(kern, grid, block, args, smem)
        b.record()
        name = getattr(kern, "name", "")  # the lowered (mangled) name holds the kernel's
        rec.append((next((k for k in KERNELS if k in name), name), a, b))

    fn()
    cs.launch = timed
    try:
        fn()
    finally:
        cs.launch = orig
    cp.cuda.Device().synchronize()
    out = {}
    for name, a, b in rec:
        out[name] = out.get(name, 0.0) + cp.cuda.get_elapsed_time(a, b)
    return out


def anchors():
    mod = cp.RawModule(code=(HERE / "anchors" / "anchor_spatial.cu").read_text(), options=("-std=c++17",))
    return {k: mod.get_function(k) for k in ("global_atomic", "warp_aggregated", "read_only")}


def points(n, hot, rng_seed=7):
    """x, y float32 uniform in [0, 1); a share ``hot`` of them inside one cell, shuffled."""
    g = cp.random.default_rng(rng_seed)
    x = g.random(n, dtype=cp.float32)
    y = g.random(n, dtype=cp.float32)
    if hot:
        m = g.random(n, dtype=cp.float32) < hot
        k = int(m.sum())
        # inside cell (437, 611) of 1024: jitter within the cell, never constant
        x[m] = (437.25 + 0.5 * g.random(k, dtype=cp.float32)) / 1024
        y[m] = (611.25 + 0.5 * g.random(k, dtype=cp.float32)) / 1024
        del m
    return x, y


def run_anchor(kern, x, y, grid, sms):
    grid.fill(0)
    n = x.size
    kern((sms * 8,), (256,), (x, y, np.uint64(n), np.float32(0), np.float32(1024), np.float32(0),
                              np.float32(1024), np.uint32(1024), np.uint32(1024), grid))


def bench_calls(xs, ys, rx, ry, res, ours):
    """The public call and the primitive: one call from idle, and queued (G points/s)."""
    n = xs.size
    api = hotbin.heatmap(xs, ys, **API_KW)
    assert bool(cp.all(api.counts == ours.T)) and api.dropped == n - int(ours.sum())
    del api
    res["api"] = n / timeit(lambda: hotbin.heatmap(xs, ys, **API_KW)) / 1e6
    res["api queued"] = n / timeit(lambda: hotbin.heatmap(xs, ys, **API_KW), reps=5, calls=10) / 1e6
    res["hotbin"] = n / timeit(lambda: cs.histogram2d(xs, ys, rx, ry)) / 1e6
    res["hotbin queued"] = n / timeit(lambda: cs.histogram2d(xs, ys, rx, ry), reps=5, calls=10) / 1e6


def bench_api_only(log2n, results, rows):
    """The G4 row through the public call and the primitive alone (any version of hotbin)."""
    n = 1 << log2n
    rx = binning.cell_rule(1024, 0.0, 1.0, "width")
    ry = binning.cell_rule(1024, 0.0, 1.0, "height")
    for hot in (0.0, 0.5, 0.9, 1.0):
        xs, ys = points(n, hot)
        ours, kept = cs.histogram2d(xs, ys, rx, ry)
        assert kept == n == int(ours.sum())
        res = {}
        bench_calls(xs, ys, rx, ry, res, ours)
        results[f"hot{int(hot * 100)}"] = res
        print(f"hot {hot:4.0%}  " + "  ".join(f"{k}={v:.1f}" for k, v in res.items()), flush=True)
        rows.append((hot, res))
        del xs, ys, ours


def bench_spatial(log2n, results, rows, weights=True):
    n = 1 << log2n
    rx = binning.cell_rule(1024, 0.0, 1.0, "width")
    ry = binning.cell_rule(1024, 0.0, 1.0, "height")
    an = anchors()
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid32 = cp.zeros(1024 * 1024, cp.uint32)
    sink = cp.zeros(1, cp.uint32)
    # read floor over the same 2 x n float32
    x, y = points(n, 0.0)
    buf = cp.concatenate([x, y]).view(cp.uint8)
    n16 = buf.size // 16
    t = timeit(lambda: an["read_only"]((sms * 8,), (512,), (buf, np.uint64(n16), sink)), reps=9)
    read_gbs = buf.size / t / 1e6
    del buf
    results["read_GBps"] = read_gbs
    floor = read_gbs * 1e9 / 8 / 1e9  # G points/s at 8 B per point
    print(f"device read bandwidth {read_gbs:.0f} GB/s -> floor {floor:.0f} G points/s", flush=True)
    info = runtime.device_info(cp.cuda.Device().id)
    plan = tuning.spatial_plan(n, 1024 * 1024, "count", info, tuning.current())
    for hot in (0.0, 0.5, 0.9, 1.0):
        if hot:
            x, y = points(n, hot)
        xs, ys = x, y
        res = {}
        ours, kept = cs.histogram2d(xs, ys, rx, ry)
        assert kept == n == int(ours.sum())
        bench_calls(xs, ys, rx, ry, res, ours)
        prof = profile(lambda: cs.histogram2d(xs, ys, rx, ry))
        results[f"passes_ms_hot{int(hot * 100)}"] = prof
        print("   passes (ms): " + "  ".join(f"{k}={v:.3f}" for k, v in prof.items()), flush=True)
        with tuning.forced(scatter="block"):  # the other scatter, scatter_codes
            other = cs.histogram2d(xs, ys, rx, ry)[0]
            assert bool(cp.all(other == ours))
            res["hotbin scatter=block"] = n / timeit(lambda: cs.histogram2d(xs, ys, rx, ry), reps=5) / 1e6
            prof = profile(lambda: cs.histogram2d(xs, ys, rx, ry))
            results[f"passes_ms_hot{int(hot * 100)}_block"] = prof
            print("   scatter=block (ms): " + "  ".join(f"{k}={v:.3f}" for k, v in prof.items()), flush=True)
            del other
        with tuning.forced(strategy="direct"):
            direct, kept_d = cs.histogram2d(xs, ys, rx, ry)
            res["hotbin direct"] = n / timeit(lambda: cs.histogram2d(xs, ys, rx, ry), reps=3, warm=1) / 1e6
        assert kept == kept_d == n, (kept, kept_d, n)
        assert bool(cp.all(ours == direct))
        del direct
        for name in ("global_atomic", "warp_aggregated"):
            res[name] = n / timeit(lambda: run_anchor(an[name], xs, ys, grid32, sms), reps=3, warm=1) / 1e6
            assert int(grid32.sum()) == n
        if hot in (0.0, 1.0):
            m = 1 << 26
            xc, yc = xs[:m], ys[:m]
            h = cp.histogram2d(xc, yc, bins=1024, range=[[0, 1], [0, 1]])[0]
            assert int(h.sum()) == m
            res["cupy.histogram2d (2^26)"] = m / timeit(
                lambda: cp.histogram2d(xc, yc, bins=1024, range=[[0, 1], [0, 1]]), reps=3, warm=1) / 1e6
        if weights and hot in (0.0, 1.0):
            w = cp.random.default_rng(3).standard_normal(n, dtype=cp.float64)
            f64 = reductions.SUM_F64
            res["hotbin float64 weights"] = n / timeit(lambda: cs.histogram2d(xs, ys, rx, ry, w, f64), reps=3) / 1e6
            s = reductions.fixed(fixedpoint.scale_for(float(cp.abs(w).max()), n))
            a1 = cs.histogram2d(xs, ys, rx, ry, w, s)[0]
            res["hotbin fixed-point words"] = n / timeit(lambda: cs.histogram2d(xs, ys, rx, ry, w, s),
                                                         reps=3) / 1e6
            assert bool(cp.all(a1 == cs.histogram2d(xs, ys, rx, ry, w, s)[0]))
            del w, a1
        results[f"hot{int(hot * 100)}"] = res
        line = (f"hot {hot:4.0%}  plan={plan}  " + "  ".join(f"{k}={v:.1f}" for k, v in res.items()))
        print(line, flush=True)
        rows.append((hot, res))
    results["floor_Gpts"] = floor
    del x, y


@cp.fuse
def _luma_level(r, g, b):
    return ((r.astype(cp.uint32) * 2126 + g.astype(cp.uint32) * 7152 + b.astype(cp.uint32) * 722)
            // 10000).astype(cp.uint8)


def luma_cupy(img):
    lv = _luma_level(img[..., 0], img[..., 1], img[..., 2])
    return cp.bincount(lv.ravel(), minlength=256)


def luma_torch(t):
    import torch
    r, g, b = t[..., 0].to(torch.int32), t[..., 1].to(torch.int32), t[..., 2].to(torch.int32)
    lv = (2126 * r + 7152 * g + 722 * b) // 10000
    return torch.bincount(lv.flatten(), minlength=256)


def bench_luma(results, lrows):
    npx = 1 << 29
    g = cp.random.default_rng(11)
    shapes = {"one image 16384x32768": (1, 16384, 32768, 4), "batch 512 x 1024x1024": (512, 1024, 1024, 4)}
    for dist in ("uniform", "narrow", "dark"):
        raw = g.integers(0, 256, npx * 4, dtype=cp.int32).astype(cp.uint8)
        if dist == "narrow":
            raw = (raw // 16 + 100).astype(cp.uint8)
        elif dist == "dark":
            raw = (raw // 128).astype(cp.uint8)  # 0/1 noise: a nearly constant dark photo
        for label, shp in shapes.items():
            img = raw.reshape(shp)
            ours = cl.luma_histogram(img)
            res = {"hotbin": img.nbytes / timeit(lambda: cl.luma_histogram(img)) / 1e6}
            assert int(ours.sum()) == npx
            if dist == "uniform" and label.startswith("one"):
                ref = luma_cupy(img[0])
                assert bool(cp.all(ours[0] == ref))
                res["cupy fuse+bincount"] = img.nbytes / timeit(lambda: luma_cupy(img[0]), reps=3) / 1e6
                try:
                    import torch
                    t = torch.as_tensor(img[0], device="cuda")
                    tr = luma_torch(t)
                    assert np.array_equal(tr.cpu().numpy(), ref.get())
                    res["torch luma+bincount"] = img.nbytes / timeit(lambda: luma_torch(t), reps=3) / 1e6
                    del t, tr
                except ImportError:
                    pass
            results[f"luma {dist} {label}"] = res
            print(f"luma {dist:8s} {label:24s} " + "  ".join(f"{k}={v:.0f} GB/s" for k, v in res.items()),
                  flush=True)
            lrows.append((dist, label, res))
        del raw


SMOKE = {"private": ("private", None, True), "tiled": ("tiled", "warp", True),
         "tiled-block": ("tiled", "block", True), "tiled-block-noprefetch": ("tiled", "block", False),
         "direct": ("direct", None, True)}


def smoke(which=tuple(SMOKE)):
    """Small cases of every kernel and strategy (for compute-sanitizer); ``which``: names of
    :data:`SMOKE`."""
    cp.cuda.set_allocator(None)  # plain allocations: memcheck sees every buffer's bounds
    rng = np.random.default_rng(5)
    n = 40_003
    x = rng.uniform(-0.1, 1.1, n).astype(np.float32)
    y = rng.uniform(-0.1, 1.1, n)
    x[::5] = 0.5
    w = rng.normal(size=n)
    s = fixedpoint.scale_for(float(np.abs(w).max()), n)
    for shape in ((64, 48), (300, 250)):
        rx, ry = binning.cell_rule(shape[0], 0, 1, "w"), binning.cell_rule(shape[1], 0, 1, "h")
        for strat, scatter, pre in (SMOKE[k] for k in which):
            with tuning.forced(strategy=strat, scatter=scatter, prefetch=pre):
                xd, yd = cp.asarray(x), cp.asarray(y)
                c, k = cs.histogram2d(xd, yd, rx, ry)
                f, _ = cs.histogram2d(xd, yd, rx, ry, cp.asarray(w), reductions.SUM_F64)
                i, _ = cs.histogram2d(xd, yd, rx, ry, cp.asarray((w * 100).astype(np.int64)), reductions.SUM_I64)
                q, _ = cs.histogram2d(xd, yd, rx, ry, cp.asarray(w), reductions.fixed(s))
            print(shape, strat, k, int(c.sum()), float(f.sum()), int(i.sum()),
                  float(fixedpoint.combine(q.get(), s).sum()), flush=True)
    x32 = np.concatenate([x, rng.uniform(0, 1, 3 * 512 + 5).astype(np.float32)])
    y32 = np.concatenate([y.astype(np.float32), rng.uniform(0, 1, 3 * 512 + 5).astype(np.float32)])
    rx, ry = binning.cell_rule(1024, 0, 1, "w"), binning.cell_rule(1024, 0, 1, "h")  # 32 tiles
    for strat, scatter, pre in (SMOKE[k] for k in which):
        with tuning.forced(strategy=strat, scatter=scatter, prefetch=pre):
            c, k = cs.histogram2d(cp.asarray(x32), cp.asarray(y32), rx, ry)
        print((1024, 1024), strat, scatter, k, int(c.sum()), flush=True)
    for c in (3, 4):
        img = rng.integers(0, 256, (3, 33, 65, c), dtype=np.uint8)
        print("luma", c, cl.luma_histogram(cp.asarray(img)).sum(axis=1).tolist(), flush=True)
    cp.cuda.Device().synchronize()
    print("smoke ok")


def write_md(path, results, rows, lrows, dev, date):
    floor = results["floor_Gpts"]
    lines = [f"# GPU 2-D binning and luma histogram — {dev}, {date}", "",
             "`PYTHONPATH=src python3 benchmarks/gpu_spatial.py` (medians of CUDA-event timings;"
             " anchors from `benchmarks/anchors/anchor_spatial.cu` in the same run).", "",
             f"Read bandwidth (read-only kernel over the 2 GiB of x, y): {results['read_GBps']:.0f} GB/s"
             f" → floor {floor:.0f} G points/s at 8 B/point.", "",
             "## 2-D: 2^28 float32 points into 1024 × 1024 (G points/s)", ""]
    cols = sorted({k for _, r in rows for k in r}, key=lambda k: list(rows[0][1]).index(k)
                  if k in rows[0][1] else 99)
    lines.append("| hot share | " + " | ".join(cols) + " | api / global atomics | api / warp-aggr. |"
                 " api / floor |")
    lines.append("|---" * (len(cols) + 4) + "|")
    for hot, r in rows:
        cells = [f"{r[c]:.1f}" if c in r else "—" for c in cols]
        lines.append(f"| {hot:.0%} | " + " | ".join(cells) + f" | {r['api'] / r['global_atomic']:.1f}× |"
                     f" {r['api'] / r['warp_aggregated']:.1f}× | {r['api'] / floor:.0%} |")
    lines += ["", "Time per kernel of one hotbin call (ms, CUDA events around each launch):", ""]
    for k, v in results.items():
        if k.startswith("passes_ms_"):
            lines.append(f"- {k[10:]}: " + ", ".join(f"{a} {b:.3f}" for a, b in v.items()))
    lines += ["", "## Luma histogram: 2^29 RGBA8 pixels (GB/s of input)", "",
              "| data | shape | hotbin | cupy fuse+bincount | torch luma+bincount |", "|---|---|---|---|---|"]
    for dist, label, r in lrows:
        lines.append(f"| {dist} | {label} | {r['hotbin']:.0f} | "
                     + " | ".join(f"{r[k]:.0f}" if k in r else "—"
                                  for k in ("cupy fuse+bincount", "torch luma+bincount")) + " |")
    Path(path).write_text("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--smoke", nargs="*", choices=tuple(SMOKE), default=None)
    ap.add_argument("--points", type=int, default=28)
    ap.add_argument("--skip-luma", action="store_true")
    ap.add_argument("--skip-weights", action="store_true")
    ap.add_argument("--api-only", action="store_true")
    a = ap.parse_args()
    if a.smoke is not None:
        smoke(tuple(a.smoke) or tuple(SMOKE))
        return
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    date = datetime.date.today().isoformat()
    print(dev, date, flush=True)
    results, rows, lrows = {"device": dev, "date": date}, [], []
    out = Path(a.out)
    if a.api_only:
        bench_api_only(a.points, results, rows)
        (out / "gpu_spatial_api.json").write_text(json.dumps(results, indent=1))
        return
    bench_spatial(a.points, results, rows, not a.skip_weights)
    cp.get_default_memory_pool().free_all_blocks()
    if not a.skip_luma:
        bench_luma(results, lrows)
    (out / "gpu_spatial.json").write_text(json.dumps(results, indent=1))
    write_md(out / "gpu-spatial-h200.md", results, rows, lrows, dev, date)  # the date is inside
    print((out / "gpu-spatial-h200.md").read_text())


if __name__ == "__main__":
    sys.exit(main())
