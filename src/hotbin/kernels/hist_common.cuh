// Shared pieces of hotbin's CUDA histogram kernels: the exact bin rule of
// hotbin/core/binning.py, the fixed-point split of hotbin/core/fixedpoint.py and 16-byte
// vector loads.
// No standard headers: this file compiles under NVRTC and nvcc alike.
#pragma once

typedef unsigned long long u64;
typedef long long i64;

// ---------------------------------------------------------------------------
// The bin rule (binning.BinRule.index): v lands in bin i iff
// e[i] <= v < e[i+1], the last bin closed; NaN and values outside land in none.
// Returns the bin in [0, nb) or nb for "no bin".
//
// The edge table (cuda/rule.py kernel_edges) holds nb + 2 entries: e[0..nb-1],
// then the least value above the closed end at [nb], then the closed end itself
// at [nb + 1] (lo = e[0], hi = e[nb + 1]). Bisection and the walk read e[0..nb-1]
// only; the nearest-edge rule below reads [nb] so that v <= hi is one more
// "v < e[j]" compare.
//
// Linspace edges: a guess by multiplication, x = (v - lo) * scale in bins, then
// corrected against the edges, as NumPy does. The host bounds the guess's error
// in bins (hotbin.kernel_rule.guess: the edges' distance from the ideal
// lo + i * width plus the rounding of x) and passes `tau`:
//   tau <= 1/2  the error is below half a bin, so the edge nearest to the value is
//               e[j], j = rint(x): v lands in bin j - 1 when v < e[j], else in
//               bin j (RuleBin::nearest). One edge loaded, one compare, no loop,
//               no branch: every value costs the same. Values farther than tau from
//               an edge (|x - j| > tau) are in bin floor(x) and load no edge
//               (tau = 1/2: every value loads its edge). The range test comes with
//               it: a value below lo has x <= 0 and lands in bin -1; at j = nb the
//               entry [nb] above hi keeps hi in the last bin and sends values above
//               it to nb; any other j outside [0, nb] (NaN, infinities, far
//               values) is clamped to nb + 1 and stays out.
//   tau > 1     no bound below half a bin (kernel_rule's mode 1, integer edges):
//               the guess is walked to the bin, out of line.
// Edges that are not a linspace are searched by bisection.
// ---------------------------------------------------------------------------
template <class CMP> struct GuessT { typedef double type; };
template <> struct GuessT<float> { typedef float type; };

// IEEE comparisons and widening that keep subnormals whatever the compiler's
// flush-to-zero setting (an edge at 0 has subnormal neighbours): explicit PTX
// without .ftz for float; doubles are never flushed.
template <class C> __device__ __forceinline__ bool le(C a, C b) { return a <= b; }
template <class C> __device__ __forceinline__ bool lt(C a, C b) { return a < b; }
template <> __device__ __forceinline__ bool le<float>(float a, float b) {
    unsigned r;
    asm("{.reg .pred p; setp.le.f32 p, %1, %2; selp.u32 %0, 1, 0, p;}" : "=r"(r) : "f"(a), "f"(b));
    return r;
}
template <> __device__ __forceinline__ bool lt<float>(float a, float b) {
    unsigned r;
    asm("{.reg .pred p; setp.lt.f32 p, %1, %2; selp.u32 %0, 1, 0, p;}" : "=r"(r) : "f"(a), "f"(b));
    return r;
}
template <class C, class T> struct Widen {
    static __device__ __forceinline__ C of(T v) { return (C)v; }
};
template <> struct Widen<double, float> {
    static __device__ __forceinline__ double of(float v) {
        double r;
        asm("cvt.f64.f32 %0, %1;" : "=d"(r) : "f"(v));
        return r;
    }
};

