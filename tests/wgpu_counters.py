"""The fixture every wgpu test file runs under: both kinds of 64-bit global counters.

Imported by the wgpu test files after they have skipped where wgpu-py or an adapter is
missing (``from wgpu_counters import counters``: pytest collects fixtures from a module's names).
"""
import pytest

from hotbin.backend.wgpu import device as D


@pytest.fixture(autouse=True, params=["split", "atomic64"])
def counters(request, monkeypatch):
    """Every test runs with both kinds of 64-bit global counters (where the adapter has both)."""
    g = D.gpu()
    if request.param == "atomic64" and not g.has_atomic64:
        pytest.skip("adapter has no 64-bit atomics")
    monkeypatch.setattr(g, "atomic64", request.param == "atomic64")
    return request.param
