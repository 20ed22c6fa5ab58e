"""The Executor and backend protocols: every executor and every backend package offers the
methods they list, each defined by the implementation itself (not the protocol's stub)."""
import inspect

import numpy as np
import pytest

from hotbin import backend as registry
from hotbin.core.binning import histogram_rule
from hotbin.exec.executor import Executor
from hotbin.exec.local import Local

#: Executor methods with a default in the protocol (an implementation may inherit them)
DEFAULTS = {"scale_guess", "finite_extents", "fixed_sums"}


def _members(proto):
    return sorted(n for n, v in vars(proto).items() if inspect.isfunction(v) and not n.startswith("_"))


def test_protocols_list_their_methods_with_a_docstring():
    for proto in (Executor, registry.BackendModule):
        names = _members(proto)
        assert len(names) >= 10, (proto, names)
        for n in names:
            doc = getattr(proto, n).__doc__
            assert doc and doc.strip(), f"{proto.__name__}.{n} has no docstring"
    assert {"run", "whole", "blockwise", "rules", "restore"} <= set(_members(Executor))
    assert {"histogram", "histogram2d", "bincount", "cumsum", "minmax"} <= set(_members(registry.BackendModule))


def _executors():
    yield Local(registry.load("cpu"))
    da = pytest.importorskip("dask.array")
    from hotbin.exec.dask import Dask

    yield Dask(None, da.zeros(4, chunks=2))


def test_every_executor_implements_the_protocol():
    for ex in _executors():
        assert isinstance(ex, Executor)
        for n in _members(Executor):
            if n in DEFAULTS:
                continue
            own = getattr(type(ex), n)
            assert own is not getattr(Executor, n), f"{type(ex).__name__}.{n} is the protocol's stub"
        assert isinstance(ex.lazy, bool)


def test_an_incomplete_executor_is_not_one():
    class Half:
        lazy = False

        def run(self, plan, *arrays):
            return ()

    assert not isinstance(Half(), Executor)


@pytest.mark.parametrize("name", registry.NAMES)
def test_every_backend_package_implements_the_protocol(name):
    mod = registry._module(name)  # imports without its device's dependencies
    assert isinstance(mod, registry.BackendModule)
    missing = [n for n in _members(registry.BackendModule) + ["NAME", "INSTALL", "DEVICE", "CAPABILITIES"]
               if not hasattr(mod, n)]
    assert not missing
    assert mod.NAME == name and mod.DEVICE in ("host", "cuda")
    for cap in mod.CAPABILITIES:
        assert callable(getattr(mod, registry.CAPABLE[cap])), (name, cap)


def test_the_loaded_backend_is_one_and_counts_as_numpy():
    be = registry.load("cpu")
    # the wrapper forwards its module's names (Python 3.12's isinstance does not call __getattr__)
    assert isinstance(be.module, registry.BackendModule)
    assert all(callable(getattr(be, n)) for n in _members(registry.BackendModule))
    x = np.array([0.1, 0.5, 0.5, 0.9, 2.0])
    rule = histogram_rule(x, 4, (0, 1))
    np.testing.assert_array_equal(be.histogram(x, rule), np.histogram(x, 4, (0, 1))[0])


def test_plain_counts_run_through_the_executor():
    """weighted's counts without weights are an Op run by ``ex.run`` like every other sum, and
    the Op is data: it pickles (a Dask graph carries no closure)."""
    import pickle

    from hotbin.exec import ops
    from hotbin.exec.local import weighted

    ran = []

    class Recording(Local):
        def run(self, plan, *arrays):
            ran.append(plan)
            return super().run(plan, *arrays)

    x = np.random.default_rng(1).random(1000)
    rule = histogram_rule(x, 16, (0, 1))
    (h,) = weighted(Recording(registry.load("cpu")), ops.Op(ops.histogram, (rule,), (16,)), [x], None, False)
    assert len(ran) == 1 and isinstance(ran[0], ops.Op)
    back = pickle.loads(pickle.dumps(ran[0]))
    assert back.kernel is ops.histogram and back.shape == (16,) and back.rules[0].nbins == 16
    np.testing.assert_array_equal(h, np.histogram(x, 16, (0, 1))[0])
