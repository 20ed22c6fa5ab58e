"""CUDA kernels run on the host: CI has no GPU, so a kernel's source is compiled with g++ behind a
few CUDA stand-ins and compared with a reference bit for bit; the GPU runs the same source (tests
marked cuda). The order statistics' words kernel (kernels/order.cu, one thread a block, so a
block's count is the thread's own) against the reference path: each axis's bin by
:meth:`BinRule.index`, the category, the value's key (:func:`hotbin.core.order.sort_words`). The
linked views' pass (kernels/crossfilter.cu: a block's threads as threads, ``__syncthreads`` a
barrier, shared memory not zeroed) against NumPy masks, in its three layouts of counts."""
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

KERNELS = Path(hotbin.__file__).parent / "kernels"

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
#include "KERNELS/order.cu"
#define RUN(NAME, C) extern "C" void NAME(const float* x, const float* y, const float* w, const long long* code, \
    const C* ex, int nex, int nbx, int tx, const C* ey, int ney, int nby, int ty, long long ngrid, long long ncat, \
    long long n, unsigned long long* words, unsigned long long* kept) { \
    packed_words<float, float, C, C>(x, y, w, code, ex, nex, nbx, tx, ey, ney, nby, ty, ngrid, ncat, n, words, kept); }
RUN(run64, double)
RUN(run32, float)
"""


def _build(tmp_path_factory, source, std):
    """The shared library of a harness ``source`` (``KERNELS`` the kernels' folder), built by g++;
    a skip where there is no g++, a failure (with the compiler's words) where it does not build."""
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++ to build the host stand-in")
    d = tmp_path_factory.mktemp("kernel")
    (d / "harness.cpp").write_text(source.replace("KERNELS", str(KERNELS)))
    got = subprocess.run([cxx, "-O1", "-shared", "-fPIC", f"-std={std}", "-pthread", str(d / "harness.cpp"),
                          "-o", str(d / "lib.so")], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr[-2000:]
    return ctypes.CDLL(str(d / "lib.so"))


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return _build(tmp_path_factory, HARNESS, "c++17")


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


PASS_HARNESS = r"""
#include <barrier>
#include <thread>
#include <vector>
#include <cstring>
struct D3 { unsigned x = 0; };
static thread_local D3 threadIdx;
static D3 blockIdx, blockDim, gridDim;
static std::barrier<>* bar;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__
static inline void __syncthreads() { bar->arrive_and_wait(); }
static inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline double __ll2double_rn(long long v) { return (double)v; }
static inline double __ull2double_rn(unsigned long long v) { return (double)v; }
extern "C" { unsigned int hist[1 << 16]; }
#include "KERNELS/crossfilter.cu"
typedef unsigned long long u64;
extern "C" int run(unsigned grid, unsigned block, unsigned copies, const u64* bcol, const int* btype,
    const double* blo, const double* bhi, const u64* bbit, int nb, const int* codes, const unsigned char* keep,
    long long nkeep, u64 cat_bit, u64 box_bit, const u64* pbin, const u64* pown, const unsigned* pbase, int np,
    u64 n, unsigned char* state, u64* out) {
    if ((size_t)pbase[np] * copies > sizeof(hist) / 4) return 1;
    gridDim.x = grid; blockDim.x = block;
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        for (auto& h : hist) h = 0xDEADBEEFu;  // shared memory starts as anything
        std::barrier<> here(block);
        bar = &here;
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < block; ++t)
            ts.emplace_back([=] { threadIdx.x = t; crossfilter_pass(bcol, btype, blo, bhi, bbit, nb, codes, keep,
                nkeep, cat_bit, box_bit, pbin, pown, pbase, np, copies, n, state, out); });
        for (auto& t : ts) t.join();
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def pass_lib(tmp_path_factory):
    return _build(tmp_path_factory, PASS_HARNESS, "c++20")  # std::barrier


_DTYPES = [np.float64, np.float32, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.mark.parametrize("copies", [4, 1, 0], ids=["shared copies", "one copy", "global atomics"])
@pytest.mark.parametrize("trial", range(4))
def test_crossfilter_pass_equals_numpy_masks(pass_lib, copies, trial):
    """Columns of every dtype (NaN, infinities and brush ends among the values), range brushes
    (two of them one bit: the box), a category brush, and panels whose rows fall in a bin or in
    none: each row's state byte (bit 0: it fails no brush but the box; bit 1: none) and each
    panel's counts of the rows failing no brush but its own, as NumPy masks give them; rows
    split unevenly over 3 blocks of 32 threads."""
    rng = np.random.default_rng(100 + trial)
    n = int(rng.integers(1, 3000))
    u64p, p = ctypes.c_uint64, ctypes.c_void_p
    cols, lows, highs = [], [], []
    for k in range(4):
        dt = np.dtype(_DTYPES[(3 * trial + k) % len(_DTYPES)])
        if dt.kind == "f":
            v = rng.normal(0, 20, n).astype(dt)
            v[rng.integers(0, n, 3)] = [np.nan, np.inf, -np.inf]
        else:
            info = np.iinfo(dt)
            v = rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(dt)
        lo, hi = sorted(float(t) for t in rng.normal(0, 15, 2))
        if dt.kind != "f":  # whole ends within the column's values
            lo, hi = (float(t) for t in np.clip(np.round([lo, hi]), max(info.min, -100), min(info.max, 100)))
        elif trial % 2:  # ends the column's float32 values can equal
            lo, hi = (float(t) for t in np.array([lo, hi]).astype(dt))
        ends = rng.random(n)
        v[ends < 0.15] = lo
        v[ends > 0.85] = hi  # a sixth of the rows on each end
        cols.append(np.ascontiguousarray(v))
        lows.append(lo)
        highs.append(hi)
    bits = [1, 2, 4, 4]  # the last two: the box's x and y
    box_bit, cat_bit = 4, 8
    codes = rng.integers(-1, 6, n).astype(np.int32)
    keep = (rng.random(5) < 0.6).astype(np.uint8)
    nbins = [int(rng.integers(1, 40)), int(rng.integers(1, 600))]
    binned = [rng.integers(0, b + 1, n).astype(np.uint16) for b in nbins]  # b: in no bin
    own = [1, 2 | cat_bit]  # the first panel's column brush 1, the second's brush 2 and the categories
    base = np.cumsum([0] + nbins).astype(np.uint32)
    state = np.zeros(n, np.uint8)
    out = np.zeros(int(base[-1]), np.uint64)
    tab = lambda v, dt: np.ascontiguousarray(np.array(v, dt))  # noqa: E731
    args = [tab([c.ctypes.data for c in cols], np.uint64), tab([_DTYPES.index(c.dtype.type) for c in cols], np.int32),
            tab(lows, np.float64), tab(highs, np.float64), tab(bits, np.uint64)]
    pins = [codes, keep, tab([b.ctypes.data for b in binned], np.uint64), tab(own, np.uint64), base, state, out]
    rc = pass_lib.run(ctypes.c_uint(3), ctypes.c_uint(32), ctypes.c_uint(copies), *(a.ctypes.data_as(p) for a in args),
                      ctypes.c_int(4), codes.ctypes.data_as(p), keep.ctypes.data_as(p), ctypes.c_longlong(keep.size),
                      u64p(cat_bit), u64p(box_bit), *(a.ctypes.data_as(p) for a in pins[2:5]), ctypes.c_int(2),
                      u64p(n), state.ctypes.data_as(p), out.ctypes.data_as(p))
    assert rc == 0
    mask = np.zeros(n, np.uint64)
    for c, lo, hi, bit in zip(cols, lows, highs, bits):
        with np.errstate(invalid="ignore"):
            ok = (c.astype(np.float64) >= lo) & (c.astype(np.float64) < hi)
        mask |= np.where(ok, 0, bit).astype(np.uint64)
    kept = (codes >= 0) & (codes < keep.size) & (keep[np.clip(codes, 0, keep.size - 1)] == 1)
    mask |= np.where(kept, 0, cat_bit).astype(np.uint64)
    want_state = ((mask & ~np.uint64(box_bit)) == 0).astype(np.uint8) | (2 * (mask == 0)).astype(np.uint8)
    np.testing.assert_array_equal(state, want_state)
    for k, (b, o) in enumerate(zip(nbins, own)):
        rows = (mask & ~np.uint64(o)) == 0
        want = np.bincount(binned[k][rows], minlength=b + 1)[:b]
        np.testing.assert_array_equal(out[base[k]:base[k + 1]].astype(np.int64), want, err_msg=f"panel {k}")
