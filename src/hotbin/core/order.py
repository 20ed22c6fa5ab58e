"""Order statistics of the values in each cell: exact, the same bits under any order.

A cell's median or quantile needs all of its values, so the partial of a block is
its values themselves, grouped by cell: the cells and the values as *keys*
(:func:`to_keys`, unsigned integers whose order is the values' total order,
``-0.0`` below ``+0.0``) sorted by cell, then key (:func:`sort_pairs`): one uint64
``cell << b | key`` a value where both fit 64 bits (float32 and narrower values),
else ``(2, m)`` uint64 rows of cells and keys. Partials merge by sorting their concatenation (a merge of
sorted runs) and finish by picking each cell's ranks (:func:`picks`), so a
result depends on the multiset of each cell's values only: not on the point
order, the thread count, the chunking or the backend.

The picks are NumPy's own arithmetic, vectorized over the cells: the median is
``numpy.median``'s mean of the one or two middle values (in the values' dtype:
float32 values are added in float32, integers in float64), the quantile
``numpy.quantile(..., method="linear")``'s virtual index ``(n - 1) * q``, its
floor and the lerp of ``numpy.lib._function_base_impl._lerp``, with the dtypes
NumPy 2 gives them (a Python float ``q`` is a weak scalar: float32 values
interpolate in float32; a sequence of ``q`` is float64 and interpolates in
float64). So each cell is bit for bit what NumPy gives for its values, except the
sign of a zero in a cell that mixes ``-0.0`` and ``+0.0`` (NumPy's answer then
depends on where its partition left them; here ``-0.0`` sorts first).

Sorting, not selecting: a sort of keys does not care how many points share a
cell (a radix sort on the GPU, NumPy's vectorized sort on the host), so a hot
cell costs what a spread one does.
"""
from __future__ import annotations

import numpy as np

from .arrays import xp

__all__ = ["to_keys", "from_keys", "key_dtype", "packed", "sort_pairs", "sort_words", "merge_pairs", "picks", "check_q",
           "cell_bits"]


def key_dtype(dtype) -> np.dtype:
    """The unsigned integer dtype of the keys of values of ``dtype``."""
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def _top(dtype):
    u = key_dtype(dtype)
    return u.type(1 << (8 * u.itemsize - 1))


def to_keys(v):
    """Unsigned keys of the values ``v`` (1-D, no NaN) whose order is the values' order."""
    x = xp(v)
    bits = x.ascontiguousarray(v).view(key_dtype(v.dtype))
    top = _top(v.dtype)
    if v.dtype.kind == "f":
        return x.where((bits & top) != 0, ~bits, bits | top)
    if v.dtype.kind == "i":
        return bits ^ top
    return bits


def from_keys(k, dtype):
    """The values of ``dtype`` whose :func:`to_keys` are ``k``."""
    x = xp(k)
    dtype = np.dtype(dtype)
    k = k.astype(key_dtype(dtype), copy=False)
    top = _top(dtype)
    if dtype.kind == "f":
        bits = x.where((k & top) != 0, k ^ top, ~k)
    elif dtype.kind == "i":
        bits = k ^ top
    else:
        bits = k
    return x.ascontiguousarray(bits).view(dtype)


_U64 = np.uint64


def cell_bits(ncell: int) -> int:
    """Bits of a cell number below ``ncell``."""
    return max(1, (int(ncell) - 1).bit_length())


def packed(cbits: int, dtype) -> bool:
    """Whether a partial of values of ``dtype`` on cells of ``cbits`` bits is packed: one
    uint64 ``cell << b | key`` a value (b the key's bits), else ``(2, m)`` rows of cells and
    keys."""
    return cbits + 8 * np.dtype(dtype).itemsize <= 64


