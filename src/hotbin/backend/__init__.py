"""Backends: one module per device family, all behind the same few primitives.

A backend module (``hotbin.backend.<name>``) provides:

``available() -> bool``
    usable on this machine (its dependencies import and a device exists).
``require() -> None``
    raise ``ModuleNotFoundError`` naming the install command, or ``RuntimeError``
    saying which device is missing.
``devices() -> list[str]``
    human-readable device names.
``asarray(a)`` / ``to_output(x, like)``
    take any array (NumPy, CuPy, torch) into the backend's array type; return a
    result as the same kind of array as ``like`` (NumPy in, NumPy out; CuPy in,
    CuPy out, on the same device). A device backend may leave host data too big
    to copy at once on the host: its primitives then stage it slab by slab.
``minmax(a) -> (lo, hi)``
    NumPy scalars of ``a.dtype``; NaN when ``a`` holds a NaN (as ``a.min()``).
``max_abs(w) -> float``
    ``max |w|`` (NaN when a weight is NaN).
``histogram(a, rule, weights=None, scale=None)``
    1-D histogram of the (flattened) values under a :class:`hotbin.binning.BinRule`.
    int64 counts; with weights, sums in float64 (int64 for integer weights); with
    ``scale`` (an int from :func:`hotbin.fixedpoint.scale_for`), the fixed-point
    integer words ``(2, nbins)`` int64 (:func:`hotbin.fixedpoint.split`, summed,
    low word folded), which the caller merges and combines.
``histogram_rows(a, rule)`` (optional)
    ``(N, nbins)`` int64 counts: one histogram per row of the 2-D ``a``, in one
    launch; without it the caller runs :func:`histogram` row by row.
``histogram2d(x, y, rx, ry, weights=None, scale=None) -> (grid, kept)``
    ``grid[ix, iy]`` under the two rules (words ``(2, nx, ny)`` with ``scale``),
    and the number of points that landed in a cell.
``bincount(x, length, weights=None)``
    counts (int64) or float64 sums of the non-negative integers ``x < length``
    (validated by the caller).
``cumsum(a, axis, od, exclusive)``
    prefix sums along ``axis`` (None: of the flattened values) in the dtype ``od``
    (resolved by the caller as NumPy's), in the association order of
    :func:`hotbin.backend.cpu.cumsum`: bitwise the cpu backend's result.

Backends are imported lazily: importing :mod:`hotbin` imports none of them.
"""
from __future__ import annotations

import importlib
import os

import numpy as np

NAMES = ("cpu", "cuda", "wgpu")
ENV = "HOTBIN_BACKEND"


def load(name: str):
    """The backend module ``name``, checked to be usable here."""
    if name not in NAMES:
        raise ValueError(f"backend: unknown backend {name!r}; choose one of {', '.join(NAMES)}")
    mod = importlib.import_module(f"{__name__}.{name}")
    mod.require()
    return mod


def available() -> list[str]:
    """Names of the backends usable on this machine, cpu first."""
    out = []
    for name in NAMES:
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
            if mod.available():
                out.append(name)
        except Exception:  # a broken optional install must not break the listing
            continue
    return out


def on_gpu(a) -> bool:
    """True for CuPy arrays and torch CUDA tensors (anything on an NVIDIA device)."""
    if hasattr(a, "__cuda_array_interface__"):
        return True
    is_cuda = getattr(a, "is_cuda", None)
    return bool(is_cuda) if isinstance(is_cuda, bool) else False


def to_host(a):
    """A NumPy array of any array (CuPy and torch are copied to the host); None stays None."""
    if a is None or isinstance(a, np.ndarray):
        return a
    if hasattr(a, "__cuda_array_interface__") and callable(getattr(a, "get", None)):  # CuPy
        return a.get()
    if hasattr(a, "detach"):  # torch
        return a.detach().cpu().numpy()
    return np.asarray(a)


def select(backend: str | None, *arrays):
    """Pick the backend: ``backend=``, else ``$HOTBIN_BACKEND``, else the inputs' device."""
    name = backend or os.environ.get(ENV) or None
    if name is None:
        name = "cuda" if any(on_gpu(a) for a in arrays if a is not None) else "cpu"
    return load(name)
