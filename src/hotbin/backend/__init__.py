"""Backends: the protocol every device family implements, and the registry.

A backend is a package ``hotbin.backend.<name>`` listed in :data:`NAMES`; its
required names are the :class:`BackendModule` protocol. It declares:

``NAME``, ``INSTALL``
    its name and the command that installs its dependencies.
``DEVICE``
    ``"host"`` or ``"cuda"``: the arrays it takes (:mod:`hotbin.core.arrays` adapts
    every input to NumPy, or to CuPy for ``"cuda"``). Backends never inspect
    input types.
``CAPABILITIES``
    the optional primitives it implements (``"histogram_rows"``, ``"luma"``);
    the caller runs the portable path for those it lacks.
``claims(a) -> bool``
    whether it is the default for the array ``a`` (cuda: device arrays).
``available() -> bool``, ``require() -> None``, ``devices() -> list[str]``
    usable here; raise ``ModuleNotFoundError`` naming ``INSTALL`` or
    ``RuntimeError`` saying which device is missing; device names.
``prepare(a) -> array`` (optional)
    a NumPy array made ready: copied to the device, or left on the host to be
    staged slab by slab when it is too big.

and the primitives, on arrays adapted by :func:`hotbin.core.arrays.adapt`:

``minmax(a) -> (lo, hi)``
    NumPy scalars of ``a.dtype``; NaN when ``a`` holds a NaN (as ``a.min()``).
``max_abs(w) -> float``
    ``max |w|`` (NaN when a weight is NaN).
``sample_max_abs(w) -> float | None`` (optional)
    ``max |w|`` of a sample when it likely is the whole ``w``'s binade: the
    fixed-point scale is then guessed and confirmed by the sums (cuda).
``deterministic_sums(a, rule, w) -> array | None`` (optional, device backends)
    the float64 fixed-point sums of ``histogram(a, rule, w, fixed(scale))``
    finished, at the scale of the whole ``w``'s max ``|w|``, where the backend
    can guess and confirm that scale without waiting (:func:`hotbin.exec.local.weighted`
    asks for it through the executor's ``fixed_sums``).
``histogram(a, rule, weights=None, red=COUNT)``
    the partial of the reduction ``red`` (:mod:`hotbin.core.reductions`; the
    backend's accumulator is chosen by ``red.acc``) over the bins of the 1-D
    :class:`hotbin.core.binning.BinRule`: shape ``red.lead + (nbins,)``; with
    ``red.check`` it may add :func:`hotbin.core.reductions.with_seen`'s column.
``histogram_rows(a, rule)`` (capability ``"histogram_rows"``)
    ``(N, nbins)`` int64 counts, one histogram per row of the 2-D ``a``.
``histogram2d(x, y, rx, ry, weights=None, red=COUNT, by=None) -> (grid, kept)``
    the partial ``red.lead + (nx, ny)`` and the number of points in a cell
    (whatever their weight). Every accumulator of :mod:`hotbin.core.reductions`
    (``count``, ``f64``, ``i64``, ``fixed``, and the values accumulators
    ``mean``, ``min``, ``max`` with ``red.identity`` and ``red.center``).
    ``by=(codes, ncat)``: integer category codes, one per point; the partial
    is then ``red.lead + (ncat + 1, nx, ny)``, a point going to category
    ``code`` when ``0 <= code < ncat`` and to category ``ncat`` otherwise.
``cells2d(x, y, rx, ry) -> cells``
    the cell ``ix * ny + iy`` (int64, the layout of ``histogram2d``'s grid) of
    each point under the exact rule, ``-1`` for a point in none: what the
    order statistics of :mod:`hotbin.core.order` sort (wgpu: NotImplemented, the
    cpu backend bins them).
``sorted_pairs(x, y, rx, ry, weights, by=None) -> (partial, kept)`` (optional)
    the order statistics' sorted partial (:func:`hotbin.core.order.sort_pairs`) of the
    points with a value, fused (cpu: float32 weights), or NotImplemented: then
    ``cells2d`` and the portable sort of :mod:`hotbin.order_stats`.
``bincount(x, length, weights=None)``
    int64 counts, or float64 sums, of the non-negative integers ``x < length``.
``cumsum(a, axis, od, exclusive)``
    prefix sums in the association order of :mod:`hotbin.core.scan_order`: bitwise
    equal on every backend.
``luma_histogram(img)`` (capability ``"luma"``)
    ``(256,)`` / ``(N, 256)`` int64 counts of the luma levels of uint8 RGB(A).

A primitive returns ``NotImplemented`` for an input its kernels do not take (a
dtype, a rule too large); :func:`call` then runs the cpu backend's on host
copies, so no backend imports another. Backends are imported lazily: importing
:mod:`hotbin` imports none of them.

Choosing (:func:`name_for`): ``backend=``, else ``$HOTBIN_BACKEND``, else the backend
that claims the inputs, except that large NumPy inputs of ``histogram`` and ``heatmap``
go to the cuda backend where it is usable and measured faster (the thresholds are the
cuda backend's tuning data), for results whose bits are the same there. Small inputs
are decided without importing anything.

The common calls on a CuPy array (``histogram(x, n, (lo, hi))``, also with CuPy ``weights=`` and
``deterministic=True``) skip the front door's checks that change nothing for them:
:func:`device_rule`.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
import threading
from typing import Protocol, runtime_checkable

import numpy as np

from ..core.arrays import on_gpu, to_host
from ..core.binning import plain_rule
from .counting import counting

__all__ = ["BackendModule", "CAPABLE", "OPTIONAL", "NAMES", "ENV", "load", "available", "select", "name_for", "offloaded", "gpu_usable", "call",
           "device_rule", "on_gpu", "to_host"]

@runtime_checkable
class BackendModule(Protocol):
    """The names every backend package offers (a module satisfies it structurally); the
    optional ones are named by :data:`OPTIONAL` and by its ``CAPABILITIES`` (:data:`CAPABLE`)."""

    NAME: str
    INSTALL: str
    DEVICE: str
    CAPABILITIES: frozenset

    def claims(self, a) -> bool:
        """Whether the backend is the default for the array ``a``."""

    def available(self) -> bool:
        """Whether it is usable here (imports and finds its device)."""

    def require(self) -> None:
        """Raise, naming what to install or which device is missing, unless usable."""

    def devices(self) -> list[str]:
        """The names of its devices."""

    def minmax(self, a):
        """``(lo, hi)`` NumPy scalars of ``a.dtype`` (NaN when ``a`` holds one)."""

    def max_abs(self, w) -> float:
        """``max |w|`` (NaN when a weight is NaN)."""

    def histogram(self, a, rule, weights=None, red=None):
        """The partial of the reduction ``red`` over the bins of the 1-D ``rule``."""

    def histogram2d(self, x, y, rx, ry, weights=None, red=None, by=None):
        """``(partial, kept)`` over the cells of the rules ``rx``, ``ry`` (by category with ``by``)."""

    def cells2d(self, x, y, rx, ry):
        """The cell ``ix * ny + iy`` of each point (int64), -1 for none."""

    def bincount(self, x, length, weights=None):
        """int64 counts, or float64 sums, of the non-negative integers ``x < length``."""

    def cumsum(self, a, axis, od, exclusive=False):
        """Prefix sums in the association order of :mod:`hotbin.core.scan_order`."""


#: capability -> the primitive a backend declaring it offers
CAPABLE = {"histogram_rows": "histogram_rows", "luma": "luma_histogram"}
#: names a backend may offer: callers look them up with ``getattr(..., None)``
OPTIONAL = ("prepare", "sample_max_abs", "deterministic_sums", "bin_index", "sorted_pairs")

NAMES = ("cpu", "cuda", "wgpu")
ENV = "HOTBIN_BACKEND"
#: the backend that takes every input, and the inputs other backends return NotImplemented for
FALLBACK = "cpu"


def _module(name: str):
    mod = sys.modules.get(f"{__name__}.{name}") if name in NAMES else None
    if mod is not None:  # every call asks: imported once, then looked up
        return mod
    if name not in NAMES:
        raise ValueError(f"backend: unknown backend {name!r}; choose one of {', '.join(NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")


#: the primitives that may answer NotImplemented (see the module docstring)
PRIMITIVES = frozenset({"minmax", "max_abs", "histogram", "histogram_rows", "histogram2d", "cells2d", "bincount",
                        "cumsum", "luma_histogram"})


#: the counting primitives, made to follow every property of a rule (:mod:`.counting`)
COUNTING = frozenset({"histogram", "histogram_rows", "histogram2d"})


class Backend:
    """A loaded backend: its package's names, with primitives that fall back to cpu
    where the backend answers NotImplemented, and counts that follow every property of
    a rule (:func:`hotbin.backend.counting.counting`): every front door counts through here."""

    def __init__(self, mod):
        self.module = mod

    def __getattr__(self, attr):
        value = getattr(self.module, attr)
        fallback = attr in PRIMITIVES and self.module.NAME != FALLBACK
        if not fallback and attr not in COUNTING:
            return value

        def primitive(*args, **kwargs):
            # the module's function is looked up at each call
            if fallback:
                return call(self.module, attr, *args, **kwargs)
            return getattr(self.module, attr)(*args, **kwargs)

        primitive.__doc__ = value.__doc__
        if attr in COUNTING:
            primitive = counting(primitive, attr)
        self.__dict__[attr] = primitive
        return primitive

    def has(self, capability: str) -> bool:
        return capability in self.module.CAPABILITIES

    def __repr__(self) -> str:
        return f"<hotbin backend {self.module.NAME}>"


_LOADED: dict = {}


def load(name: str) -> Backend:
    """The backend ``name``, checked to be usable here."""
    mod = _module(name)
    mod.require()
    if name not in _LOADED:
        _LOADED[name] = Backend(mod)
    return _LOADED[name]


def available() -> list[str]:
    """Names of the backends usable on this machine, cpu first."""
    out = []
    for name in NAMES:
        try:
            if _module(name).available():
                out.append(name)
        except Exception:  # a broken optional install must not break the listing
            continue
    return out


#: host inputs smaller than this (all arrays together) stay with their claimant without a
#: look at the GPU: a small call imports nothing. At most every entry of the cuda backend's
#: ``tuning.OFFLOAD_BYTES`` (a test checks it).
OFFLOAD_FLOOR = 1 << 20
#: where the cuda backend is usable: ``[pid, bool]`` of the process that asked (CUDA made
#: ready in a parent is not usable in a forked child, which keeps its inputs' backend)
_GPU_PROBE: list = []
_GPU_LOCK = threading.Lock()


def gpu_usable() -> bool:
    """Whether the cuda backend can run here: CuPy imports and finds a device. Asked once
    per process (CuPy is imported then); ``False`` in a process forked after the question
    was asked, whose parent's CUDA context it cannot use."""
    with _GPU_LOCK:
        if not _GPU_PROBE:
            ok = _cupy_installed()
            if ok:
                try:
                    ok = bool(_module("cuda").available())
                except Exception:  # a broken optional install is no GPU
                    ok = False
            _GPU_PROBE[:] = [os.getpid(), ok]
        return _GPU_PROBE[1] and _GPU_PROBE[0] == os.getpid()


