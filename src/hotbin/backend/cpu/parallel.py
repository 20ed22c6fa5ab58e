"""Threads for the cpu kernels: a serial twin per kernel, a lock where numba needs one,
and how many per-thread partials a job gets.

What: :class:`Kernel` compiles one Python function twice, as a ``parallel=True``
kernel and as a serial twin, and calls the twin for inputs under
``2 * MIN_PER_THREAD`` elements.

Why: a parallel region costs a thread launch on every call (on a loaded 2-core
machine one took ~20 ms to start), which swamps small inputs. The twin computes
exactly what the threaded kernel does: outside ``parallel=True`` numba runs
``prange`` as ``range``, and the callers fix the number of parts, so each part
holds the same elements either way and the results are bitwise equal.

How: the twin is a new function object over the kernel's own code object,
globals, defaults and closure (``types.FunctionType``), named ``<name>_serial``.
numba keys its on-disk cache (``cache=True``) by qualified name, so the twin
never loads or overwrites the threaded kernel's machine code; sharing the
globals, it sees the same constants and helper kernels.

numba's "workqueue" threading layer aborts the process when two Python threads
enter parallel regions at once (omp and tbb do not). The layer is known only
once a parallel region has run, so until then every threaded call holds
``_PARALLEL_LOCK``; the first records the layer, and only on workqueue do later
calls keep taking the lock.
"""
from __future__ import annotations

import threading
import types

import numba

from ..._jit import njit

__all__ = ["Kernel", "MIN_PER_THREAD", "MAX_PARTIAL_BYTES", "nparts"]

# --- tuning (benchmarks/cpu_suite.py) ------------------------------------------
#: below this many elements per thread, fewer threads (launch cost dominates);
#: inputs under two threads' worth run the serial twin of a kernel
MIN_PER_THREAD = 1 << 15
#: a partial histogram this large or larger is not replicated per thread
MAX_PARTIAL_BYTES = 1 << 28

_PARALLEL_LOCK = threading.Lock()
_SERIALIZE = None  # whether threaded calls take the lock; None until a parallel region has run


class Kernel:
    """A numba kernel compiled twice: threaded, and a serial twin for small inputs.

    Use as a decorator; call as ``kernel(n, *args)`` with ``n`` the number of
    elements it will read (0 forces the twin).
    """

    def __init__(self, fn):
        self.threaded = njit(parallel=True, cache=True, nogil=True)(fn)
        twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial",
                                  fn.__defaults__, fn.__closure__)
        twin.__qualname__ = fn.__qualname__ + "_serial"
        self.serial = njit(cache=True, nogil=True)(twin)

    def __call__(self, n, *args):
        if n < 2 * MIN_PER_THREAD:
            return self.serial(*args)
        if _SERIALIZE is False:
            return self.threaded(*args)
        with _PARALLEL_LOCK:
            return _mark_layer(self.threaded(*args))


def _mark_layer(result):
    global _SERIALIZE
    if _SERIALIZE is None:
        _SERIALIZE = numba.threading_layer() == "workqueue"
    return result


def nparts(n: int, row_bytes: int) -> int:
    """Per-thread partials for ``n`` elements whose partial takes ``row_bytes``: one per
    thread, fewer when a thread would get under MIN_PER_THREAD or they would pass
    MAX_PARTIAL_BYTES."""
    t = numba.get_num_threads()
    t = min(t, max(1, n // MIN_PER_THREAD))
    return max(1, min(t, MAX_PARTIAL_BYTES // max(row_bytes, 1)))
