"""Issue #18: 8-bit histograms a byte at a time, a pair of bytes at a time, and each piece the
way its thread timed faster (cpu backend, ``hotbin.backend.cpu.count1d._byte_counts``).

200M uint8 values into 256 bins (uniform / narrow / constant), the ways in alternation in one
process (``count1d.WAYS``), all threads; medians of the rounds, every answer checked against
NumPy.

    python benchmarks/probes/cpu_u8_pairs.py [--n 200000000] [--rounds 7]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import hotbin
from hotbin.backend.cpu import count1d, parallel

import os
import sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: the suites' helpers
from floor_cpu import cpu_model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    data = {"uniform": rng.integers(0, 256, args.n, dtype=np.uint8),
            "narrow": rng.integers(100, 161, args.n).astype(np.uint8),
            "constant": np.full(args.n, 201, np.uint8)}
    ways = {"a byte at a time": (count1d.BYTES,), "by pairs": (count1d.PAIRS,), "timed": count1d.WAYS}
    print(f"CPU: {cpu_model()}, {parallel.threads()} threads")
    try:
        for name, a in data.items():
            want = np.bincount(a, minlength=256)
            times = {way: [] for way in ways}
            for _ in range(args.rounds + 1):  # the first round warms up
                for way, tried in ways.items():
                    count1d.WAYS = tried
                    t = time.perf_counter()
                    got = hotbin.histogram(a, 256, (0, 256), backend="cpu")[0]
                    times[way].append(time.perf_counter() - t)
                    assert np.array_equal(got, want), (name, way)
            print(f"{name:9} " + "  ".join(f"{way} {1e3 * statistics.median(t[1:]):6.1f} ms"
                                           for way, t in times.items()), flush=True)
    finally:
        count1d.WAYS = ways["timed"]


if __name__ == "__main__":
    main()
