"""NumPy's own cumsum tests, run against hotbin.cumsum on every backend (issue #13).

Fresh copies of NumPy's installed test modules (``numpy/lib/tests/test_function_base.py``'s
``TestCumsum`` and ``TestDiff``, ``test_nanfunctions.py``'s ``TestNanFunctions_CumSumProd``)
get ``np.cumsum`` replaced by hotbin's (tests/numpy_proxy.py). ``TestCumsum.test_basic``
takes the function as a parameter fixed at import, so it is called here with hotbin's;
the nan-function tests compare against ``stdfuncs``, whose ``cumsum`` becomes hotbin's.
No test is skipped (none of these tests ``__array_function__`` dispatch); the whole
module skips when NumPy's tests are not installed.
"""
import functools

import numpy as np
import pytest

import hotbin
from numpy_proxy import load


@pytest.fixture
def cumsum(backend):
    return functools.partial(hotbin.cumsum, backend=backend)


@pytest.fixture
def numpy_tests(cumsum):
    """NumPy's test modules with ``np.cumsum`` as hotbin's on this backend."""
    fb = load("lib", "test_function_base", {"cumsum": cumsum})
    nan = load("lib", "test_nanfunctions", {"cumsum": cumsum})
    return fb, nan


def test_numpy_TestCumsum_test_basic(numpy_tests, cumsum):
    numpy_tests[0].TestCumsum().test_basic(cumsum)


def test_numpy_TestDiff_test_prepend(numpy_tests):
    numpy_tests[0].TestDiff().test_prepend()


@pytest.mark.parametrize("name", ["test_keepdims", "test_out", "test_result_values", "test_empty"])
def test_numpy_TestNanFunctions_CumSumProd(numpy_tests, cumsum, name, monkeypatch):
    cls = numpy_tests[1].TestNanFunctions_CumSumProd
    monkeypatch.setattr(cls, "stdfuncs", [cumsum, np.cumprod])
    getattr(cls(), name)()
