"""CPU benchmark: hotbin's cpu backend against NumPy, fast-histogram and boost-histogram.

Each case warms up (JIT), checks every answer against NumPy, times ours and the
anchors in this process (median of repeats) and prints ratios and the floor:
input bytes over the measured parallel read bandwidth.

    python benchmarks/cpu_suite.py [--quick] [--out benchmarks/results/cpu-DATE.md]
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time

import numba
import numpy as np
from numba import njit, prange

import hotbin


@njit(parallel=True, cache=True)
def _read_all(a, parts):
    step = (a.size + parts - 1) // parts
    acc = np.zeros(parts)
    for p in prange(parts):
        s = 0.0
        for j in range(p * step, min(a.size, (p + 1) * step)):
            s += a[j]
        acc[p] = s
    return acc.sum()


def timeit(fn, repeat):
    fn()  # warm-up (JIT, page faults)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def read_bandwidth(nbytes: int) -> float:
    a = np.random.default_rng(0).random(nbytes // 8)
    t = timeit(lambda: _read_all(a, numba.get_num_threads()), 7)
    return a.nbytes / t


def anchors_1d(a, bins, rng_):
    out = {"numpy": lambda: np.histogram(a, bins, rng_)[0]}
    try:
        import fast_histogram as fh
        out["fast-histogram"] = lambda: fh.histogram1d(a, bins, rng_)
    except ImportError:
        pass
    try:
        import boost_histogram as bh
        threads = os.cpu_count()

        def boost(t):
            h = bh.Histogram(bh.axis.Regular(bins, *rng_))
            h.fill(a, threads=t)
            return h.view()
        out["boost-histogram (1 thread)"] = lambda: boost(1)
        out[f"boost-histogram ({threads} threads)"] = lambda: boost(threads)
    except ImportError:
        pass
    return out


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller inputs, fewer repeats")
    p.add_argument("--out", help="write the markdown table here")
    args = p.parse_args(argv)
    n = 5_000_000 if args.quick else 50_000_000
    repeat = 3 if args.quick else 7
    rng = np.random.default_rng(1)
    bw = read_bandwidth(8 * n)
    rows = []

    def row(work, name, t, nbytes, ours_t=None):
        rows.append((work, name, t, nbytes / t / 1e9, (t / ours_t) if ours_t else None))

    # C1: float64, 256 bins over a range: uniform, narrow (~60 bins used), constant
    cases = {
        "uniform": rng.random(n) * 256,
        "narrow": 100 + rng.random(n) * 60,
        "constant": np.full(n, 201.5),
    }
    for dist, a in cases.items():
        work = f"{n / 1e6:.0f}M float64, 256 bins, {dist}"
        want = np.histogram(a, 256, (0, 256))[0]
        got = hotbin.histogram(a, 256, (0, 256))[0]
        assert np.array_equal(got, want), work
        ours = timeit(lambda: hotbin.histogram(a, 256, (0, 256)), repeat)
        row(work, "hotbin cpu", ours, a.nbytes)
        for name, fn in anchors_1d(a, 256, (0, 256)).items():
            res = np.asarray(fn())
            assert np.allclose(res.reshape(-1)[:256], want), (work, name)
            row(work, name, timeit(fn, 3 if name == "numpy" else repeat), a.nbytes, ours)
        rows.append((work, "floor (read bandwidth)", a.nbytes / bw, bw / 1e9, None))

    # uint8 images-style data: the LUT path
    a8 = rng.integers(0, 256, 4 * n, dtype=np.uint8)
    work = f"{4 * n / 1e6:.0f}M uint8, 256 bins"
    want = np.bincount(a8, minlength=256)
    assert np.array_equal(hotbin.histogram(a8, 256, (0, 256))[0], want)
    ours = timeit(lambda: hotbin.histogram(a8, 256, (0, 256)), repeat)
    row(work, "hotbin cpu", ours, a8.nbytes)
    row(work, "numpy.bincount", timeit(lambda: np.bincount(a8, minlength=256), 3), a8.nbytes, ours)
    rows.append((work, "floor (read bandwidth)", a8.nbytes / bw, bw / 1e9, None))

    # C3: cumsum
    for dt in (np.int32, np.float64):
        x = rng.integers(-100, 100, n).astype(dt)
        work = f"cumsum {n / 1e6:.0f}M {np.dtype(dt).name}"
        got, want = hotbin.cumsum(x), np.cumsum(x)
        assert got.dtype == want.dtype and np.allclose(got, want), work
        ours = timeit(lambda: hotbin.cumsum(x), repeat)
        row(work, "hotbin cpu", ours, x.nbytes)
        row(work, "numpy.cumsum", timeit(lambda: np.cumsum(x), repeat), x.nbytes, ours)

    head = (f"CPU suite, {datetime.date.today()}, {cpu_model()}, "
            f"{os.cpu_count()} cores, numba threads {numba.get_num_threads()}, numpy {np.__version__}; "
            f"measured parallel read bandwidth {bw / 1e9:.1f} GB/s")
    lines = [head, "", "| work | implementation | time (ms) | GB/s of input | hotbin speed-up |",
             "|---|---|---|---|---|"]
    for work, name, t, gbs, ratio in rows:
        lines.append(f"| {work} | {name} | {t * 1e3:.1f} | {gbs:.2f} | {'' if ratio is None else f'{ratio:.2f}x'} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
