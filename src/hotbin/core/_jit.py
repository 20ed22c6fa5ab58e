"""numba, the one way hotbin uses it: cached where it can be, never at import.

Importing :mod:`hotbin` imports no numba and compiles nothing: backend modules
are imported on first use, and module-level kernels outside them are declared
with :func:`lazy`, compiled on their first call.

Kernels cache their machine code (numba's ``cache=True``) where numba finds a
writable place — beside the package, or ``$NUMBA_CACHE_DIR``, or the user's
cache directory — stamped with the sources of the whole package, not numba's one
file (:func:`_stamp_whole_package`). A read-only install with a read-only home has none; numba then
refuses ``cache=True`` at decoration time, and hotbin compiles those kernels
uncached instead (each new process compiles them again: slower to start, same
results).
"""
from __future__ import annotations

import functools
import os

__all__ = ["njit", "lazy"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # hotbin/, not core/


@functools.lru_cache(maxsize=1)
def package_stamp() -> bytes:
    """sha256 of every .py file of the package (names and contents), once per process."""
    import hashlib  # here, not at import: a new process's first histogram would wait for it
    h = hashlib.sha256()
    for root, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(root, f)
                h.update(os.path.relpath(path, _PACKAGE).encode())
                with open(path, "rb") as fh:
                    h.update(fh.read())
    return h.digest()


def _stamp_whole_package():
    """numba stamps a cached kernel with its own source file only, but the machine code of a
    kernel holds the kernels it calls from other modules (scatter.part_values inlines
    values.add_block): edit values.py, or upgrade hotbin in place (pip leaves the cache
    files it did not install), and the cached part_values would keep the old add_block. So
    hotbin's kernels are stamped with every module of the package (a change anywhere
    recompiles them once): numba's own locators, in their order, for hotbin's files only.
    The wheel's precompiled kernels (:mod:`hotbin.precompile`) carry the same stamp: the
    built package's files are the installed ones."""
    from numba.core import caching

    if any(getattr(c, "hotbin", False) for c in caching.CacheImpl._locator_classes):
        return

    def ours(base):
        class Locator(base):
            hotbin = True

            @classmethod
            def from_function(cls, py_func, py_file):
                if not os.path.abspath(py_file).startswith(_PACKAGE + os.sep):
                    return None
                return super().from_function(py_func, py_file)

            def get_source_stamp(self):
                return package_stamp()

        Locator.__name__ = f"Hotbin{base.__name__}"
        return Locator

    bases = (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, caching.UserWideCacheLocator)
    caching.CacheImpl._locator_classes[:0] = [ours(b) for b in bases]


def njit(fn=None, /, **options):
    """``numba.njit(**options)``, falling back to ``cache=False`` when no cache is writable.

    Use as ``@njit`` or ``@njit(nogil=True, cache=True)``.
    """
    if fn is None:
        return functools.partial(njit, **options)
    import numba

    if options.get("cache"):
        _stamp_whole_package()
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
