"""The order statistics' words kernel (kernels/order.cu) run on the host: CI has no GPU, so the
kernel's arithmetic is compiled with g++ behind a few CUDA stand-ins (one thread a block, so a
block's count is the thread's own) and compared with the reference path bit for bit: each axis's
bin by :meth:`BinRule.index`, the category, the value's key (:func:`hotbin.core.order.sort_words`).
The GPU runs the same source (tests marked cuda)."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import hotbin
from hotbin.core import order
from hotbin.core.binning import cell_rule

KERNEL = Path(hotbin.__file__).parent / "kernels" / "order.cu"

HARNESS = r"""
#include <cmath>
#include <cstring>
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
struct D3 { unsigned x; };
static D3 blockIdx{0}, threadIdx{0}, blockDim{1}, gridDim{1};
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline int __syncthreads_count(bool p) { return p ? 1 : 0; }
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) { auto o = *a; *a += v; return o; }
using std::isnan;
#include "KERNEL"
#define RUN(NAME, C) extern "C" void NAME(const float* x, const float* y, const float* w, const long long* code, \
    const C* ex, int nex, int nbx, int tx, const C* ey, int ney, int nby, int ty, long long ngrid, long long ncat, \
    long long n, unsigned long long* words, unsigned long long* kept) { \
    packed_words<float, float, C, C>(x, y, w, code, ex, nex, nbx, tx, ey, ney, nby, ty, ngrid, ncat, n, words, kept); }
RUN(run64, double)
RUN(run32, float)
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++ to build the host stand-in")
    d = tmp_path_factory.mktemp("kernel")
    (d / "harness.cpp").write_text(HARNESS.replace("KERNEL", str(KERNEL)))
    subprocess.run([cxx, "-O1", "-shared", "-fPIC", "-std=c++17", str(d / "harness.cpp"), "-o", str(d / "lib.so")],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(d / "lib.so"))


def _words(lib, x, y, w, rx, ry, code, ncat):
    p = ctypes.c_void_p
    ex, ey = (np.ascontiguousarray(r.cmp) for r in (rx, ry))
    fn = lib.run64 if ex.dtype == np.float64 else lib.run32
    words, kept = np.empty(x.size, np.uint64), np.zeros(1, np.uint64)
    c = np.zeros(1, np.int64) if code is None else np.ascontiguousarray(code, np.int64)
    ints = [ctypes.c_int(v) for v in (ex.size, rx.nbins, rx.tail, ey.size, ry.nbins, ry.tail)]
    fn(*(a.ctypes.data_as(p) for a in (x, y, w, c, ex)), *ints[:3], ey.ctypes.data_as(p), *ints[3:],
       ctypes.c_longlong(rx.nbins * ry.nbins), ctypes.c_longlong(ncat), ctypes.c_longlong(x.size),
       words.ctypes.data_as(p), kept.ctypes.data_as(p))
    words.sort()
    return words[:int(np.searchsorted(words, np.uint64(0xFFFFFFFFFFFFFFFF)))], int(kept[0])


def _reference(x, y, w, rx, ry, code, ncat):
    ix, iy = rx.index(x), ry.index(y)
    c = np.where((ix < 0) | (iy < 0), -1, ix * ry.nbins + iy)
    inside = c >= 0
    kept = int(inside.sum())
    if code is not None:
        inside &= (code >= 0) & (code < ncat)
        c = code * (rx.nbins * ry.nbins) + c
    c = np.where(inside & ~np.isnan(w), c, -1)
    return order.sort_words(c, order.to_keys(w)), kept


@pytest.mark.parametrize("trial", range(24))
def test_words_kernel_equals_the_reference(lib, trial):
    """Random grids (power-of-2 cells over (0, 8), whose edges float32 values hit exactly, and
    ranges a few ulps wide whose last cells are empty), values on edges and outside, NaN and
    infinities, NaN / signed-zero / infinite weights, categories with codes out of range."""
    rng = np.random.default_rng(trial)
    n = int(rng.integers(1, 4000))
    lo, hi = sorted(rng.normal(0, 3, 2).tolist())
    nx, ny = int(rng.integers(1, 300)), int(rng.integers(1, 300))
    if trial % 3 == 1:
        lo, hi, nx = 0.0, 8.0, 2 ** int(rng.integers(0, 8))
    if trial % 7 == 0:
        hi = lo + 1e-6 * abs(lo + 1)
    rx, ry = cell_rule(nx, lo, hi, "x", bool(trial % 2)), cell_rule(ny, lo - 1, hi + 1, "y", trial % 3 == 0)
    x = rng.uniform(lo - 0.5, hi + 0.5, n).astype(np.float32)
    y = rng.uniform(lo - 1.5, hi + 1.5, n).astype(np.float32)
    k = min(n, rx.nbins + 1)
    x[:k] = rx.edges[:k].astype(np.float32)
    x[rng.integers(0, n, 3)] = [np.nan, np.inf, -np.inf]
    w = rng.normal(0, 10, n).astype(np.float32)
    w[rng.integers(0, n, 4)] = [np.nan, 0.0, -0.0, np.inf]
    code, ncat = (None, 0) if trial % 2 else (rng.integers(-1, 5, n), 4)
    got, want = _words(lib, x, y, w, rx, ry, code, ncat), _reference(x, y, w, rx, ry, code, ncat)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]
