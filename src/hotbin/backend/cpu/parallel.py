"""Threads for the cpu kernels: one serial numba kernel, run by a pool of Python threads.

What: :class:`Kernel` compiles a function once, ``nogil``. Its last two arguments
are ``t, nt``: its loop over independent pieces of work is written
``for u in range(t, n, nt)``, so a call on ``nt`` threads runs the function ``nt``
times at once, thread ``t`` taking pieces ``t, t + nt, ...``. Each piece is computed
alike however many threads run, so results are bitwise equal for any thread count
(the callers fix the number of pieces, e.g. per-thread partials). :func:`share` instead
hands out pieces to threads as they come free, for integer counts (any order adds up alike).

Why not numba's ``parallel=True``: its compile (the parfor passes) is slow for every
kernel, and each kernel needed a serial twin for small inputs (a parallel region is slow
to start on a loaded machine), so a first call on a fresh install waited long. One nogil
function per kernel compiles in a fraction of that, a pool thread starts quickly, and no
numba threading layer is involved (numba's "workqueue" layer aborts the process when
two Python threads enter parallel regions at once; the times: benchmarks/results/probes-cpu.md,
parallel.py).

Pool jobs never wait on other pool jobs (the caller runs piece 0 itself and waits for the
rest), so concurrent calls from several Python threads queue, never deadlock; a job must
not start another threaded kernel.

How many threads: :func:`threads`, by default the CPUs this process may run on;
``HOTBIN_NUM_THREADS`` (else ``NUMBA_NUM_THREADS``) or :func:`set_threads` change it.
"""
from __future__ import annotations

import itertools
import os
import threading
from typing import TYPE_CHECKING

from ...core._jit import njit

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

__all__ = ["Kernel", "each", "share", "PIECE", "MIN_PER_THREAD", "MAX_PARTIAL_BYTES", "nparts", "threads",
           "set_threads", "threads_for"]

# --- tuning (benchmarks/cpu_suite.py) ------------------------------------------
#: below this many elements per thread, fewer threads; inputs under two threads' worth run
#: on the calling thread alone. Handing a job to a pool thread and waiting for it costs
#: about what a thread counts a large block of values in; at 1 << 15 two threads ran slower
#: than one well past that (benchmarks/probes/cpu_threads.py; results/probes-cpu.md,
#: parallel.py)
MIN_PER_THREAD = 1 << 18
#: elements a piece of :func:`share`. A fixed half per thread waits on the slower half (a
#: half's memory, or a core another process keeps busy). The 2-D counts take pieces too: no
#: faster on an idle machine, a little faster with a core busy (results/heatmap-cpu-zen5.md);
#: their float sums and values keep fixed halves (:func:`each`; results/probes-cpu.md, parallel.py).
PIECE = 1 << 20
#: a partial histogram this large or larger is not replicated per thread
MAX_PARTIAL_BYTES = 1 << 28

ENV = "HOTBIN_NUM_THREADS"
_threads: int | None = None
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def _default_threads() -> int:
    env = os.environ.get(ENV) or os.environ.get("NUMBA_NUM_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def threads() -> int:
    """Threads the cpu kernels use."""
    global _threads
    if _threads is None:
        _threads = _default_threads()
    return _threads


def set_threads(n: int | None) -> int:
    """Use ``n`` threads (None: the default again); returns the previous count."""
    global _threads
    old = threads()
    _threads = None if n is None else max(1, int(n))
    return old


def _executor(n: int) -> ThreadPoolExecutor:
    """A pool of at least ``n`` threads (grown, never shrunk). A pool replaced by a larger
    one is not shut down: another caller may be submitting to it; its idle threads exit
    once it is garbage."""
    from concurrent.futures import ThreadPoolExecutor  # here: a small input's call never needs it

    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < n:
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="hotbin")
            _pool_size = n
        return _pool


def threads_for(n: int, most: int | None = None, per_thread: int | None = None) -> int:
    """Threads for ``n`` elements: ``min(threads(), n // per_thread)`` (MIN_PER_THREAD), at
    least 1, at most ``most``."""
    return max(1, min(threads(), n // (per_thread or MIN_PER_THREAD), most or threads()))


def _spread(n, job, most=None, per_thread=None):
    """job(t, nt) on ``nt = threads_for(n, most, per_thread)`` threads (this one included)."""
    nt = threads_for(n, most, per_thread)
    if nt == 1:
        return job(0, 1)
    pool = _executor(nt - 1)
    rest = [pool.submit(job, t, nt) for t in range(1, nt)]
    first = job(0, nt)
    for f in rest:
        f.result()
    return first


def each(n: int, count: int, piece) -> None:
    """``piece(u)`` for ``u`` in ``range(count)`` on threads as for ``n`` elements; for
    pieces that are whole nogil kernel calls (a thread's partial)."""
    def job(t, nt):
        for u in range(t, count, nt):
            piece(u)
    _spread(n, job)


def share(n: int, workers: int, piece, size: int | None = None) -> None:
    """``piece(lo, hi, t)`` for the pieces ``[lo, hi)`` of ``range(n)``, ``size`` (PIECE) elements each,
    or fewer so that each thread gets one, on at most ``workers`` threads: each thread ``t``
    takes the next piece when done with one, so a thread on a slower core, or reading slower
    memory, does fewer. Only for work whose result the order of its pieces leaves alike
    (integer counts into a partial per thread ``t``); float sums take :func:`each` (a fixed
    piece per partial)."""
    size = max(1, min(size or PIECE, -(-n // threads_for(n, workers))))
    count = -(-n // size)
    nxt = itertools.count()
    lock = threading.Lock()

    def job(t, nt):
        while True:
            with lock:
                u = next(nxt)
            if u >= count:
                return
            piece(u * size, min(n, (u + 1) * size), t)
    _spread(n, job, workers)


class Kernel:
    """A nogil numba kernel ``fn(*args, t, nt)`` run on several threads.

    Use as a decorator (``functools.partial(Kernel, per_thread=m)`` for a kernel whose
    threads each read at least ``m`` elements); call as ``kernel(n, *args)`` with ``n`` the
    number of elements it will read: ``threads_for(n, per_thread=m)`` threads run it (one, on
    the calling thread, for small inputs).
    """

    def __init__(self, fn, per_thread=None):
        self.fn = njit(cache=True, nogil=True)(fn)
        self.per_thread = per_thread

    def __call__(self, n, *args):
        return _spread(n, lambda t, nt: self.fn(*args, t, nt), per_thread=self.per_thread)


def nparts(n: int, row_bytes: int) -> int:
    """Per-thread partials for ``n`` elements whose partial takes ``row_bytes``: one per
    thread, fewer when a thread would get under MIN_PER_THREAD or they would pass
    MAX_PARTIAL_BYTES."""
    return max(1, min(threads_for(n), MAX_PARTIAL_BYTES // max(row_bytes, 1)))
