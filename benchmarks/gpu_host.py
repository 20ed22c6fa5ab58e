"""Host (NumPy) data with ``backend="cuda"`` against the link floor (issue #17 item 3).

    PYTHONPATH=src python3 benchmarks/gpu_host.py [--out DIR] [--big LOG2]

Wall-clock milliseconds of whole calls (the result back on the host), medians after warm-up:

* ``api``: ``hotbin.histogram(x, 256, (0, 1), backend="cuda")`` on a 1 GiB float32 NumPy
  array (2^28 values), and ``hotbin.heatmap(x, y, width=1024, height=1024, ...)`` on two
  of them (2^28 points): host data through the pinned buffers of ``backend.cuda.stage``;
* ``floor``: ``cupy.asarray`` of a pinned copy of the same data, then the same call on
  the device array (the link floor: one DMA transfer from page-locked memory, then the
  kernels); ``link`` is the transfer alone (``ndarray.set`` of the pinned copy);
* ``pageable``: ``cupy.asarray(x)`` of the pageable array, then the call (what the
  backend did before);
* ``device``: the call on device data (no transfer).

``big``: a 4 GiB float32 host array, larger than a slab (``stage.STAGE_BYTES``), counted
region by region while the next region is copied. ``sweep``: 1-256 MiB host arrays through
the API (``pinned`` from ``stage.PIN_MIN_BYTES``, forced for every size in ``pump``), through
``cupy.asarray``, at the floor and on the cpu backend: where the pinned buffers pay, and
where the GPU beats the cpu backend on host data. Every answer is checked against the call on
the device array; inputs are random, never constant.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

import cupy as cp
import cupyx

import hotbin
from hotbin.backend.cuda import stage

MiB = 1 << 20
TARGET_MS = 25.0  # 1 GiB float32 histogram from the host (issue #17)
KW = dict(width=1024, height=1024, x_range=(-4.0, 4.0), y_range=(-4.0, 4.0), backend="cuda")


def wall(fn, reps, warm=2):
    """Median wall-clock milliseconds of ``fn()`` (which returns host data or syncs)."""
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def pinned(a):
    p = cupyx.empty_pinned(a.shape, a.dtype)
    p[...] = a
    return p


def hist(a):
    return hotbin.histogram(a, 256, (0, 1), backend="cuda")[0]


def heat(x, y):
    return hotbin.heatmap(x, y, **KW).counts


def host(v):
    return v.get() if isinstance(v, cp.ndarray) else v


def case(name, call, arrays, reps):
    """Times and checks one call on host ``arrays``: api, floor, link, pageable, device."""
    pins = [pinned(a) for a in arrays]
    devs = [cp.asarray(p) for p in pins]
    want = host(call(*devs))
    got = call(*arrays)
    assert isinstance(got, np.ndarray) and got.tobytes() == want.tobytes(), f"{name}: api != device"
    nbytes = sum(a.nbytes for a in arrays)
    row = {"case": name, "bytes": nbytes,
           "api": wall(lambda: call(*arrays), reps),
           "floor": wall(lambda: host(call(*[cp.asarray(p) for p in pins])), reps),
           "link": wall(lambda: ([d.set(p) for d, p in zip(devs, pins)], cp.cuda.Device().synchronize()), reps),
           "pageable": wall(lambda: host(call(*[cp.asarray(a) for a in arrays])), max(3, reps // 2), 1),
           "device": wall(lambda: host(call(*devs)), reps)}
    return row


def sweep(rng, sizes_mib, reps):
    rows = []
    for mib in sizes_mib:
        x = rng.random(mib * MiB // 4, dtype=np.float32)
        p = pinned(x)
        want = hist(cp.asarray(x)).get()
        keep = stage.PIN_MIN_BYTES
        try:
            stage.PIN_MIN_BYTES = 0
            assert hist(x).tobytes() == want.tobytes()
            pumped = wall(lambda: hist(x), reps)
        finally:
            stage.PIN_MIN_BYTES = keep
        try:  # (the cpu backend: the reference for backend=None's choice)
            assert hotbin.histogram(x, 256, (0, 1), backend="cpu")[0].tobytes() == want.tobytes()
            cpu = wall(lambda: hotbin.histogram(x, 256, (0, 1), backend="cpu"), max(3, reps // 3), 1)
        except Exception as exc:  # noqa: BLE001 (reported, the rest still runs)
            print(f"cpu backend at {mib} MiB: {exc!r}")
            cpu = float("nan")
        rows.append({"MiB": mib, "api": wall(lambda: hist(x), reps), "pinned": pumped,
                     "asarray": wall(lambda: hist(cp.asarray(x)).get(), reps),
                     "floor": wall(lambda: hist(cp.asarray(p)).get(), reps), "cpu": cpu})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--big", type=int, default=30, help="log2 of the float32 values of the big case")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    dev = cp.cuda.Device()
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    rng = np.random.default_rng(20261201)
    n = 1 << 28
    x = rng.random(n, dtype=np.float32)
    rows = [case("histogram 1 GiB f32, 256 bins", hist, [x], args.reps)]
    cp.get_default_memory_pool().free_all_blocks()
    xs = rng.standard_normal(n, dtype=np.float32)
    ys = rng.standard_normal(n, dtype=np.float32)
    rows.append(case("heatmap 2^28 f32 points, 1024^2", heat, [xs, ys], args.reps))
    del xs, ys
    cp.get_default_memory_pool().free_all_blocks()
    big = rng.random(1 << args.big, dtype=np.float32)
    rows.append(case(f"histogram {big.nbytes >> 30} GiB f32 (> a slab)", hist, [big], max(3, args.reps // 2)))
    del big
    sw = sweep(rng, [1, 4, 16, 64, 256], 9)

    lines = [f"# gpu_host ({name}, {datetime.date.today()}, PIN_BUFFERS={stage.PIN_BUFFERS} x "
             f"{stage.PIN_BYTES >> 20} MiB, {stage.PIN_THREADS} threads)", "",
             "| case | api ms | floor ms | api / floor | api GB/s | link ms | pageable ms | device ms |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['api']:.1f} | {r['floor']:.1f} | {r['api'] / r['floor']:.2f} | "
                     f"{r['bytes'] / r['api'] / 1e6:.1f} | {r['link']:.1f} | {r['pageable']:.1f} | "
                     f"{r['device']:.2f} |")
    lines += ["", "| MiB | api ms | pinned (forced) ms | cupy.asarray ms | floor ms | cpu backend ms |",
              "|---|---|---|---|---|---|"]
    for r in sw:
        lines.append(f"| {r['MiB']} | {r['api']:.2f} | {r['pinned']:.2f} | {r['asarray']:.2f} | "
                     f"{r['floor']:.2f} | {r['cpu']:.2f} |")
    h1 = rows[0]["api"]
    lines += ["", f"1 GiB histogram from the host: {h1:.1f} ms (target <= {TARGET_MS}: "
              f"{'met' if h1 <= TARGET_MS else 'NOT met'})"]
    text = "\n".join(lines)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_host.md").write_text(text + "\n")
    (out / "gpu_host.json").write_text(json.dumps({"device": name, "rows": rows, "sweep": sw}, indent=1))


if __name__ == "__main__":
    main()
