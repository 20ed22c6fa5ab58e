// Shared pieces of hotbin's CUDA histogram kernels: the exact bin rule of
// hotbin/binning.py, the fixed-point split of hotbin/fixedpoint.py, 16-byte
// vector loads and the shared-memory primitives of a thread-block cluster.
// No standard headers: this file compiles under NVRTC and nvcc alike.
#pragma once

typedef unsigned long long u64;
typedef long long i64;

// ---------------------------------------------------------------------------
// The bin rule (binning.BinRule.index): v lands in bin i iff
// e[i] <= v < e[i+1], the last bin closed; NaN and values outside land in none.
// Returns the bin in [0, nb) or nb for "no bin".
//
// A guess by multiplication is accepted without touching the edges only when
// its fractional part is further than `tau` (in bins) from an integer: the host
// derives tau from the largest distance of the real edges from the ideal
// lo + i * width plus the rounding of the guess (cuda._guess_margin), so that
// inside that margin the guess provably satisfies the rule. Otherwise the guess
// is corrected against the edges array, as NumPy does. tau >= 1 disables the
// shortcut (no fractional part passes).
// ---------------------------------------------------------------------------
template <class CMP> struct GuessT { typedef double type; };
template <> struct GuessT<float> { typedef float type; };

template <class CMP>
struct RuleBin {
    const CMP* e;      // nb + 1 edges in the comparison dtype (shared or global memory)
    unsigned nb;
    CMP lo, hi;        // e[0], e[nb]
    typename GuessT<CMP>::type glo, gscale, tau;
    int uniform;

    __device__ __forceinline__ unsigned operator()(CMP v) const {
        typedef typename GuessT<CMP>::type G;
        if (!(v >= lo && v <= hi)) return nb;  // also NaN
        if (!uniform) {
            unsigned a = 0, b = nb;  // e[a] <= v; the answer is the largest such a below nb
            while (b - a > 1) {
                unsigned m = (a + b) >> 1;
                if (e[m] <= v) a = m; else b = m;
            }
            return a;
        }
        G x = ((G)v - glo) * gscale;
        G top = (G)(nb - 1);
        G c = x < (G)0 ? (G)0 : (x > top ? top : x);
        unsigned g = (unsigned)c;
        G f = x - (G)g;
        if (f > tau && f < (G)1 - tau) return g;  // provably inside bin g (see above)
        while (g > 0 && v < e[g]) --g;
        while (g < nb - 1 && v >= e[g + 1]) ++g;
        return g;
    }
};

// fixedpoint.split for one weight: t = w * 2^(s-32); hi = floor(t);
// lo = rint((t - hi) * 2^32), round half even; no contraction into FMAs.
__device__ __forceinline__ void fixed_split(double w, double factor, i64& hi, i64& lo) {
    double t = __dmul_rn(w, factor);
    double h = floor(t);
    hi = (i64)h;
    lo = (i64)rint(__dmul_rn(__dsub_rn(t, h), 4294967296.0));
}

// ---------------------------------------------------------------------------
// Walking the input: a grid-stride loop over 16-byte vectors, UNROLL vectors in
// flight per thread, scalar head (to reach 16-byte alignment) and tail.
// f(value) is called once per element, in no particular order.
// ---------------------------------------------------------------------------
template <class T, int UNROLL, class F>
__device__ __forceinline__ void for_each_vec(const T* __restrict__ x, i64 n, F& f) {
    const int VEC = 16 / sizeof(T);
    i64 tid = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 nthreads = (i64)gridDim.x * blockDim.x;
    i64 head = (i64)(((16 - ((unsigned long long)x & 15)) & 15) / sizeof(T));
    if (head > n) head = n;
    if (tid < head) f(x[tid]);
    const uint4* v = reinterpret_cast<const uint4*>(x + head);
    i64 nv = (n - head) / VEC;
    i64 i = tid;
    for (; i + (UNROLL - 1) * nthreads < nv; i += UNROLL * nthreads) {
        uint4 r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) r[u] = __ldcs(v + i + u * nthreads);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const T* t = reinterpret_cast<const T*>(&r[u]);
#pragma unroll
            for (int k = 0; k < VEC; ++k) f(t[k]);
        }
    }
    for (; i < nv; i += nthreads) {
        uint4 r = __ldcs(v + i);
        const T* t = reinterpret_cast<const T*>(&r);
#pragma unroll
        for (int k = 0; k < VEC; ++k) f(t[k]);
    }
    i64 rest = head + nv * VEC;
    if (tid < n - rest) f(x[rest + tid]);
}

// ---------------------------------------------------------------------------
// Thread-block clusters (sm_90): a cluster's blocks share their shared memory.
// ---------------------------------------------------------------------------
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

// The cluster-space address of shared address `a` (own block's) in block `rank`.
__device__ __forceinline__ unsigned cluster_map(unsigned a, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}

__device__ __forceinline__ void cluster_add(unsigned addr, unsigned v) {
    asm volatile("red.shared::cluster.add.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
