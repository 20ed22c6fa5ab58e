"""``DataArray.hotbin`` registered as soon as xarray is imported, without importing it.

xarray has no entry point for accessors, and ``import hotbin`` must not import
xarray (it costs a large share of a second), so :func:`install` registers the
accessor at once when xarray is already loaded, and otherwise puts a finder on
``sys.meta_path`` that lets the real finder find xarray and, once xarray's own
code has run, imports :mod:`hotbin.xarray` (which registers it) and steps aside.
So ``da.hotbin`` works after ``import hotbin`` whichever of the two is imported
first; ``import hotbin.xarray`` registers it explicitly.
"""
from __future__ import annotations

import importlib.abc
import sys
import warnings

__all__ = ["install"]


def install() -> None:
    """Register the accessor now if xarray is loaded, else as soon as it is."""
    if sys.modules.get("xarray") is not None:  # None: import xarray is blocked, nothing to do
        _register()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def _register() -> None:
    try:
        import hotbin.xarray  # noqa: F401  (registers on import)
    except Exception as e:  # a broken accessor must not break ``import xarray``
        warnings.warn(f"hotbin: DataArray.hotbin is not available: {e}", RuntimeWarning, stacklevel=2)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader the other finders give xarray."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "xarray":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


class _Loader(importlib.abc.Loader):
    """xarray's own loader, then the registration; the module keeps the real loader."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
        _register()