__device__ __forceinline__ float abs_of(float a) { return fabsf(a); }
__device__ __forceinline__ double abs_of(double a) { return fabs(a); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// rint(x) as an index for |x| < 2^22 (float) / 2^51 (double) without a conversion
// instruction: adding 1.5 * 2^(mantissa bits) rounds to an integer held in the
// low bits (ties to even: either neighbour is as near); r = that integer in G.
// The index is clamped to `cap`: the bits of x + M grow with x for x + M >= 0, so
// x >= 2^22 (2^51), +inf and positive NaNs give cap; x + M < M (bits below M's,
// or negative: sign bit set) and negative NaNs wrap, unsigned, past cap too.
__device__ __forceinline__ unsigned round_guess(float x, float& r, unsigned cap) {
    const float M = 12582912.0f;  // 1.5 * 2^23
    float y = __fadd_rn(x, M);
    r = __fsub_rn(y, M);
    unsigned j = (unsigned)__float_as_int(y) - (unsigned)__float_as_int(M);  // wraps, no overflow
    return j < cap ? j : cap;
}
__device__ __forceinline__ unsigned round_guess(double x, double& r, unsigned cap) {
    const double M = 6755399441055744.0;  // 1.5 * 2^52
    double y = __dadd_rn(x, M);
    r = __dsub_rn(y, M);
    u64 j = (u64)__double_as_longlong(y) - (u64)__double_as_longlong(M);
    return j < (u64)cap ? (unsigned)j : cap;
}

// The rule from a start k < nb: step down while v < e[k], up while e[k+1] <= v.
template <class CMP>
__device__ __forceinline__ unsigned walk_bin(const CMP* e, unsigned nb, CMP v, unsigned k) {
    while (k > 0 && lt(v, e[k])) --k;
    while (k < nb - 1 && le(e[k + 1], v)) ++k;
    return k;
}

// The rule by bisection for e[0] <= v <= e[nb]: the largest a < nb with e[a] <= v.
template <class CMP>
__device__ __forceinline__ unsigned search_bin(const CMP* e, unsigned nb, CMP v) {
    unsigned a = 0, b = nb;
    while (b - a > 1) {
        unsigned m = (a + b) >> 1;
        if (le(e[m], v)) a = m; else b = m;
    }
    return a;
}

// The rule from a start k < nb by walking (out of line: rules without a half-bin bound).
template <class CMP>
__device__ __noinline__ unsigned correct_guess(const CMP* e, unsigned nb, CMP v, unsigned k) {
    return walk_bin(e, nb, v, k);
}

// UNIFORM: edges from linspace, guess by multiplying; else binary search.
template <class CMP, bool UNIFORM>
struct RuleBin {
    typedef typename GuessT<CMP>::type G;
    const CMP* e;      // the edge table (above: nb + 2 entries), shared or global memory
    unsigned nb;
    CMP lo, hi;        // e[0], the closed end
    G glo, gscale, tau;
    bool near;         // tau <= 1/2: the guess is less than half a bin off

    // The rule when `near`: the bin, or a value >= nb (as unsigned) for none. No
    // branch: the edge load is the only instruction that depends on the data.
    // SHORTCUT false (tau = 1/2): every value is compared with its edge, and the
    // distance to it is not computed.
    template <bool SHORTCUT>
    __device__ __forceinline__ unsigned nearest(CMP v) const {
        G x = mul_rn(sub_rn((G)v, glo), gscale);
        G r;
        unsigned j = round_guess(x, r, nb + 1u);
        if (!SHORTCUT) return j - (unsigned)lt(v, e[j]);
        G t = sub_rn(x, r);  // exact sign: x < r iff t < 0
        bool below = abs_of(t) > tau ? t < (G)0 : lt(v, e[j]);
        return j - (unsigned)below;
    }

    __device__ __forceinline__ unsigned operator()(CMP v) const {
        if (UNIFORM && near) {
            unsigned b = nearest<true>(v);
            return b < nb ? b : nb;
        }
        bool in = le(lo, v) & le(v, hi);  // false for NaN
        if (!UNIFORM) return in ? search(v) : nb;
        G x = mul_rn(sub_rn((G)v, glo), gscale);  // v >= lo, so x >= 0 when in
        G r;
        unsigned k = round_guess(x, r, nb - 1u);  // a start for the walk; NaN, outside: any
        return in ? correct_guess(e, nb, v, k) : nb;
    }

    __device__ unsigned search(CMP v) const { return search_bin(e, nb, v); }
};

// fixedpoint.split for one weight: t = (w * f1) * f2 = w * 2^(s-32) with the two
// powers of two of fixedpoint.factors (2^(s-32) alone can overflow or be subnormal);
// hi = floor(t); lo = rint((t - hi) * 2^32), round half even; no contraction into FMAs.
__device__ __forceinline__ void fixed_split(double w, double f1, double f2, i64& hi, i64& lo) {
    double t = __dmul_rn(__dmul_rn(w, f1), f2);
    double h = floor(t);
    hi = (i64)h;
    lo = (i64)rint(__dmul_rn(__dsub_rn(t, h), 4294967296.0));
}

// ---------------------------------------------------------------------------
// Walking the input: a grid-stride loop over 16-byte vectors, UNROLL vectors in
// flight per thread, scalar head (to reach 16-byte alignment) and tail.
// f.vector(v) counts the elements of one 16-byte vector, f(value) one element;
// every element is counted once, in no particular order. The walk is split
// between `vgrid` virtual blocks; `keep` loads through L2 for a second reader
// (windows), otherwise loads stream (evict first).
// ---------------------------------------------------------------------------
__device__ __forceinline__ uint4 load16(const uint4* p, bool keep) {
    return keep ? __ldg(p) : __ldcs(p);
}

template <class T, int UNROLL, class F>
__device__ __forceinline__ void for_each_vec(const T* __restrict__ x, i64 n, F& f, unsigned vblock,
                                             unsigned vgrid, bool keep) {
    const int VEC = 16 / sizeof(T);
    i64 tid = (i64)vblock * blockDim.x + threadIdx.x;
    i64 nthreads = (i64)vgrid * blockDim.x;
    i64 head = (i64)(((16 - ((unsigned long long)x & 15)) & 15) / sizeof(T));
    if (head > n) head = n;
    if (tid < head) f(x[tid]);
    const uint4* v = reinterpret_cast<const uint4*>(x + head);
    i64 nv = (n - head) / VEC;
    i64 i = tid;
    for (; i + (UNROLL - 1) * nthreads < nv; i += UNROLL * nthreads) {
        uint4 r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) r[u] = load16(v + i + u * nthreads, keep);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) f.vector(r[u]);
    }
    for (; i < nv; i += nthreads) f.vector(load16(v + i, keep));
    i64 rest = head + nv * VEC;
    if (tid < n - rest) f(x[rest + tid]);
}