def sort_pairs(cells, keys, cbits: int):
    """The partial of the pairs ``(cells[i], keys[i])`` sorted by cell, then key.

    Packed (:func:`packed`): one sort of ``cell << b | key``. Else the keys sorted first,
    then their cells with the ranks, ``cell << r | rank``: a ``(2, m)`` uint64 array of two
    sorts of uint64, never a lexsort (which compares pairs)."""
    x = xp(keys)
    m = int(keys.shape[0])
    vbits = 8 * keys.dtype.itemsize
    if cbits + vbits <= 64:
        out = (cells.astype(_U64) << _U64(vbits)) | keys.astype(_U64)
        out.sort()
        return out
    out = x.empty((2, m), _U64)
    rbits = max(1, (m - 1).bit_length())
    if cbits + rbits > 64:  # beyond 2**44 values on a million cells
        order = x.lexsort(x.stack([keys, cells]))
        out[0], out[1] = cells[order], keys[order]
        return out
    order = x.argsort(keys)
    ranked = (cells[order].astype(_U64) << _U64(rbits)) | x.arange(m, dtype=_U64)
    ranked.sort()
    out[0] = ranked >> _U64(rbits)
    out[1] = keys[order][(ranked & _U64((1 << rbits) - 1)).astype(np.int64)]
    return out


def sort_words(cells, keys):
    """The packed partial of every point at once: ``cell << b | key`` where ``cells >= 0``, all
    ones elsewhere (sorted last, then cut off), so no pass compacts the points first."""
    x = xp(keys)
    vbits = _U64(8 * keys.dtype.itemsize)
    ok = cells >= 0
    words = x.where(ok, (cells.astype(_U64) << vbits) | keys.astype(_U64), _U64(0xFFFFFFFFFFFFFFFF))
    m = int(ok.sum())
    words.sort()
    return words[:m]


def merge_pairs(parts, cbits: int, kdtype):
    """Partials of :func:`sort_pairs` (a list) as one: packed words re-sorted (NumPy's stable sort,
    timsort, merges the sorted runs it finds); rows of cells and keys on the host merged into the
    largest part (:func:`_insert_sorted`), on a GPU sorted again."""
    if len(parts) == 1:
        return parts[0]
    x = xp(parts[0])
    if x is np and parts[0].ndim == 2:  # a stream of chunks: O(n) a merge, not a sort of all
        parts = sorted(parts, key=lambda p: -p.shape[1])
        out = parts[0]
        for p in parts[1:]:
            out = _insert_sorted(out, np.asarray(p))
        return out
    both = x.concatenate([x.asarray(p) for p in parts], axis=-1)
    if both.ndim == 1:
        both.sort(**({"kind": "stable"} if x is np else {}))
        return both
    return sort_pairs(both[0], both[1].astype(kdtype), cbits)


def _insert_sorted(a, b):
    """Two ``(2, n)`` partials sorted by (cell, key) as one: ``b``'s pairs inserted where ``a``'s
    order puts them, found by a binary search of the pairs as 16-byte big-endian strings (which
    order as the pairs do): ``O(n + m log n)``, where sorting both again costs ``O((n + m) log n)``."""
    def pairs(p):
        be = np.empty((p.shape[1], 2), ">u8")
        be[:, 0], be[:, 1] = p[0], p[1]
        return be.view("S16").reshape(-1)
    at = np.searchsorted(pairs(a), pairs(b), side="right")
    return np.insert(a, at, b, axis=1)


def check_q(q):
    """``q`` as NumPy takes it: ``(array, weak)``; ``weak`` for a Python int or float, which
    NumPy 2 treats as a weak scalar. A ValueError naming ``q`` unless real numbers in [0, 1]."""
    weak = type(q) in (int, float)
    try:
        qa = np.asanyarray(q)
    except (TypeError, ValueError):
        raise ValueError(f"q: expected a number in [0, 1] or a sequence of them, got {q!r}") from None
    if qa.dtype.kind not in "iuf" or qa.ndim > 1 or qa.size == 0:
        raise ValueError(f"q: expected a number in [0, 1] or a sequence of them, got {q!r}")
    if not bool(np.all((qa >= 0) & (qa <= 1))):  # NaN fails both
        raise ValueError(f"q: quantiles must be in [0, 1], got {q!r}")
    return qa, weak


