"""The kernel of :func:`hotbin.backend.cpu.reduce.minmax`: the least and greatest integer
keys of each thread's part of an array (a module of its own, so that small calls, which
NumPy answers, import no numba)."""
from __future__ import annotations

from functools import partial

from .parallel import Kernel

__all__ = ["ends", "PER_THREAD"]

#: a thread of the kernel reads at least this many elements: below that a handoff to a pool
#: thread costs more than the min and max it spares (results/probes-cpu.md, ends.py)
PER_THREAD = 1 << 19


@partial(Kernel, per_thread=PER_THREAD)
def ends(a, rest, shift, out, t, nt):
    """out[p] = (least, greatest) of part p of the integers ``a``, each ``v`` read as
    ``v ^ ((v >> shift) & rest)``: ``rest`` all but the sign bit for a float's sortable key,
    0 for integers."""
    parts = out.shape[0]
    n = a.size
    step = (n + parts - 1) // parts
    for p in range(t, parts, nt):
        src = a[p * step:min(n, (p + 1) * step)]  # indices from 0: no negative-index checks
        lo = hi = src[0] ^ ((src[0] >> shift) & rest)
        for k in range(src.size):
            v = src[k] ^ ((src[k] >> shift) & rest)
            lo = min(lo, v)
            hi = max(hi, v)
        out[p, 0] = lo
        out[p, 1] = hi
