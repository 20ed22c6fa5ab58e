"""GPU heatmap aggregations (issue #16): mean, max and counts by category, hot cells included.

    PYTHONPATH=src python3 benchmarks/gpu_agg.py [--out DIR] [--points LOG2] [--shares 0,0.9,1]

2^28 float32 points into 1024 x 1024 cells with float32 weights, 0 / 90 / 100 % of the
points in one hot cell (the rest uniform; positions jittered, never constant data):
``agg="mean"`` and ``agg="max"`` through ``hotbin.heatmap(..., backend="cuda")`` on CuPy
arrays (host work included) and the kernels alone (``backend.cuda.spatial.histogram2d``),
and ``agg="count"`` by 8 categories (int8 codes, as pandas stores them). G points/s; the
floor is the input's bytes per point over the read bandwidth measured in the same run
(benchmarks/anchors/anchor_spatial.cu ``read_only``); ratios: kernel / floor, hot / uniform,
API / kernel. Targets (issue #16): mean and max >= 50 G points/s at every hot share,
count by 8 categories >= 40.

Every case is checked: on its first 2^22 points against a NumPy oracle computed cell by
cell (counts and extremes exactly, means to 1e-9), and in full (the kernels' partial
against the API's values, every point with a weight counted).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
from pathlib import Path

import numpy as np
from cuda_timing import timeit
from gpu_spatial import profile

import cupy as cp

import hotbin
from hotbin.core import binning, reductions
from hotbin.backend.cuda import runtime, spatial as cs, tuning

HERE = Path(__file__).resolve().parent
SIDE = 1024
KW = dict(width=SIDE, height=SIDE, x_range=(0.0, 1.0), y_range=(0.0, 1.0), backend="cuda")
NCAT = 8
CHECK = 1 << 22  # points checked against the NumPy oracle
TARGET = {"mean": 50.0, "max": 50.0, "count by 8": 40.0}


def data(n, hot, seed=7):
    """x, y, w float32 and int8 category codes; a share ``hot`` of the points in one cell."""
    g = cp.random.default_rng(seed)
    x = g.random(n, dtype=cp.float32)
    y = g.random(n, dtype=cp.float32)
    if hot:
        m = g.random(n, dtype=cp.float32) < hot
        k = int(m.sum())
        x[m] = (437.25 + 0.5 * g.random(k, dtype=cp.float32)) / SIDE
        y[m] = (611.25 + 0.5 * g.random(k, dtype=cp.float32)) / SIDE
        del m
    w = g.random(n, dtype=cp.float32) * 200 - 50
    codes = (g.random(n, dtype=cp.float32) * NCAT).astype(cp.int8)
    return x, y, w, codes


def read_bandwidth(x, y):
    """GB/s of a read-only kernel over x and y (the floor's bandwidth)."""
    mod = cp.RawModule(code=(HERE / "anchors" / "anchor_spatial.cu").read_text(), options=("-std=c++17",))
    kern = mod.get_function("read_only")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    buf = cp.concatenate([x, y]).view(cp.uint8)
    sink = cp.zeros(1, cp.uint32)
    t = timeit(lambda: kern((sms * 8,), (512,), (buf, np.uint64(buf.size // 16), sink)), reps=9)
    return buf.size / t / 1e6


def oracle(x, y, w, agg, codes=None):
    """The cells' values by NumPy alone: cells by searchsorted on linspace edges."""
    e = np.linspace(0.0, 1.0, SIDE + 1)
    ix = np.searchsorted(e, x, side="right") - 1
    iy = np.searchsorted(e, y, side="right") - 1
    ok = (ix >= 0) & (ix < SIDE) & (iy >= 0) & (iy < SIDE)
    cell = iy * SIDE + ix
    if codes is not None:
        ok &= (codes >= 0) & (codes < NCAT)
        return np.bincount(codes[ok].astype(np.int64) * SIDE * SIDE + cell[ok],
                           minlength=NCAT * SIDE * SIDE).reshape(NCAT, SIDE, SIDE)
    ok &= ~np.isnan(w)
    c, v = cell[ok], w[ok].astype(np.float64)
    n = np.bincount(c, minlength=SIDE * SIDE)
    if agg == "max":
        r = np.full(SIDE * SIDE, -np.inf)
        np.maximum.at(r, c, v)
    else:
        r = np.bincount(c, v, minlength=SIDE * SIDE) / np.maximum(n, 1)
    return np.where(n > 0, r, np.nan).reshape(SIDE, SIDE)


def api(case, x, y, w, codes):
    if case == "count by 8":
        return hotbin.heatmap(x, y, agg="count", by=codes, **KW)
    return hotbin.heatmap(x, y, w, agg=case, **KW)


def kernel(case, x, y, w, codes, rx, ry):
    """The backend's kernels alone: the partial of one pass (heatmap bins (y, x))."""
    if case == "count by 8":
        return cs.histogram2d(y, x, ry, rx, None, reductions.COUNT, by=(codes, NCAT))
    return cs.histogram2d(y, x, ry, rx, w, reductions.MEAN if case == "mean" else reductions.MAX)


def check(case, x, y, w, codes, rx, ry):
    """The first CHECK points against the NumPy oracle; all of them, kernels against the API."""
    m = min(CHECK, x.size)
    sub = api(case, x[:m], y[:m], w[:m], codes[:m])
    want = oracle(*(cp.asnumpy(a[:m]) for a in (x, y, w)), case, cp.asnumpy(codes[:m]) if "by" in case else None)
    got = cp.asnumpy(sub.values)
    if case == "mean":
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    else:
        np.testing.assert_array_equal(got, want)
    full = api(case, x, y, w, codes)
    part, kept = kernel(case, x, y, w, codes, rx, ry)
    if case == "count by 8":
        assert bool(cp.all(part[:NCAT] == full.values)) and int(part.sum()) == kept == x.size
    else:
        assert bool(cp.all(part[1] == full.counts)) and kept == x.size == int(full.counts.sum())
        if case == "max":
            assert bool(cp.all((part[0] == full.values) | (part[1] == 0)))
            assert float(cp.nanmax(full.values)) == float(w.max())
        else:
            assert bool(cp.allclose(part[0] / cp.maximum(part[1], 1), cp.nan_to_num(full.values), rtol=1e-9))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--points", type=int, default=28, help="log2 of the points")
    ap.add_argument("--shares", default="0,0.9,1", help="shares of the points in the hot cell (0 first: "
                    "the ratios' reference)")
    args = ap.parse_args()
    n = 1 << args.points
    rx = binning.cell_rule(SIDE, 0.0, 1.0, "width")
    ry = binning.cell_rule(SIDE, 0.0, 1.0, "height")
    dev = cp.cuda.Device()
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    results = {"device": name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
               "points": n, "cells": f"{SIDE}x{SIDE}", "cases": {}}
    bw = None
    rows = []
    for hot in (float(v) for v in args.shares.split(",")):
        x, y, w, codes = data(n, hot)
        if bw is None:
            bw = results["read_GBps"] = read_bandwidth(x, y)
            print(f"{name}: read bandwidth {bw:.0f} GB/s", flush=True)
        for case in ("mean", "max", "count by 8"):
            check(case, x, y, w, codes, rx, ry)
            t_api = timeit(lambda: api(case, x, y, w, codes), reps=10, warm=2)
            t_k = timeit(lambda: kernel(case, x, y, w, codes, rx, ry), reps=10, warm=2)
            passes = {("finish_values" if "finish_values" in k else k): v
                      for k, v in profile(lambda: kernel(case, x, y, w, codes, rx, ry)).items()}
            bpp = 8 + (1 if "by" in case else 4)  # x, y, then the codes or the weights
            info = runtime.device_info(dev.id)
            acc = "count" if "by" in case else case
            plan = tuning.spatial_plan(n, SIDE * SIDE * (NCAT + 1 if "by" in case else 1), acc, info,
                                       tuning.current())
            r = {"hot": hot, "case": case, "plan": plan, "api_Gpts": n / t_api / 1e6, "kernel_Gpts": n / t_k / 1e6,
                 "bytes_per_point": bpp, "floor_Gpts": bw / bpp, "passes_ms": passes, "api_ms": t_api,
                 "kernel_ms": t_k}
            results["cases"][f"{case} hot{int(hot * 100)}"] = r
            rows.append(r)
            print(f"  {case:10s} hot {hot:4.0%} {plan:7s} api {r['api_Gpts']:6.1f}  kernel {r['kernel_Gpts']:6.1f} "
                  "G pts/s  passes (ms): " + " ".join(f"{k}={v:.3f}" for k, v in passes.items()), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_agg.json").write_text(json.dumps(results, indent=1))
    table = markdown(rows)
    (out / "gpu_agg.md").write_text(table)
    print(table)


def markdown(rows) -> str:
    uniform = {r["case"]: r for r in rows if r["hot"] == 0.0}
    lines = ["| case | hot | strategy | API G pts/s | kernel G pts/s | API / kernel | floor G pts/s (B/pt) | "
             "kernel / floor | API hot / uniform | target | met |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        u = uniform[r["case"]]
        t = TARGET[r["case"]]
        lines.append(f"| {r['case']} | {r['hot']:.0%} | {r['plan']} | {r['api_Gpts']:.1f} | {r['kernel_Gpts']:.1f} | "
                     f"{r['api_Gpts'] / r['kernel_Gpts']:.2f} | {r['floor_Gpts']:.0f} ({r['bytes_per_point']}) | "
                     f"{r['kernel_Gpts'] / r['floor_Gpts']:.2f} | {r['api_Gpts'] / u['api_Gpts']:.2f} | >= {t:.0f} | "
                     f"{'yes' if r['api_Gpts'] >= t else 'NO'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