def picks(part, ncell: int, dtype, q=None, weak=False):
    """``(nq + 1, ncell)`` float64 from a :func:`sort_pairs` partial: rows ``0 .. nq-1`` each
    cell's quantiles ``q`` (NumPy's ``method="linear"``), or its median when ``q`` is None;
    NaN where a cell has no value; the last row the number of values per cell."""
    x = xp(part)
    dtype = np.dtype(dtype)
    qs = [None] if q is None else list(np.asanyarray(q).reshape(-1))
    out = x.full((len(qs) + 1, ncell), np.nan)
    kd = key_dtype(dtype)
    # each cell's run found by a binary search of the sorted partial (not counted by a
    # bincount, whose atomics on a GPU would queue on a hot cell)
    first = x.arange(ncell, dtype=_U64)
    if part.ndim == 1:  # packed: cell << b | key
        keys = part
        bounds = x.searchsorted(part, first << _U64(8 * kd.itemsize))
    else:
        keys = part[1]
        bounds = x.searchsorted(part[0], first)
    bounds = x.concatenate([bounds, x.asarray([keys.shape[-1]], dtype=bounds.dtype)])
    n = (bounds[1:] - bounds[:-1]).astype(np.int64)
    out[-1] = n
    which = x.flatnonzero(n)
    if which.size == 0:
        return out
    nn = n[which]
    start = bounds[:-1][which].astype(np.int64)

    def at(rank):
        k = keys[start + rank]
        if part.ndim == 1 and kd.itemsize < 8:
            k = k & _U64((1 << (8 * kd.itemsize)) - 1)
        return from_keys(k, dtype)

    with np.errstate(all="ignore"):  # inf - inf in a cell is NumPy's NaN, without its warning
        for row, qk in enumerate(qs):
            out[row, which] = (_median(at, nn, x) if qk is None else _quantile(at, nn, qk, weak, dtype, x))
    return out


def _median(at, n, x):
    """numpy.median of each cell: the mean (numpy.mean's dtypes) of its one or two middle values."""
    lo, hi = at((n - 1) // 2), at(n // 2)
    two = x.mean(x.stack([lo, hi]), axis=0)
    one = x.mean(lo[None], axis=0)
    return x.where(n % 2 == 0, two, one).astype(np.float64)


def _quantile(at, n, q, weak, dtype, x):
    """numpy.quantile(values, q, method="linear") of each cell of ``n`` values, step by step as
    NumPy computes it for one array (``q`` a NumPy scalar of NumPy's dtype for ``q``)."""
    if q.dtype.kind in "iu":  # an integer virtual index: NumPy takes the value
        return at((n - 1) * int(q)).astype(np.float64)
    qd = q.dtype
    nm1 = (n - 1).astype(qd)  # NumPy's n - 1 is a Python int: a weak scalar, cast to q's dtype
    vi = nm1 * qd.type(q)
    prev = x.floor(vi)
    nxt = prev + qd.type(1)
    above = vi >= nm1
    pi = x.where(above, -1, prev.astype(np.int64))
    ni = x.where(above, -1, nxt.astype(np.int64))
    gamma = (vi - pi).astype(qd)
    a = at(x.where(pi < 0, n + pi, x.minimum(pi, n - 1)))
    b = at(x.where(ni < 0, n + ni, x.minimum(ni, n - 1)))
    diff = b - a
    if weak:  # gamma is a Python float: a weak scalar in NumPy's lerp
        t64 = gamma.astype(np.float64)
        td = dtype if dtype.kind == "f" else np.dtype(np.float64)
        t, omt, ge = t64.astype(td), (1.0 - t64).astype(td), t64 >= 0.5
    else:
        t, omt, ge = gamma, qd.type(1) - gamma, gamma >= 0.5
    lerp = a + diff * t
    alt = b.astype(lerp.dtype) - (diff * omt).astype(lerp.dtype)
    return x.where(ge, alt, lerp).astype(np.float64)
