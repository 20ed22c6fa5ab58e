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
#: chain through memory (results/probes-cpu.md, copies.py)
SUBS = 8
SUB_BYTES = 32 << 10
#: they fit SUB_BYTES: one copy makes a run of one bin a chain of float adds through memory
#: (benchmarks/probes/cpu_tally.py --sums; results/probes-cpu.md, copies.py)
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
