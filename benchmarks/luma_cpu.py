"""CPU benchmark of the luma histogram: RGBA8 4096x4096 images, hotbin against NumPy, skimage, Pillow.

Every case warms up (JIT), checks hotbin's answer against a NumPy two-pass
baseline that uses the same exact integer rule (luma plane in uint32, then
``np.bincount``), times each contender (median and best of repeats) and prints
GB/s of input pixels and the ratio to that baseline. The floor is the input bytes
over the measured parallel read bandwidth of this machine.

skimage (``rgb2gray`` + ``exposure.histogram``) and Pillow (``convert("L")`` +
``histogram()``) use other luma weights and float or rounding rules, so they are
timed for scale only, not compared for equality.

    python benchmarks/luma_cpu.py [--quick] [--out benchmarks/results/luma-cpu-MACHINE.md]
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import time

import numba
import numpy as np
from numba import njit, prange

import floor_cpu
import hotbin
from hotbin import luma
from hotbin.backend import cpu


@njit(parallel=True, cache=True)
def _read_all(words, parts):
    step = (words.size + parts - 1) // parts
    acc = np.zeros(parts, np.uint32)
    for p in prange(parts):
        part = words[p * step:(p + 1) * step]  # a slice: the loop vectorizes
        s = np.uint32(0)  # wraps: only the reading matters
        for j in range(part.size):
            s += part[j]
        acc[p] = s
    return acc.sum()


def timeit(fn, repeat):
    fn()  # warm-up: JIT, page faults
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), min(ts)


def numpy_two_pass(img):
    """Baseline: exact luma plane (uint32 arithmetic), then one bincount per image."""
    u = np.uint32
    rows = []
    for im in img.reshape((-1,) + img.shape[-3:]):
        lv = (im[..., 0].astype(u) * u(2126) + im[..., 1].astype(u) * u(7152)
              + im[..., 2].astype(u) * u(722)) // u(10000)
        rows.append(np.bincount(lv.ravel(), minlength=256))
    return np.stack(rows)


class _PlanePath:
    """The cpu backend without its fused primitive: luma plane, then be.bincount per block."""

    bincount = staticmethod(cpu.bincount)

    @staticmethod
    def has(capability):
        return False  # no fused luma primitive: the plane path


def hotbin_plane_path(img):
    return luma.level_counts(_PlanePath, luma.parse(img))


def _one_thread(fn):
    def run():
        n = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return fn()
        finally:
            numba.set_num_threads(n)
    return run


def contenders(img):
    out = {
        "hotbin (fused)": lambda: hotbin.luminance_histogram(img),
        "hotbin (fused, 1 thread)": _one_thread(lambda: hotbin.luminance_histogram(img)),
        "hotbin (luma plane + bincount)": lambda: hotbin_plane_path(img),
        "numpy two-pass": lambda: numpy_two_pass(img),
    }
    try:
        from skimage import color, exposure

        out["skimage rgb2gray + histogram (other rule)"] = lambda: [
            exposure.histogram(color.rgb2gray(im[..., :3]), 256, source_range="dtype")
            for im in img.reshape((-1,) + img.shape[-3:])]
    except ImportError:
        pass
    try:
        from PIL import Image

        out["Pillow convert('L') + histogram (other rule)"] = lambda: [
            Image.fromarray(im).convert("L").histogram() for im in img.reshape((-1,) + img.shape[-3:])]
    except ImportError:
        pass
    return out


def make_images(n, size, rng):
    """Cases: uniform noise, a photograph tiled up to size, and a constant image (one hot bin)."""
    noise = rng.integers(0, 256, (n, size, size, 4), dtype=np.uint8)
    try:
        from skimage import data

        photo = data.astronaut()
    except ImportError:
        photo = np.clip(rng.normal(110, 40, (512, 512, 3)), 0, 255).astype(np.uint8)
    reps = -(-size // photo.shape[0]), -(-size // photo.shape[1])
    tile = np.tile(photo, reps + (1,))[:size, :size]
    photo4 = np.empty((n, size, size, 4), np.uint8)
    photo4[..., :3] = tile
    photo4[..., 3] = 255
    const = np.empty((n, size, size, 4), np.uint8)
    const[...] = (200, 120, 40, 255)
    return {"noise": noise, "photo (astronaut tiled)": photo4, "constant (hot bin)": const}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1024x1024, fewer repeats")
    ap.add_argument("--out", default=None)
    ap.add_argument("--batch", type=int, default=4, help="images per batch case")
    args = ap.parse_args()
    size = 1024 if args.quick else 4096
    repeat = 3 if args.quick else 7
    rng = np.random.default_rng(20261130)

    probe = rng.integers(0, 2**32, 1 << 25, dtype=np.uint64).astype(np.uint32)
    _read_all(probe, numba.get_num_threads())
    bw = probe.nbytes / timeit(lambda: _read_all(probe, numba.get_num_threads()), repeat)[1]

    lines = [
        f"# Luma histogram on the CPU ({datetime.date.today().isoformat()})",
        "",
        f"- machine: {floor_cpu.cpu_model()}, {os.cpu_count()} cores, "
        f"{numba.get_num_threads()} numba threads; numpy {np.__version__}, numba {numba.__version__}",
        f"- load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
        "(other jobs share this machine: read the best-of column)",
        f"- read bandwidth (parallel uint32 sum): {bw / 1e9:.2f} GB/s",
        f"- command: `python benchmarks/luma_cpu.py{' --quick' if args.quick else ''}`",
        "- GB/s = input bytes / best time; ratio = numpy two-pass best / contender best; "
        "every hotbin answer equals the baseline's",
        "",
    ]
    for batch in (1, args.batch):
        for name, imgs in make_images(batch, size, rng).items():
            img = imgs[:batch]
            for label, a in (("RGBA", img), ("RGB", np.ascontiguousarray(img[..., :3]))):
                ref = numpy_two_pass(a)
                assert np.array_equal(hotbin.luminance_histogram(a).reshape(-1, 256), ref)
                assert np.array_equal(hotbin_plane_path(a), ref)
                title = f"{label}8 {batch} x {size}x{size}, {name}: {a.nbytes / 2**20:.0f} MiB, " \
                        f"floor {a.nbytes / bw * 1e3:.1f} ms"
                lines += [f"## {title}", "", "| contender | median ms | best ms | GB/s (best) | ratio (best) |",
                          "| --- | ---: | ---: | ---: | ---: |"]
                base = None
                rows = []
                for cname, fn in contenders(a).items():
                    med, best = timeit(fn, repeat)
                    if cname == "numpy two-pass":
                        base = best
                    rows.append((cname, med, best))
                for cname, med, best in rows:
                    lines.append(f"| {cname} | {med * 1e3:.1f} | {best * 1e3:.1f} | "
                                 f"{a.nbytes / best / 1e9:.2f} | {base / best:.2f}x |")
                lines.append("")
                print("\n".join(lines[-len(rows) - 5:]), flush=True)
    text = "\n".join(lines)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
