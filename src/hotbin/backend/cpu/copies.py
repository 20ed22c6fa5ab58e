"""How many interleaved copies of its counters (or sums) a cpu thread adds to, and how the
copies are added up: no numba here, so that the small path (:mod:`.small`) takes the same
order of float additions as the kernels (:mod:`.count1d`) without importing them.
"""
from __future__ import annotations

import numpy as np

__all__ = ["SUBS", "SUB_BYTES", "SUM_SUBS", "copies", "add_rows"]

# --- tuning (benchmarks/probes/cpu_tally.py) ------------------------------------
#: counts go to SUBS interleaved copies of the counters while they fit SUB_BYTES (L1), SUBS
#: points a step: SUBS independent chains of adds, so a hot bin (a constant input) is not one
#: chain through memory. 5M values into 256 bins, one core of the 2-core AMD EPYC VM, medians
#: of 21 alternations: float32 uniform / narrow / constant 7.6 / 7.4 / 7.3 ms with 4 copies
#: a point at a time, 5.1 / 4.4 / 4.6 with 8 copies 8 points a step
SUBS = 8
SUB_BYTES = 32 << 10
#: weighted 1-D sums go to SUM_SUBS interleaved copies of the sums, SUM_SUBS points a step, while
#: they fit SUB_BYTES: 20M float64 values and weights into 256 bins, one thread, medians of 7
#: alternations (benchmarks/probes/cpu_tally.py --sums --n 20000000 --rounds 7): uniform / narrow /
#: constant 24.0 / 35.8 / 75.1 ms into one copy a point at a time (a run of one bin is a chain of
#: float adds through memory), 24.7 / 19.9 / 25.6 into 4 copies, 20.8 / 26.5 / 42.0 into 2,
#: 43.0 / 21.6 / 21.6 into 8
SUM_SUBS = 4


def copies(width: int, itemsize: int = 4, most: int = SUBS) -> int:
    """Interleaved copies of ``width`` counters of ``itemsize`` bytes: the most, a power of 2
    up to ``most``, that fit SUB_BYTES."""
    nsub = most
    while nsub > 1 and width * itemsize * nsub > SUB_BYTES:
        nsub //= 2
    return nsub


def add_rows(rows: np.ndarray) -> np.ndarray:
    """The sum of the rows of the 2-D ``rows``, added one row after another in order (float
    sums: one fixed association, which :mod:`.small` repeats)."""
    total = rows[0].copy()
    for r in rows[1:]:
        total += r
    return total
