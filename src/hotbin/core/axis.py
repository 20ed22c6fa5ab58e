"""Histogram axes: the edges of one axis as UHI's ``PlottableAxis``.

:class:`Axis` holds NumPy's edges (values and dtype) and a label, and reads as
UHI's sequence of ``(lo, hi)`` bins with plain-interval :class:`Traits`;
:func:`same_edges` is the one test of whether two axes bin alike (equal edges,
equal dtype), used by ``==`` and by :class:`hotbin.hist.Histogram`'s merges.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Axis", "Traits", "same_edges"]


@dataclass(frozen=True)
class Traits:
    """UHI axis traits: hotbin axes are plain intervals."""

    circular: bool = False
    discrete: bool = False


class Axis:
    """One axis: its edges (NumPy's, value and dtype), a label, UHI's sequence of ``(lo, hi)``."""

    def __init__(self, edges, label: str | None = None):
        edges = np.asarray(edges)
        if edges.ndim != 1 or edges.size < 2:
            raise ValueError(f"edges: expected at least two edges in a 1-D array, got shape {edges.shape}")
        self._edges = edges
        self.label = label

    @property
    def edges(self) -> np.ndarray:
        return self._edges.copy()

    @property
    def centers(self) -> np.ndarray:
        e = self._edges.astype(np.float64)
        return (e[:-1] + e[1:]) / 2

    @property
    def widths(self) -> np.ndarray:
        return np.diff(self._edges.astype(np.float64))

    @property
    def traits(self) -> Traits:
        return Traits()

    def __len__(self) -> int:
        return self._edges.size - 1

    def __getitem__(self, index: int) -> tuple[float, float]:
        n = len(self)
        i = int(index)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"bin {index} out of range for an axis of {n} bins")
        return float(self._edges[i]), float(self._edges[i + 1])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Axis) and same_edges(self._edges, other._edges)

    __hash__ = None

    def __repr__(self) -> str:
        lab = f", label={self.label!r}" if self.label else ""
        return f"Axis({len(self)} bins from {self._edges[0]} to {self._edges[-1]}{lab})"


def same_edges(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two edges arrays are the same: dtype, shape and values."""
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