@functools.lru_cache(maxsize=None)
def _cupy_installed() -> bool:
    """Whether CuPy is installed (found, not imported): without it no input leaves the CPU
    and the cuda package is not even imported."""
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        return False


def _offload_bytes(op) -> float:
    """Host bytes from which ``op`` runs faster on the cuda backend (its tuning table)."""
    from .cuda.tuning import offload_bytes

    return offload_bytes(*op) if isinstance(op, tuple) else offload_bytes(op)


def offloaded(op, arrays) -> bool:
    """Whether the NumPy ``arrays`` of the operation ``op`` (its name, or ``(name, cells)``
    for a grid) go to the cuda backend: every array a NumPy array, together at least the
    cuda backend's ``tuning.offload_bytes(op)``, and the cuda backend usable here
    (:func:`gpu_usable`)."""
    if op is None:
        return False
    total = 0
    for a in arrays:
        if a is None:
            continue
        if not isinstance(a, np.ndarray):
            return False  # lists, device arrays, tables: the claimant decides
        total += a.nbytes
    return (total >= OFFLOAD_FLOOR and _cupy_installed() and total >= _offload_bytes(op)
            and gpu_usable())


def _claimant(arrays) -> str:
    """The first backend (after cpu) that claims one of ``arrays``, else cpu.

    Claims are asked only of backends whose package imports without their
    dependencies (a claim looks at the array, not the device)."""
    present = [a for a in arrays if a is not None and not isinstance(a, np.ndarray)]
    for name in NAMES[1:] if present else ():
        try:
            mod = _module(name)
        except ImportError:  # a broken optional install claims nothing
            continue
        for a in present:  # a loop, not any(): every call on a device array asks (small calls)
            if mod.claims(a):
                return name
    return FALLBACK


