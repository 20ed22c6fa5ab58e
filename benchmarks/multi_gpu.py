"""Several GPUs (issue #7): one 2^33-point heatmap on one Dask worker per GPU.

    PYTHONPATH=src python3 benchmarks/multi_gpu.py [--log2 33] [--gpus 1 2] [--out DIR]

Needs dask, distributed and (preferably) dask-cuda; on the device machine they come
as carried wheels (`bash benchmarks/device.sh multi-gpu`). One worker per GPU through
dask-cuda's ``LocalCUDACluster``; if dask-cuda cannot start, the same layout by hand
(a ``SpecCluster`` of one nanny per GPU, each with its own ``CUDA_VISIBLE_DEVICES``),
and the table says which ran.

The points (float32 x and y, 2^LOG2 of them in chunks of 2^30) are generated on the
workers as CuPy chunks (never on the client) and persisted; a share of them sits in
one hot cell at random positions (the city centre), the rest uniform. Timed: the
whole ``hotbin.heatmap(x, y, width=1024, height=1024, x_range, y_range,
backend="cuda")`` call — a partial grid per chunk on the GPU that holds it, the
partials tree-merged — best and median of 3. Checked: counts + dropped equal the
number of points, and every configuration's grid is bitwise the sum of the in-process
heatmaps of the same chunks.
Reference in the same run: the in-process call (no Dask) on one chunk on GPU 0.
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import hotbin

CHUNK_LOG2 = 30
WIDTH = HEIGHT = 1024
HOT = (0.3005, 0.7005)  # one cell of the 1024 x 1024 grid over [0, 1)^2


def make_points(i, chunk, share, seed):
    """(2, chunk) float32 on the worker's GPU: uniform, a ``share`` of them in the hot cell."""
    import cupy as cp

    g = cp.random.default_rng(seed * 1000 + i)
    pts = g.random((2, chunk), dtype=cp.float32)
    hot = g.random(chunk, dtype=cp.float32) < share
    pts[0, hot] = HOT[0]
    pts[1, hot] = HOT[1]
    return pts


def start_cluster(ngpu):
    """``(client, cluster, how)``: one single-threaded worker per GPU."""
    from distributed import Client

    devices = ",".join(str(i) for i in range(ngpu))
    try:
        from dask_cuda import LocalCUDACluster

        cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=devices, n_workers=ngpu, threads_per_worker=1,
                                   dashboard_address=None, device_memory_limit=None)
        how = "dask_cuda.LocalCUDACluster"
    except Exception as exc:  # noqa: BLE001 - reported, then the same layout by hand
        print(f"dask-cuda did not start ({type(exc).__name__}: {exc}); one nanny per GPU instead",
              file=sys.stderr)
        from distributed import Nanny, Scheduler, SpecCluster

        workers = {i: {"cls": Nanny, "options": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(i)}}}
                   for i in range(ngpu)}
        cluster = SpecCluster(workers=workers, scheduler={"cls": Scheduler,
                                                          "options": {"dashboard_address": None}})
        how = "distributed.SpecCluster (one Nanny per GPU)"
    return Client(cluster), cluster, how


def heatmap_ms(pts, reps):
    """Milliseconds of each of ``reps`` in-memory heatmap calls on one (2, n) chunk, synchronized."""
    import cupy as cp

    out = []
    for _ in range(reps):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        hotbin.heatmap(pts[0], pts[1], width=WIDTH, height=HEIGHT, x_range=(0, 1), y_range=(0, 1))
        cp.cuda.Device().synchronize()
        out.append(round((time.perf_counter() - t0) * 1e3, 1))
    return out


def direct(key, dask_worker=None):
    """ms per heatmap call on one persisted chunk, run in the worker process outside any task."""
    return heatmap_ms(dask_worker.data[key], 4)


