"""The backend matrix: every test that takes ``backend`` runs once per backend.

A new backend joins the whole matrix by adding its name to ``hotbin.backend.NAMES``;
backends not usable on this machine are skipped with the reason.
"""
import importlib

import numpy as np
import pytest

from hotbin import backend as registry


def _usable(name):
    try:
        registry.load(name)
        return None
    except Exception as exc:  # missing package or device: skip with the reason
        return f"{name} backend unavailable: {exc}"


_REASONS = {name: _usable(name) for name in registry.NAMES}


@pytest.fixture(params=registry.NAMES)
def backend(request):
    """A usable backend name ('cpu', 'cuda', 'wgpu'); skips the others."""
    reason = _REASONS[request.param]
    if reason:
        pytest.skip(reason)
    return request.param


@pytest.fixture
def be(backend):
    """The backend module itself (for primitive-level tests)."""
    return importlib.import_module(f"hotbin.backend.{backend}")


def to_numpy(a):
    return registry.to_host(a)


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)