def name_for(backend: str | None, *arrays, offload=None) -> str:
    """The backend's name (checked to exist, not loaded: Dask workers load it):
    ``backend=``, else ``$HOTBIN_BACKEND``, else the one that claims the inputs, except
    that NumPy inputs of the operation ``offload`` go to the cuda backend when they are
    large enough for it to be faster there (:func:`offloaded`).

    Front doors pass ``offload`` (the operation's name, or ``(name, cells)``, as the cuda
    backend's ``tuning.offload_bytes`` takes it) only for results that are bitwise the
    same on every backend: counts, integer weights, sums with ``deterministic=True``;
    never float sums that atomics add in any order. ``HOTBIN_BACKEND=cpu`` keeps every
    input on the cpu.
    """
    name = backend or os.environ.get(ENV)
    if not name:
        name = _claimant(arrays)
        if name == FALLBACK and offloaded(offload, arrays):
            name = "cuda"
    _module(name)
    return name


def select(backend: str | None, *arrays, offload=None):
    """Pick and load the backend (:func:`name_for`)."""
    return load(name_for(backend, *arrays, offload=offload))


def call(be, op: str, *args, **kwargs):
    """``be.<op>(*args)``; where it returns NotImplemented, the cpu backend's on host copies."""
    out = getattr(be, op)(*args, **kwargs)
    if out is NotImplemented:
        cpu = load(FALLBACK).module
        out = getattr(cpu, op)(*map(_host, args), **{k: _host(v) for k, v in kwargs.items()})
    return out


