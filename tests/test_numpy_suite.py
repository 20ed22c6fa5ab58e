"""NumPy's own histogram tests, run against hotbin (issue #13: a drop-in for NumPy).

NumPy's installed test modules ``numpy/lib/tests/test_histograms.py`` (all of it),
``test_twodim_base.py``'s ``TestHistogram2d`` and ``test_function_base.py``'s
``TestBincount`` are loaded as fresh copies (tests/numpy_proxy.py; NumPy's own
modules are left untouched) whose globals are patched: ``np`` becomes a proxy that
forwards every name to NumPy except the histogram functions, which are hotbin's,
and the names the modules import directly (``histogram``, ``histogramdd``, ...) are hotbin's too.
Their test classes are then collected here, unchanged, except the tests of
``__array_function__`` dispatch (a NumPy protocol hotbin's functions do not
take part in), skipped by name. Skipped as a whole when NumPy's tests are not
installed.
"""
import numpy as np
import pytest

import hotbin
from numpy_proxy import DISPATCH, load

HOTBIN = {name: getattr(hotbin, name)
          for name in ("histogram", "histogram2d", "histogramdd", "histogram_bin_edges", "bincount")}


def _load(name):
    """A fresh copy of ``numpy.lib.tests.<name>`` whose histogram functions are hotbin's."""
    return load("lib", name, HOTBIN)


_histograms = _load("test_histograms")
_twodim = _load("test_twodim_base")
_function_base = _load("test_function_base")

for _name, _cls in vars(_histograms).items():
    if _name.startswith("Test") and isinstance(_cls, type):
        globals()[_name] = type(_name, (_cls,), {"__module__": __name__})


class TestHistogram2d(_twodim.TestHistogram2d):
    @pytest.mark.skip(reason=DISPATCH)
    def test_dispatch(self):
        pass


class TestBincount(_function_base.TestBincount):
    pass


def test_suite_runs_against_hotbin():
    """The patched modules really call hotbin (the suite would test NumPy otherwise)."""
    for mod in (_histograms, _twodim, _function_base):
        assert mod.np.histogram is hotbin.histogram and mod.np.bincount is hotbin.bincount
        assert mod.np.histogramdd is hotbin.histogramdd and mod.np.zeros is np.zeros
    assert _histograms.histogram is hotbin.histogram and _histograms.histogramdd is hotbin.histogramdd
    assert _histograms.histogram_bin_edges is hotbin.histogram_bin_edges
    assert _twodim.histogram2d is hotbin.histogram2d
