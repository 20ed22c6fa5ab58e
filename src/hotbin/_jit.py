"""numba, the one way hotbin uses it: cached where it can be, never at import.

Importing :mod:`hotbin` imports no numba and compiles nothing: backend modules
are imported on first use, and module-level kernels outside them are declared
with :func:`lazy`, compiled on their first call.

Kernels cache their machine code (numba's ``cache=True``) where numba finds a
writable place — beside the package, or ``$NUMBA_CACHE_DIR``, or the user's
cache directory. A read-only install with a read-only home has none; numba then
refuses ``cache=True`` at decoration time, and hotbin compiles those kernels
uncached instead (each new process compiles them again: slower to start, same
results).
"""
from __future__ import annotations

import functools

__all__ = ["njit", "lazy"]


def njit(fn=None, /, **options):
    """``numba.njit(**options)``, falling back to ``cache=False`` when no cache is writable.

    Use as ``@njit`` or ``@njit(nogil=True, cache=True)``.
    """
    if fn is None:
        return functools.partial(njit, **options)
    import numba

    if options.get("cache"):
        try:
            return numba.njit(**options)(fn)
        except RuntimeError as exc:  # "cannot cache function ...: no locator available"
            if "cache" not in str(exc):
                raise
            options = {**options, "cache": False}
    return numba.njit(**options)(fn)


def lazy(**options):
    """Decorator: a kernel compiled by :func:`njit` with ``options`` on its first call.

    For kernels of modules that ``import hotbin`` loads, so that the import
    stays free of numba. Thread-safe: numba serializes its own compilation, and
    two threads racing here at worst decorate twice.
    """
    def wrap(fn):
        compiled = None

        @functools.wraps(fn)
        def call(*args):
            nonlocal compiled
            if compiled is None:
                compiled = njit(fn, **options)
            return compiled(*args)

        return call

    return wrap
