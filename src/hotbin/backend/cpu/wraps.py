"""Count partials in uint8: :data:`COUNT_PARTIAL` counters whose wraps past 255 are recorded.

The 2-D count kernels (:mod:`.scatter`) add with :func:`add_one` / :func:`add_many`, each
thread recording the cells whose counter wrapped in its ``wraps`` (:func:`wrap_slots` long,
the count in wraps[0]); the fold (:func:`.partials._fold`: :func:`fold` on pieces of the cells on
every thread) adds WRAP for each (:func:`unwrap`).
"""
from __future__ import annotations

import numpy as np

from ...core._jit import njit

__all__ = ["COUNT_PARTIAL", "WRAP", "FOLD_BLOCK", "wrap_slots", "add_one", "add_many", "fold", "unwrap"]

#: counts go into uint8 partials: a 1024^2 grid is 1 MB a thread, which L2 holds (uint32: 4 MB,
#: in the L3 the VM shares). A counter that wraps past 255 records its cell in ``wraps`` (+256
#: each at the fold: :func:`unwrap`); a wrap is one add in 256 at most, a branch that is almost
#: never taken (results/probes-cpu.md, wraps.py)
COUNT_PARTIAL = np.dtype(np.uint8)
#: the counts one wrap of a COUNT_PARTIAL counter stands for
WRAP = 256


def wrap_slots(points: int) -> int:
    """The size of part_count's ``wraps`` for ``points`` points: its count, then one slot per
    WRAP counts at most."""
    return points // WRAP + 1


@njit(inline="always")
def add_one(h, i, wraps):
    """h[i] += 1, a wrap recorded in ``wraps`` (wraps[0]: how many; see COUNT_PARTIAL)."""
    v = h.dtype.type(h[i] + 1)
    h[i] = v
    if v == 0:
        n = wraps[0] + 1
        wraps[n] = i
        wraps[0] = n


@njit(inline="always")
def add_many(h, i, n, wraps):
    """h[i] += n (n >= 0), its wraps recorded in ``wraps``."""
    t = np.int64(h[i]) + n
    h[i] = h.dtype.type(t % WRAP)
    for _ in range(t // WRAP):
        q = wraps[0] + 1
        wraps[q] = i
        wraps[0] = q


@njit(nogil=True, cache=True)
def unwrap(total, wraps):
    """total[c] += WRAP for each cell c recorded in ``wraps`` (part_count's)."""
    for k in range(1, wraps[0] + 1):
        total[wraps[k]] += WRAP


#: counters :func:`fold` adds up at a time in uint32 (16 KB, in L1)
FOLD_BLOCK = 4096


@njit(nogil=True, cache=True)
def fold(out, lo, hi, total):
    """total[lo:hi] = the sum of the partials out[:, lo:hi] (2-D, uint8), FOLD_BLOCK counters
    at a time: the rows added into a uint32 block in L1 (a vector loop), which is stored only
    when not all 0 (pieces of the grid no point reached stay the OS's zero pages): a fraction
    of the time of NumPy's adds of each row into int64 (benchmarks/probes/cpu_call_parts.py)."""
    parts = out.shape[0]
    acc = np.empty(FOLD_BLOCK, np.uint32)
    for a in range(lo, hi, FOLD_BLOCK):
        m = min(hi, a + FOLD_BLOCK) - a
        s = acc[:m]
        row = out[0, a:a + m]
        for i in range(m):
            s[i] = row[i]
        for p in range(1, parts):
            row = out[p, a:a + m]
            for i in range(m):
                s[i] += row[i]
        nz = np.uint32(0)
        for i in range(m):
            nz |= s[i]
        if nz:
            t = total[a:a + m]
            for i in range(m):
                t[i] = s[i]
