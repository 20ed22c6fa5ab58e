"""Where host data runs faster on the GPU: the cpu backend against the cuda backend on NumPy
input, by size (issue #17 item 3: the thresholds of ``backend.cuda.tuning.OFFLOAD_BYTES``).

    PYTHONPATH=src python3 benchmarks/probes/gpu_offload.py [--out DIR] [--max-mib 256]

Wall-clock milliseconds of whole calls on float32 NumPy arrays (results back on the host, as
the caller gets them), median after warm-up, for input sizes from 64 KiB to ``--max-mib``
(all arrays of the call together; 2 points per octave):

* ``histogram``: ``hotbin.histogram(x, 256, (0, 1))``;
* ``histogram2d``: ``hotbin.histogram2d(x, y, 256, [(0, 1), (0, 1)])``;
* ``heatmap``: ``hotbin.heatmap(x, y, width=1024, height=1024, x_range=(0, 1), y_range=(0, 1))``,
  and ``heatmap512`` the same on 512 x 512 cells (``hotbin.heatmap``'s default);

each with ``backend="cpu"``, ``backend="cuda"`` and ``backend=None`` (what the library picks
with this tree's thresholds). Every cuda answer equals the cpu backend's bit for bit. The
table gives cpu / cuda (> 1: the GPU is faster) and the smallest size from which cuda won by
at least ``--margin`` at every larger size measured: what the threshold may be set to.
Values are uniform in [0, 1) with a tenth of them on one spot (never all zeros).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import time

import numpy as np

import hotbin
from hotbin import backend as registry

KiB, MiB = 1 << 10, 1 << 20
HM = dict(x_range=(0.0, 1.0), y_range=(0.0, 1.0))
#: name: (arrays, call, the front door's offload key)
CALLS = {
    "histogram": (1, lambda a, be: hotbin.histogram(a[0], 256, (0.0, 1.0), backend=be)[0], "histogram"),
    "histogram2d": (2, lambda a, be: hotbin.histogram2d(a[0], a[1], 256, [(0.0, 1.0), (0.0, 1.0)],
                                                        backend=be)[0], "histogram2d"),
    "heatmap": (2, lambda a, be: hotbin.heatmap(a[0], a[1], width=1024, height=1024, backend=be,
                                                **HM).counts, ("heatmap", 1 << 20)),
    "heatmap512": (2, lambda a, be: hotbin.heatmap(a[0], a[1], width=512, height=512, backend=be,
                                                   **HM).counts, ("heatmap", 1 << 18)),
}


def wall(fn, budget_s=0.25, lo=5, hi=200):
    """Median wall-clock ms of ``fn()`` after two warm-up calls, repeated about ``budget_s``."""
    fn()
    t = time.perf_counter()
    fn()
    once = time.perf_counter() - t
    reps = int(min(hi, max(lo, budget_s / max(once, 1e-6))))
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def data(nbytes, k, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(k):
        v = rng.random(nbytes // (4 * k), np.float32)
        v[i::10] = np.float32(0.3 + 0.1 * i)
        out.append(v)
    return out


def sizes(max_mib, min_kib=64):
    s, out = min_kib * KiB, []
    while s <= max_mib * MiB:
        out += [s, s * 3 // 2] if s * 3 // 2 <= max_mib * MiB else [s]
        s *= 2
    return out


def crossover(rows, margin):
    """Smallest size from which cuda is at least ``margin`` times faster at every larger size."""
    best = None
    for r in reversed(rows):
        if r["cpu_ms"] / r["cuda_ms"] >= margin:
            best = r["bytes"]
        else:
            break
    return best


def fmt_bytes(n):
    return f"{n / MiB:g} MiB" if n >= MiB else f"{n / KiB:g} KiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--max-mib", type=int, default=256)
    ap.add_argument("--margin", type=float, default=1.25)
    ap.add_argument("--only", default=",".join(CALLS))
    ap.add_argument("--min-kib", type=int, default=64)
    ap.add_argument("--budget", type=float, default=0.25, help="seconds of repeats per timing")
    args = ap.parse_args()
    dev = hotbin.backend.load("cuda").devices()[0]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    from hotbin.backend.cuda import tuning
    import numba

    print(f"{dev}; {date}; cpu threads {numba.get_num_threads()} of {os.cpu_count()}; "
          f"OFFLOAD_BYTES {tuning.OFFLOAD_BYTES}, OFFLOAD_CELLS {tuning.OFFLOAD_CELLS}", flush=True)
    results = {}
    for op in args.only.split(","):
        k, call, key = CALLS[op]
        rows = []
        for nbytes in sizes(args.max_mib, args.min_kib):
            arrays = data(nbytes, k, nbytes)
            want = call(arrays, "cpu")
            got = call(arrays, "cuda")
            assert np.array_equal(np.asarray(got), want), f"{op} {nbytes}: cuda differs from cpu"
            picked = registry.name_for(None, *arrays, offload=key)
            row = {"bytes": nbytes}
            for be in ("cpu", "cuda"):
                row[f"{be}_ms"] = wall(lambda: call(arrays, be), args.budget)
            row["auto_ms"] = wall(lambda: call(arrays, None), args.budget)
            row["auto"] = picked
            rows.append(row)
            print(f"{op:12s} {fmt_bytes(nbytes):>10s}  cpu {row['cpu_ms']:8.3f}  cuda {row['cuda_ms']:8.3f}  "
                  f"cpu/cuda {row['cpu_ms'] / row['cuda_ms']:5.2f}  auto({picked}) {row['auto_ms']:8.3f} ms",
                  flush=True)
            del arrays
        results[op] = {"rows": rows, "crossover": crossover(rows, args.margin),
                       "crossover_1": crossover(rows, 1.0)}
    lines = [f"# cpu vs cuda backend on host float32 data ({dev}, {date})", "",
             f"cpu threads: {numba.get_num_threads()} of {os.cpu_count()}; wall ms of the whole call, "
             f"median; `auto`: backend=None with OFFLOAD_BYTES {tuning.OFFLOAD_BYTES} "
             f"(heatmaps of fewer than {tuning.OFFLOAD_CELLS} cells: the histogram's)", ""]
    for op, res in results.items():
        lines += [f"## {op}", "", "| bytes | cpu ms | cuda ms | cpu / cuda | auto picks | auto ms |",
                  "|---|---|---|---|---|---|"]
        for r in res["rows"]:
            lines.append(f"| {fmt_bytes(r['bytes'])} | {r['cpu_ms']:.3f} | {r['cuda_ms']:.3f} | "
                         f"{r['cpu_ms'] / r['cuda_ms']:.2f} | {r['auto']} | {r['auto_ms']:.3f} |")
        c, c1 = res["crossover"], res["crossover_1"]
        lines += ["", f"cuda faster at every size from: {fmt_bytes(c1) if c1 else 'never'}; "
                  f"by >= {args.margin}x from: {fmt_bytes(c) if c else 'never'}", ""]
    text = "\n".join(lines)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "gpu_offload.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(args.out, "gpu_offload.json"), "w") as f:
            json.dump({"device": dev, "date": date, "results": results}, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