def _host(v):
    """An argument for the cpu backend: arrays (also inside a tuple such as ``by``) on the host."""
    if isinstance(v, tuple):
        return tuple(map(_host, v))
    return to_host(v) if hasattr(v, "dtype") and hasattr(v, "shape") else v


def device_rule(backend, a, bins, range, weights=None):
    """The bin rule of ``hotbin.histogram(a, bins, range, weights=weights)`` for the common
    calls on CuPy arrays, built at once, or None: the general path's checks answer.

    The common calls: ``bins`` an int over a pair of Python numbers (:func:`hotbin.core.binning.plain_rule`,
    built once), no density or axis (the caller's test), integer or float values (bool warns on
    the general path), and the backend :func:`name_for` picks already loaded and taking device
    arrays as they are (``DEVICE == "cuda"``); ``weights`` None (counts) or a float32 / float64
    CuPy array of ``a``'s shape. The general path's other steps change nothing for them (a CuPy
    array is no dask collection and no NumPy-only input, adapting and restoring leave it as it
    is, a single in-memory block makes no partials to merge), and the host's time before the
    launch is what a one-call histogram of a large array waits for: the front door runs their op
    at once (:func:`hotbin.exec.local.device_histogram`).
    """
    cp = sys.modules.get("cupy")
    if cp is None or type(a) is not cp.ndarray or a.dtype.kind not in "iuf":
        return None
    if weights is not None and (type(weights) is not cp.ndarray or weights.shape != a.shape
                                or weights.dtype not in _FLOAT_WEIGHTS):
        return None
    be = _LOADED.get(backend or os.environ.get(ENV) or _claimant((a,)))
    if be is None or be.module.DEVICE != "cuda":
        return None
    rule = plain_rule(a.dtype, bins, range)
    return None if rule is None or rule.exact is not None else rule


#: weights :func:`device_rule` takes as they are (others: the general path converts them)
_FLOAT_WEIGHTS = (np.dtype(np.float32), np.dtype(np.float64))