// ---------------------------------------------------------------------------
// Walking values and weights together: as for_each_vec, K = 16 / (the narrower
// type's size) pairs per step, read as 16-byte vectors of each (one or two per
// array), UNROLL steps in flight per thread. f.step(x vectors, w vectors) takes the
// K pairs of one step, f(value, weight) one pair (head and tail). When the two
// arrays cannot be 16-byte aligned at the same element (a slice of one of them),
// every pair is read as a scalar. Loads stream (each byte is read once).
// ---------------------------------------------------------------------------
template <class T, class W> struct PairStep {
    enum { K = 16 / (sizeof(T) < sizeof(W) ? sizeof(T) : sizeof(W)),
           VX = K * sizeof(T) / 16, VW = K * sizeof(W) / 16 };  // pairs, x vectors, w vectors
};

template <class T, class W, int UNROLL, class F>
__device__ __forceinline__ void for_each_pair(const T* __restrict__ x, const W* __restrict__ w, i64 n, F& f) {
    typedef PairStep<T, W> P;
    i64 tid = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 nthreads = (i64)gridDim.x * blockDim.x;
    i64 head = (i64)(((16 - ((unsigned long long)x & 15)) & 15) / sizeof(T));
    if (head > n) head = n;
    if (((unsigned long long)(w + head) & 15) != 0) head = n;  // no common alignment: all scalar
    for (i64 i = tid; i < head; i += nthreads) f(x[i], w[i]);
    const uint4* vx = reinterpret_cast<const uint4*>(x + head);
    const uint4* vw = reinterpret_cast<const uint4*>(w + head);
    i64 nv = (n - head) / P::K;
    i64 i = tid;
    for (; i + (UNROLL - 1) * nthreads < nv; i += UNROLL * nthreads) {
        uint4 rx[UNROLL][P::VX], rw[UNROLL][P::VW];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < P::VX; ++j) rx[u][j] = __ldcs(vx + (i + u * nthreads) * P::VX + j);
#pragma unroll
            for (int j = 0; j < P::VW; ++j) rw[u][j] = __ldcs(vw + (i + u * nthreads) * P::VW + j);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) f.step(rx[u], rw[u]);
    }
    for (; i < nv; i += nthreads) {
        uint4 rx[P::VX], rw[P::VW];
#pragma unroll
        for (int j = 0; j < P::VX; ++j) rx[j] = __ldcs(vx + i * P::VX + j);
#pragma unroll
        for (int j = 0; j < P::VW; ++j) rw[j] = __ldcs(vw + i * P::VW + j);
        f.step(rx, rw);
    }
    i64 rest = head + nv * P::K;
    if (tid < n - rest) f(x[rest + tid], w[rest + tid]);
}
