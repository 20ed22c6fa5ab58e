"""Batched histograms on the GPU: one histogram per row, ``hotbin.histogram(a, ..., axis=-1)``.

    PYTHONPATH=src python3 benchmarks/probes/gpu_batched.py [--out FILE] [--sweep]

Shapes from use: 512 rows of 1 MiB (a batch of images' bytes), 4096 rows of 64 KiB, 65536
rows of 4 KiB (short records), uint8 into 256 bins; and 4096 float32 rows of 16384 values
into 64 bins (the rule path). Data: uniform bytes (hashed counter) and a dark/narrow case.
Anchors in the same process: CuPy (``cupy.bincount`` of ``row * bins + value`` — one pass,
global atomics) and torch (``torch.bincount`` of the same offsets). Every result is checked
against the CuPy anchor. ``--sweep`` times the layouts of ``hotbin.backend.cuda.tuning.forced`` that decided
``ROWS_POLICY`` in backend/cuda.py. GB/s of input, medians of CUDA-event timings.
"""
from __future__ import annotations

import argparse
import datetime

import numpy as np
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from cuda_timing import timeit

import cupy as cp

import hotbin
from gpu_suite import hash_u32
from hotbin.backend import cuda as cb
from hotbin.backend.cuda import tuning

VARIANTS = [
    ("lanes 512 (one-shot policy)", {"layout": "lanes", "block": 512, "unroll": 4}),
    ("lanes 256", {"layout": "lanes", "block": 256, "unroll": 2}),
    ("copies x1 256", {"layout": "copies", "copies": 1, "block": 256, "unroll": 2}),
    ("copies x2 256", {"layout": "copies", "copies": 2, "block": 256, "unroll": 2}),
    ("copies x4 256", {"layout": "copies", "copies": 4, "block": 256, "unroll": 2}),
    ("copies x2 128", {"layout": "copies", "copies": 2, "block": 128, "unroll": 2}),
    ("copies x4 512", {"layout": "copies", "copies": 4, "block": 512, "unroll": 2}),
]


def hashed(n, seed=1):
    """n pseudo-random bytes (gpu_suite's hashed counter)."""
    return hash_u32(n // 4, seed).view(cp.uint8)


def cases():
    for rows, n in [(512, 1 << 20), (4096, 1 << 16), (65536, 1 << 12)]:
        u = hashed(rows * n).reshape(rows, n)
        yield f"u8 {rows}x{n // 1024}K", "uniform", u, 256, (0, 256)
        yield f"u8 {rows}x{n // 1024}K", "dark", (u % np.uint8(13)), 256, (0, 256)
    f = (hashed(4096 * 16384 * 4).view(cp.uint32) >> np.uint32(8)).astype(cp.float32) / np.float32(1 << 24)
    yield "f32 4096x16K", "uniform", f.reshape(4096, 16384), 64, (0.0, 1.0)


def anchor_offsets(a, bins, rng):
    """Bin codes offset by row (row * bins + bin), -1 for values outside: what the anchors count."""
    rows = a.shape[0]
    if a.dtype == cp.uint8 and rng == (0, 256) and bins == 256:
        code = a.astype(cp.int64)
    else:
        code = cp.floor((a.astype(cp.float64) - rng[0]) * (bins / (rng[1] - rng[0]))).astype(cp.int64)
        code = cp.minimum(code, bins - 1)
    return (code + cp.arange(rows, dtype=cp.int64)[:, None] * bins).reshape(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--sweep", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    lines = [f"# Batched GPU histograms — {cb.devices()[0]}, {datetime.date.today().isoformat()}", "",
             "GB/s of input (median of CUDA-event timings); every result checked against the CuPy anchor.", "",
             "| shape | data | hotbin | cupy bincount of offsets | torch bincount of offsets | vs cupy | vs torch |",
             "|---|---|---|---|---|---|---|"]
    sweep_lines = []
    for shape, data, a, bins, rng in cases():
        rows = a.shape[0]
        off = anchor_offsets(a, bins, rng)
        ref = cp.bincount(off, minlength=rows * bins).reshape(rows, bins)
        got, _ = hotbin.histogram(a, bins, rng, axis=-1)
        assert cp.array_equal(got, ref), f"{shape} {data}: wrong counts"
        gb = a.nbytes / 1e6
        t = timeit(lambda: hotbin.histogram(a, bins, rng, axis=-1), reps=15)
        tc = timeit(lambda: cp.bincount(anchor_offsets(a, bins, rng), minlength=rows * bins), reps=7)
        tt = None
        if torch is not None:
            ta = torch.as_tensor(a, device="cuda")

            def tor():
                code = ta.to(torch.int64) if bins == 256 else torch.clamp(
                    ((ta.to(torch.float64) - rng[0]) * (bins / (rng[1] - rng[0]))).floor().to(torch.int64),
                    max=bins - 1)
                return torch.bincount((code + torch.arange(rows, device="cuda")[:, None] * bins).reshape(-1),
                                      minlength=rows * bins)
            tt = timeit(tor, reps=7)
        lines.append(f"| {shape} | {data} | {gb / t:.0f} | {gb / tc:.0f} | {gb / tt:.0f} | {tc / t:.1f}× | "
                     f"{tt / t:.1f}× |" if tt else f"| {shape} | {data} | {gb / t:.0f} | {gb / tc:.0f} | — | "
                     f"{tc / t:.1f}× | — |")
        print(lines[-1], flush=True)
        if args.sweep:
            res = []
            for name, ov in VARIANTS:
                with tuning.forced(**ov):
                    g2, _ = hotbin.histogram(a, bins, rng, axis=-1)
                    assert cp.array_equal(g2, ref), f"{name}: wrong counts"
                    res.append(f"{name} {gb / timeit(lambda: hotbin.histogram(a, bins, rng, axis=-1), reps=9):.0f}")
            sweep_lines.append(f"- {shape} {data}: " + ", ".join(res))
            print(sweep_lines[-1], flush=True)
    if sweep_lines:
        lines += ["", "Layouts (GB/s, `cuda.tuning.forced`):", ""] + sweep_lines
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
