"""The CPU the benchmarks ran on (:func:`cpu_model`) and their read floor (:func:`read_time`):
the time to read their input arrays once, on all threads; and the add floor (:func:`add_time`):
an add a value at the rate all threads add to counters in L1.

Each thread sums its share of each array's 32-bit words with wrapping integer adds over a
slice, so the loop vectorizes and the figure is the memory's, not the adder's. The threads are
hotbin's own (``parallel.each``), as its kernels': numba's prange ran on OpenMP here, whose
threads spin after a parallel region, and a hotbin call right after a read ran ~8 ms slower
(50M float64: 14.5-15.8 ms alone, 21.5-25.2 after a read). The floor
these benchmarks measured before 2026-12-02 was a float running sum: one dependent add (four
cycles) per element, 12.6 GB/s against 33-36 GB/s read this way on the same 2-core AMD EPYC
VM (20M float32 x, y and weights) — it put the floor 2-3x too high.

    from floor_cpu import cpu_model, read_time
    seconds = read_time([x, y, w])
"""
from __future__ import annotations

import os
import platform
import statistics
import time

import numpy as np
from numba import njit

from hotbin.backend.cpu import parallel


@njit(nogil=True, cache=True)
def _read3(a, b, c, p, parts):
    """A wrapping sum of the uint32 words of part ``p`` of ``parts`` of each of a, b and c
    (slices: the loops vectorize)."""
    s = np.uint32(0)
    for words in (a, b, c):
        step = (words.size + parts - 1) // parts
        part = words[p * step:(p + 1) * step]
        for j in range(part.size):
            s += part[j]
    return s


def _words(a) -> np.ndarray:
    """The C-contiguous array ``a`` as uint32 words (a tail under 4 bytes left out)."""
    raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    return raw[:raw.size - raw.size % 4].view(np.uint32)


def reader(arrays):
    """A function that reads ``arrays`` (up to three) once on every hotbin thread and returns
    the seconds it took (compiled, the pages faulted in, before it returns)."""
    words = [_words(a) for a in arrays]
    if not 1 <= len(words) <= 3:
        raise ValueError("read_time reads one to three arrays")
    words += [np.empty(0, np.uint32)] * (3 - len(words))
    parts = parallel.threads()
    n = sum(w.size for w in words)

    def run():
        parallel.each(max(n, parts * parallel.MIN_PER_THREAD), parts, lambda p: _read3(*words, p, parts))
    run()  # compile, fault the pages in

    def once():
        t = time.perf_counter()
        run()
        return time.perf_counter() - t
    return once


def read_time(arrays, rounds: int = 7) -> float:
    """Median seconds to read ``arrays`` (up to three) once on every hotbin thread."""
    once = reader(arrays)
    return statistics.median(once() for _ in range(max(rounds, 5)))


@njit(nogil=True, cache=True)
def _tally_l1(codes, h, reps):
    """h[codes[k] + (k % 8) * 257] += 1, ``reps`` times: adds in L1, no memory traffic."""
    for _ in range(reps):
        for k in range(0, codes.size - 7, 8):
            for j in range(8):
                h[np.uint64(codes[k + j]) + np.uint64(j * 257)] += 1


def add_time(rounds: int = 5) -> float:
    """The machine's time for one add to a counter, in ns, with every hotbin thread adding at
    once (:func:`_tally_l1` on each, its own counters in L1), best of ``rounds``: a count that
    adds once a value takes about its values times this (the add floor; the probe loop's own
    overhead is in it: the Xeon's float32 counts ran 0.93-0.98x of it). It moves with
    the host: on the 2-vCPU AMD EPYC VM, 2026-12-03, an add took 0.26-0.27 ns on one vCPU
    alone, and with both adding 0.41 ns each in one hour (as if the host ran the two vCPUs on
    one core's two hardware threads; the guest is not told) and 0.26 each in the next."""
    parts = parallel.threads()
    codes = np.random.default_rng(0).integers(0, 256, 1 << 14).astype(np.int32)
    hs = np.zeros((parts, 8 * 257), np.uint32)
    reps = 100

    def run():
        parallel.each(parts * parallel.MIN_PER_THREAD, parts, lambda p: _tally_l1(codes, hs[p], reps))
    run()
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t)
    return best / (reps * (codes.size - codes.size % 8) * parts) * 1e9


@njit(cache=True)
def _chain(n):
    """A dependent chain of n multiply-xor steps: its time is latency, not throughput."""
    x = np.uint64(1)
    for i in range(n):
        x = (x * np.uint64(3)) ^ np.uint64(i)
    return x


def core_probe(rounds: int = 5) -> tuple[float, float]:
    """How busy this core's pipeline is now: (ns a value of an add loop in L1 on one thread,
    ns an iteration of a dependent integer chain), best of ``rounds``. On a shared host the
    first moves with whatever else uses the core's pipeline (a guest on its other hardware
    thread, as far as this probe can tell) and the second, latency-bound, barely does: on
    the 2-vCPU AMD EPYC VM, 2026-12-03, the adds took 0.29-0.47 ns a value within minutes
    while the chain stayed at 0.56-0.61 ns, and the kernels' times moved with the adds (the
    read floor does not). Benchmarks print it so a slow run can be told from a slow change."""
    codes = np.random.default_rng(0).integers(0, 256, 1 << 14).astype(np.int32)
    h = np.zeros(8 * 257, np.uint32)
    _tally_l1(codes, h, 1)
    _chain(10)
    adds, chain = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        _tally_l1(codes, h, 500)
        adds.append((time.perf_counter() - t) / (500 * codes.size) * 1e9)
        t = time.perf_counter()
        _chain(5_000_000)
        chain.append((time.perf_counter() - t) / 5e6 * 1e9)
    return min(adds), min(chain)


def probe_text() -> str:
    """core_probe as a phrase for results headers."""
    adds, chain = core_probe()
    return f"adds in L1 {adds:.3f} ns a value, a dependent chain {chain:.3f} ns"


def cpus() -> str:
    """The CPUs this process may run on: "n CPUs", and " (pinned: m on the machine)" where fewer than all."""
    total = os.cpu_count() or 1
    mine = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else total
    return f"{mine} CPU{'s' if mine > 1 else ''}" + (f" (pinned: {total} on the machine)" if mine < total else "")


def cpu_model() -> str:
    """The CPU's model name, with what a VM's generic name ("AMD EPYC") leaves out: family,
    model and stepping, the widest vector unit and L2 per core (/proc/cpuinfo and sysfs on
    Linux; elsewhere what :mod:`platform` knows)."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or platform.machine()
    name = info.get("model name", platform.processor() or platform.machine())
    flags = set(info.get("flags", "").split())
    simd = next((f for f in ("avx512f", "avx2", "sse4_2", "asimd") if f in flags), "")
    parts = [f"family {info['cpu family']} model {info['model']} stepping {info.get('stepping', '?')}"
             if "cpu family" in info else "", simd.replace("avx512f", "avx512")]
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
            parts.append(f"L2 {f.read().strip()} a core")
    except OSError:
        pass
    extra = ", ".join(p for p in parts if p)
    return f"{name} ({extra})" if extra else name


if __name__ == "__main__":
    print(cpu_model(), f"{cpus()}; core probe:", probe_text())
