"""The command line's reading, timed as users run it: whole ``hotbin heatmap`` processes on 10M rows.

(a) The same rows as one Parquet file and as a hive folder written by pyarrow with
    10k-row row groups: the folder should cost at most 1.3x the file (the data layer
    cuts both into the same ``--chunk-rows`` batches).
(b) CSV and Parquet: ``hotbin heatmap f --x x --y y -o out.png`` against datashader
    reading the same file with pandas (``pd.read_csv`` / ``pd.read_parquet``, then
    ``Canvas(1024, 1024).points(df, 'x', 'y', ds.count())`` and ``tf.shade`` to a PNG),
    each a whole process, so imports and start-up count for both.

Every comparison checks the answer: the folder's counts equal the file's, and in an untimed
run with the lattice's ranges (the points lie well inside their cells) hotbin's counts equal
datashader's cell for cell. The
floor is the file's bytes over the read bandwidth measured here (the file read once more,
warm). Results: ``benchmarks/results/io-<machine>.md`` (overwritten).

Usage: python benchmarks/io_suite.py [--rows 10000000] [--repeat 3] [--machine TAG]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

SIDE = 1024
DATASHADER = """
import sys, numpy as np, pandas as pd, datashader as ds, datashader.transfer_functions as tf
path, out, check = sys.argv[1], sys.argv[2], len(sys.argv) > 3
df = pd.read_parquet(path, columns=["x", "y"]) if path.endswith(".parquet") else pd.read_csv(path, usecols=["x", "y"])
ranges = dict(x_range=(0, {side}), y_range=(0, {side})) if check else {{}}
agg = ds.Canvas(plot_width={side}, plot_height={side}, **ranges).points(df, "x", "y", ds.count())
if check:
    np.save(out, agg.values.astype(np.int64))
else:
    tf.shade(agg).to_pil().save(out)
""".format(side=SIDE)


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine_tag(model: str) -> str:
    low = model.lower()
    family = "epyc" if "epyc" in low else "xeon" if "xeon" in low else "ryzen" if "ryzen" in low else "cpu"
    return f"{family}{os.cpu_count()}"


def make_data(n, seed=2026):
    """Points on the 1024 x 1024 lattice of [0, 1024)^2, each well inside its cell."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, SIDE, n) + np.round(rng.uniform(0.05, 0.95, n), 4)
    y = np.minimum(rng.normal(SIDE / 2, SIDE / 6, n).astype(np.int64).clip(0, SIDE - 1), SIDE - 1) \
        + np.round(rng.uniform(0.05, 0.95, n), 4)
    v = np.round(rng.uniform(0, 50, n), 2)
    return x, y, v