def stages(client, call):
    """Print where one call's time goes: per task group, compute and transfer seconds (task stream)."""
    from distributed import get_task_stream

    t0 = time.perf_counter()
    with get_task_stream(client) as ts:
        call()
    wall = time.perf_counter() - t0
    groups: dict = {}
    for task in ts.data:
        name = task["key"][0] if isinstance(task["key"], tuple) else task["key"]
        name = "-".join(str(name).split("-")[:2])  # the task group, without its token
        g = groups.setdefault(name, {"n": 0})
        g["n"] += 1
        for ss in task["startstops"]:
            g[ss["action"]] = g.get(ss["action"], 0.0) + ss["stop"] - ss["start"]
    starts = [ss["start"] for t in ts.data for ss in t["startstops"]]
    stops = [ss["stop"] for t in ts.data for ss in t["startstops"]]
    span = max(stops) - min(starts) if starts else 0.0
    print(f"    profile: wall {wall * 1e3:.0f} ms, tasks span {span * 1e3:.0f} ms")
    for name, g in groups.items():
        parts = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in g.items() if k != "n")
        print(f"      {name}: {g['n']} tasks, {parts}")
    t_min = min(starts) if starts else 0.0
    for task in sorted(ts.data, key=lambda t: t["startstops"][0]["start"]):
        for ss in task["startstops"]:
            print(f"        {str(task['key'])[:60]:60s} {ss['action']:9s} at {(ss['start'] - t_min) * 1e3:6.1f} "
                  f"ms for {(ss['stop'] - ss['start']) * 1e3:5.1f} ms")


