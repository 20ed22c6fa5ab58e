"""NumPy's installed test modules, loaded as fresh copies that call hotbin's functions.

Shared helper for the suites that run NumPy's own tests against hotbin (issue #13).
"""
import importlib.util
import pathlib
import types
import warnings

import numpy as np
import pytest

DISPATCH = "tests __array_function__ dispatch, a NumPy protocol hotbin's functions do not implement"


class NumpyWith(types.ModuleType):
    """``numpy`` with some functions replaced (set as attributes): every other name is NumPy's."""

    def __getattr__(self, name):
        return getattr(np, name)


def load(package, name, replace):
    """A fresh copy of ``numpy.<package>.tests.<name>`` whose ``np`` global (and directly
    imported names) use ``replace`` ({name: function}); NumPy's own module is untouched.
    Skips the calling test module when NumPy's tests are not installed."""
    path = pathlib.Path(np.__file__).parent.joinpath(*package.split("."), "tests", f"{name}.py")
    if not path.is_file():
        pytest.skip(f"NumPy's test files are not installed ({path} is missing)", allow_module_level=True)
    spec = importlib.util.spec_from_file_location(f"_hotbin_numpy_{package}_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():  # marks NumPy's own conftest registers (thread_unsafe, ...)
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        spec.loader.exec_module(mod)
    proxy = NumpyWith("numpy")
    vars(proxy).update(replace)
    mod.np = proxy
    for fn, impl in replace.items():
        if fn in vars(mod):
            setattr(mod, fn, impl)
    return mod