def write_files(tmp, n):
    import pyarrow as pa
    import pyarrow.dataset as pds
    import pyarrow.parquet as pq

    x, y, v = make_data(n)
    table = pa.table({"x": x, "y": y, "v": v, "part": (np.arange(n) * 8 // n).astype(np.int64)})
    one = os.path.join(tmp, "one.parquet")
    pq.write_table(table.drop(["part"]), one)
    hive = os.path.join(tmp, "hive")
    pds.write_dataset(table, hive, format="parquet", partitioning=["part"], partitioning_flavor="hive",
                      max_rows_per_group=10_000, min_rows_per_group=10_000)
    csv = os.path.join(tmp, "f.csv")
    import pyarrow.csv as pcsv

    pcsv.write_csv(table.drop(["part"]), csv)
    return one, hive, csv


def bytes_of(path) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)
    return os.path.getsize(path)


def read_bandwidth(path) -> float:
    """Bytes per second reading ``path`` (all its files) in 16 MiB blocks, warm."""
    files = [os.path.join(r, f) for r, _, fs in os.walk(path) for f in fs] if os.path.isdir(path) else [path]
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        for name in files:
            with open(name, "rb", buffering=0) as f:
                while f.read(1 << 24):
                    pass
        best = min(best, time.perf_counter() - t0)
    return bytes_of(path) / best


def timed(cmd, repeat):
    """Best wall time of ``repeat`` runs of the process ``cmd`` (it must succeed)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr}")
        best = min(best, dt)
    return best


def hotbin_cmd(path, out, ranges=False):
    """``hotbin heatmap`` as users call it (ranges from the data), or with the lattice's ranges
    for the check against datashader."""
    extra = ["--width", str(SIDE), "--height", str(SIDE), "--x-range", f"0,{SIDE}", "--y-range", f"0,{SIDE}"]
    return [sys.executable, "-m", "hotbin", "heatmap", path, "--x", "x", "--y", "y", *(extra if ranges else []),
            "-o", out]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--machine", default=None)
    opts = ap.parse_args()
    model = cpu_model()
    tag = opts.machine or machine_tag(model)
    lines = [f"# hotbin heatmap reading files: {opts.rows:,} rows, whole processes", "",
             f"CPU: {model} ({os.cpu_count()} threads); Python {platform.python_version()}; "
             f"best of {opts.repeat}; `python benchmarks/io_suite.py --rows {opts.rows}`", ""]
    with tempfile.TemporaryDirectory(prefix="hotbin-io-") as tmp:
        t0 = time.perf_counter()
        one, hive, csv = write_files(tmp, opts.rows)
        print(f"wrote the files in {time.perf_counter() - t0:.1f} s", flush=True)
        timed(hotbin_cmd(one, os.path.join(tmp, "warm.npy")), 1)  # numba's cache and the OS's file cache
        # (a) one file against a hive folder of 10k-row row groups
        t_one = timed(hotbin_cmd(one, os.path.join(tmp, "one.npy")), opts.repeat)
        t_hive = timed(hotbin_cmd(hive, os.path.join(tmp, "hive.npy")), opts.repeat)
        a, b = np.load(os.path.join(tmp, "one.npy")), np.load(os.path.join(tmp, "hive.npy"))
        assert np.array_equal(a, b) and int(a.sum()) == opts.rows, "the folder's counts differ from the file's"
        groups = sum(__import__("pyarrow.parquet").parquet.ParquetFile(os.path.join(r, f)).num_row_groups
                     for r, _, fs in os.walk(hive) for f in fs)
        ratio = t_hive / t_one
        lines += ["## (a) one Parquet file against a hive folder (pyarrow, 10k-row row groups)", "",
                  "| input | bytes | row groups | hotbin heatmap (s) |", "|---|---:|---:|---:|",
                  f"| one file | {bytes_of(one):,} | {__import__('pyarrow.parquet').parquet.ParquetFile(one).num_row_groups} "
                  f"| {t_one:.2f} |",
                  f"| hive folder, 8 partitions | {bytes_of(hive):,} | {groups} | {t_hive:.2f} |", "",
                  f"folder / file: **{ratio:.2f}x** (target <= 1.3x: {'met' if ratio <= 1.3 else 'NOT met'}); "
                  "counts equal.", ""]
        print("\n".join(lines[-7:]), flush=True)
        # (b) hotbin against pandas + datashader, CSV and Parquet
        script = os.path.join(tmp, "ds_run.py")
        with open(script, "w") as f:
            f.write(DATASHADER)
        lines += ["## (b) hotbin heatmap against pandas + datashader (1024 x 1024 counts, PNG)", "",
                  "| file | bytes | read floor (s) | hotbin (s) | pandas + datashader (s) | datashader / hotbin "
                  "| hotbin / floor |", "|---|---:|---:|---:|---:|---:|---:|"]
        for name, path in (("CSV", csv), ("Parquet", one)):
            floor = bytes_of(path) / read_bandwidth(path)
            t_h = timed(hotbin_cmd(path, os.path.join(tmp, "h.png")), opts.repeat)
            t_d = timed([sys.executable, script, path, os.path.join(tmp, "d.png")], opts.repeat)
            timed(hotbin_cmd(path, os.path.join(tmp, "h.npy"), ranges=True), 1)  # the check, untimed
            timed([sys.executable, script, path, os.path.join(tmp, "d.npy"), "check"], 1)
            h, d = np.load(os.path.join(tmp, "h.npy")), np.load(os.path.join(tmp, "d.npy"))
            assert np.array_equal(h, d) and int(h.sum()) == opts.rows, f"{name}: hotbin's counts differ"
            lines.append(f"| {name} | {bytes_of(path):,} | {floor:.2f} | {t_h:.2f} | {t_d:.2f} | "
                         f"{t_d / t_h:.2f}x | {t_h / floor:.1f}x |")
            print(lines[-1], flush=True)
        lines += ["", "Timed as users call them: `hotbin heatmap FILE --x x --y y -o out.png` (ranges from the "
                  "data: an extent query, then the counting pass) against pandas + datashader with its own "
                  "extent, shaded to a PNG. Checked in separate untimed runs with the lattice's ranges "
                  "[0, 1024) on both: counts equal cell for cell, every point counted. The floor is the bytes "
                  "over the warm read bandwidth measured on the same files."]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", f"io-{tag}.md")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