def run(ngpu, log2, shares, reps, profile=False):
    import cupy as cp
    import dask
    import dask.array as da
    from distributed import wait

    n = 1 << log2
    chunk = min(n, 1 << CHUNK_LOG2)
    client, cluster, how = start_cluster(ngpu)
    rows = []
    try:
        print(f"{ngpu} GPU(s) via {how}: workers {sorted(client.scheduler_info()['workers'])}")
        for share in shares:
            workers = sorted(client.scheduler_info()["workers"])
            parts = []
            nchunks = n // chunk
            for i in range(nchunks):  # neighbouring chunks on the same GPU, an even spread
                with dask.annotate(workers=[workers[i * ngpu // nchunks]], allow_other_workers=False):
                    parts.append(da.from_delayed(dask.delayed(make_points)(i, chunk, share, 7),
                                                 shape=(2, chunk), dtype=np.float32,
                                                 meta=cp.empty((0, 0), cp.float32)))
            pts = da.concatenate(parts, axis=1).persist(optimize_graph=False)
            wait(pts)
            where = {}
            for key, ws in client.who_has(pts).items():
                for w in ws:
                    where[w] = where.get(w, 0) + 1
            x, y = pts[0], pts[1]
            times, hm = [], None
            for _ in range(reps):
                t0 = time.perf_counter()
                hm = hotbin.heatmap(x, y, width=WIDTH, height=HEIGHT, x_range=(0, 1), y_range=(0, 1),
                                    backend="cuda")
                times.append(time.perf_counter() - t0)
            if profile:
                key = pts.__dask_keys__()[0][0]
                print(f"    in the worker, no task: {client.run(direct, key, workers=[workers[0]])}")
                call = lambda: hotbin.heatmap(x, y, width=WIDTH, height=HEIGHT, x_range=(0, 1),  # noqa: E731
                                              y_range=(0, 1), backend="cuda")
                stages(client, call)

            counts = np.asarray(hm.counts)
            assert int(counts.sum()) + hm.dropped == n, "points lost"
            rows.append({"gpus": ngpu, "share": share, "points": n, "chunks": n // chunk,
                         "chunks_per_worker": sorted(where.values()), "best_s": min(times),
                         "median_s": statistics.median(times), "gpts_best": n / min(times) / 1e9,
                         "cluster": how, "counts": counts})
            print(f"  share {share:.0%}: best {min(times) * 1e3:.0f} ms, median "
                  f"{statistics.median(times) * 1e3:.0f} ms -> {n / min(times) / 1e9:.1f} G points/s "
                  f"(chunks per worker {sorted(where.values())})", flush=True)
            del pts, x, y, parts
            for _ in range(60):  # wait until the workers dropped this share's points
                if not client.who_has():
                    break
                time.sleep(0.5)
    finally:
        client.close()
        cluster.close()
    return rows


def in_process(log2, share, reps):
    """Without Dask, on GPU 0: (G points/s of the call on one chunk, the exact grid of all chunks).

    The grid is the sum of the in-memory heatmaps of the same chunks, one at a time:
    the reference every Dask configuration must equal bit for bit.
    """
    import cupy as cp

    n = 1 << log2
    chunk = min(n, 1 << CHUNK_LOG2)
    ref = None
    for i in range(n // chunk):
        pts = make_points(i, chunk, share, 7)
        hm = hotbin.heatmap(pts[0], pts[1], width=WIDTH, height=HEIGHT, x_range=(0, 1), y_range=(0, 1))
        ref = hm.counts if ref is None else ref + hm.counts
        del pts
    pts = make_points(0, chunk, share, 7)
    heatmap_ms(pts, 1)  # warm-up
    best = min(heatmap_ms(pts, reps)) / 1e3
    del pts
    cp.get_default_memory_pool().free_all_blocks()
    return chunk / best / 1e9, ref.get()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2", type=int, default=33)
    ap.add_argument("--gpus", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shares", type=float, nargs="+", default=[0.0, 0.9])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--profile", action="store_true", help="print where one call's time goes")
    args = ap.parse_args()

    found = {s: in_process(args.log2, s, 5) for s in args.shares}
    ref = {s: g for s, (g, _) in found.items()}
    rows = []
    for g in args.gpus:
        rows += run(g, args.log2, args.shares, args.reps, args.profile)
    base = {r["share"]: r for r in rows if r["gpus"] == args.gpus[0]}
    for r in rows:
        r["same_grid"] = bool(np.array_equal(r["counts"], found[r["share"]][1]))
    stamp = datetime.date.today().isoformat()
    lines = [f"# Multi-GPU heatmap (issue #7), {stamp}",
             "",
             f"2^{args.log2} float32 points, {WIDTH}x{HEIGHT} grid, chunks of 2^{CHUNK_LOG2} points "
             f"generated and persisted on the workers; the whole dask call timed (best of {args.reps}).",
             "",
             "| GPUs | hot share | best ms | median ms | G points/s | speed-up vs 1 GPU | chunks per worker | grid = in-process grid |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        speed = base[r["share"]]["best_s"] / r["best_s"]
        lines.append(f"| {r['gpus']} | {r['share']:.0%} | {r['best_s'] * 1e3:.0f} | {r['median_s'] * 1e3:.0f} | "
                     f"{r['gpts_best']:.1f} | {speed:.2f}x | {r['chunks_per_worker']} | {r['same_grid']} |")
    lines += ["", "In-process reference (no Dask, one 2^30-point chunk on GPU 0): " +
              ", ".join(f"{s:.0%} hot {g:.1f} G points/s" for s, g in ref.items()),
              f"Cluster: {rows[0]['cluster'] if rows else '-'}"]
    text = "\n".join(lines)
    print(text)
    bad = [r["gpus"] for r in rows if not r["same_grid"]]
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        name = f"multi-gpu-h200x{max(args.gpus)}"  # results/<suite>-<machine>.md; the date is inside
        (out / f"{name}.md").write_text(text + "\n")
        (out / f"{name}.json").write_text(json.dumps(
            {"rows": [{k: v for k, v in r.items() if k != "counts"} for r in rows], "in_process": ref},
            indent=1))
    if bad:
        sys.exit(f"grids differ from the in-process grid with {bad} GPU(s)")


if __name__ == "__main__":
    main()
