// 1-D histograms: privatized shared-memory counters, the bin rule fused in.
//
// Kernel shells (CUB's layering): zero the block's private counters, consume
// the input in a grid-stride loop, merge the private counters into the 64-bit
// global result with one atomic per non-empty slot. Both barriers belong to
// the correctness contract.
//
// Slots: a block counts the slots [base, base + nslots) of the bin index. With
// `windows` W > 1, consecutive blocks b = W * v + w share the same part v of
// the input and count window w = [base + w * nslots, base + (w + 1) * nslots):
// bin counts beyond one block's shared memory cost one read from memory and
// W - 1 reads from L2. Block counters are 32-bit; the host keeps each block's
// share of one launch below 2^32 samples.
#include "hist_common.cuh"

// How a value becomes a slot.
enum { BIN_RULE = 0,         // exact rule of binning.py, linspace edges: multiply, then correct
       BIN_RAW = 1,          // the value is the slot (bincount, 16-bit value counts in windows)
       BIN_RAW_FULL = 2,     // the value is the slot and every value has one (8/16-bit counts)
       BIN_SEARCH = 3,       // exact rule of binning.py, any edges: bisection
       BIN_NEAREST = 4,      // BIN_RULE for a guess less than half a bin off (tau < 1/2), edges
                             // staged: RuleBin::nearest alone, no per-value test of the mode
       BIN_NEAREST_ALL = 5 };// as BIN_NEAREST, every value compared with its edge (tau = 1/2)

// Where a block keeps its counters.
enum { LAYOUT_LANES = 0,   // 32 copies, slot-major: lane l always hits bank l
       LAYOUT_COPIES = 1,  // `copies` copies of all slots, one per group of warps
       LAYOUT_GLOBAL = 2 };// no privatization: 64-bit global atomics

template <class T, bool WIDE> struct SlotOf { typedef unsigned type; };
template <class T> struct SlotOf<T, true> { typedef u64 type; };

extern __shared__ __align__(16) unsigned char smem[];

// A value's slot: the bin in [0, nb), or any slot >= nb for none.
template <class T, class CMP, int BINNER>
struct Binner {  // BIN_RAW, BIN_RAW_FULL
    typedef typename SlotOf<T, sizeof(T) == 8 && BINNER == BIN_RAW>::type slot_t;
    RuleBin<CMP, true> r;  // unused
    __device__ __forceinline__ slot_t operator()(T v) const { return (slot_t)v; }
};

template <class T, class CMP>
struct Binner<T, CMP, BIN_RULE> {
    typedef unsigned slot_t;
    RuleBin<CMP, true> r;
    __device__ __forceinline__ slot_t operator()(T v) const { return r(Widen<CMP, T>::of(v)); }
};

// BIN_NEAREST and BIN_NEAREST_ALL: RuleBin::nearest, with or without the shortcut.
template <class T, class CMP, bool SHORTCUT>
struct NearestBinner {
    typedef unsigned slot_t;
    RuleBin<CMP, true> r;
    __device__ __forceinline__ slot_t operator()(T v) const {
        return r.template nearest<SHORTCUT>(Widen<CMP, T>::of(v));
    }
};
template <class T, class CMP> struct Binner<T, CMP, BIN_NEAREST> : NearestBinner<T, CMP, true> {};
template <class T, class CMP> struct Binner<T, CMP, BIN_NEAREST_ALL> : NearestBinner<T, CMP, false> {};

template <class T, class CMP>
struct Binner<T, CMP, BIN_SEARCH> {
    typedef unsigned slot_t;
    RuleBin<CMP, false> r;
    __device__ __forceinline__ slot_t operator()(T v) const { return r(Widen<CMP, T>::of(v)); }
};

// Sets up the rule; stages the edge table (nb + 2 entries) in shared memory
// `sh_edges` when given.
template <class R, class CMP>
__device__ __forceinline__ void make_rule(R& r, const CMP* edges, unsigned nb, double glo,
                                          double gscale, double tau, CMP* sh_edges) {
    typedef typename GuessT<CMP>::type G;
    r.nb = nb;
    r.lo = edges[0];
    r.hi = edges[nb + 1];
    r.glo = (G)glo;
    r.gscale = (G)gscale;
    r.tau = (G)tau;
    r.near = tau <= 0.5;
    r.e = edges;
    if (sh_edges) {
        for (unsigned i = threadIdx.x; i <= nb + 1; i += blockDim.x) sh_edges[i] = edges[i];
        r.e = sh_edges;  // the caller's barrier publishes them
    }
}

// The counting functor: slot, window check, private counter. vector() counts the
// values of one 16-byte load, operator() one value (the walk's head and tail).
template <class T, class CMP, int BINNER, int LAYOUT>
struct CountOne {
    typedef Binner<T, CMP, BINNER> B;
    typedef typename B::slot_t slot_t;
    B bin;
    slot_t base, nslots;
    unsigned* c;     // COPIES: this thread's copy of the block counters
    unsigned lane4;  // LANES: this thread's lane * 4, the byte offset of its copy
    u64* out;        // GLOBAL: the result
    __device__ __forceinline__ void operator()(T v) {
        slot_t s = bin(v);
        if (LAYOUT == LAYOUT_LANES) {
            // One window from slot 0. Values in no slot go to the spare slot nslots,
            // which the flush skips: no branch around the atomic.
            if (BINNER != BIN_RAW_FULL) s = s < nslots ? s : nslots;
            bump((unsigned)s * 128u + lane4);
        } else {
            s -= base;
            if (s < nslots) {
                if (LAYOUT == LAYOUT_GLOBAL) atomicAdd(out + s, 1ull);
                else atomicAdd(c + s, 1u);
            }
        }
    }
    static __device__ __forceinline__ void bump(unsigned byte_offset) {
        atomicAdd(reinterpret_cast<unsigned*>(smem + byte_offset), 1u);
    }
    __device__ __forceinline__ void vector(const uint4& r) {
        if (BINNER == BIN_RAW_FULL && sizeof(T) == 1 && LAYOUT == LAYOUT_LANES) {
            // Bytes straight to the byte offsets of their lane's counters (the counters
            // start the dynamic shared memory): value * 128 | lane * 4, one shift and one
            // mask-and-or per byte, the base added by the atomic's addressing.
            const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                bump(((w[q] << 7) & 0x7f80u) | lane4);
                bump(((w[q] >> 1) & 0x7f80u) | lane4);
                bump(((w[q] >> 9) & 0x7f80u) | lane4);
                bump(((w[q] >> 17) & 0x7f80u) | lane4);
            }
        } else {
            const T* t = reinterpret_cast<const T*>(&r);
#pragma unroll
            for (int k = 0; k < (int)(16 / sizeof(T)); ++k) (*this)(t[k]);
        }
    }
};

// Registers: the tuning table's counting policies want 2048 resident threads per SM
// (32 registers each). The nearest-edge and raw binners are held to that (the
// compiler otherwise spends 41-50 on float32 loads in flight and halves the
// resident blocks); the walk and bisection keep what they need (up to 64).
template <int BINNER> struct CountBounds {
    enum { MIN_BLOCKS = BINNER == BIN_NEAREST || BINNER == BIN_NEAREST_ALL || BINNER == BIN_RAW_FULL ? 2 : 1 };
};

template <class T, class CMP, int BINNER, int LAYOUT, int UNROLL>
__global__ void __launch_bounds__(1024, CountBounds<BINNER>::MIN_BLOCKS)
hist_count(const T* __restrict__ x, i64 n, const CMP* __restrict__ edges, unsigned nb, double glo,
           double gscale, double tau, int stage_edges, u64 base, unsigned nslots,
           unsigned copies, unsigned windows, u64* __restrict__ out, i64 row_stride, u64 out_stride,
           const int* __restrict__ fold) {
    // Batched: grid row y counts the n values at x + y * row_stride into out + y * out_stride.
    // fold (one window only; else null): slot s is added to out[fold[s]] (-1: nowhere), the
    // value table of fold_lut applied as the block's counters are flushed.
    x += (i64)blockIdx.y * row_stride;
    out += (u64)blockIdx.y * out_stride;
    unsigned* counters = reinterpret_cast<unsigned*>(smem);
    unsigned stride = nslots | 1u;  // odd: copies start in different banks
    unsigned total = LAYOUT == LAYOUT_LANES ? (nslots + 1u) * 32u  // + the spare slot
                   : LAYOUT == LAYOUT_COPIES ? stride * copies : 0u;
    CMP* sh_edges = reinterpret_cast<CMP*>(smem + ((total * 4u + 15u) & ~15u));
    for (unsigned i = threadIdx.x; i < total; i += blockDim.x) counters[i] = 0;

    unsigned w = blockIdx.x % windows;
    typedef CountOne<T, CMP, BINNER, LAYOUT> F;
    F f;
    make_rule(f.bin.r, edges, nb, glo, gscale, tau, stage_edges ? sh_edges : (CMP*)0);
    f.base = (typename F::B::slot_t)(base + (u64)w * nslots);
    f.nslots = nslots;
    out += (u64)w * nslots;
    f.out = out;
    f.lane4 = (threadIdx.x & 31u) * 4u;
    f.c = counters + ((threadIdx.x >> 5) % (copies ? copies : 1u)) * stride;
    __syncthreads();  // counters zeroed, edges staged

    // the host stages the edges for the nearest-edge binners: read as shared memory
    if (BINNER == BIN_NEAREST || BINNER == BIN_NEAREST_ALL) f.bin.r.e = sh_edges;
    // only windows (the copies layout) have a second reader of the input
    for_each_vec<T, UNROLL>(x, n, f, blockIdx.x / windows, gridDim.x / windows,
                            LAYOUT == LAYOUT_COPIES && windows > 1);

    if (LAYOUT == LAYOUT_GLOBAL) return;
    __syncthreads();  // every private count is in
    for (unsigned s = threadIdx.x; s < nslots; s += blockDim.x) {
        unsigned sum = 0;
        if (LAYOUT == LAYOUT_LANES) {
#pragma unroll 8
            for (unsigned k = 0; k < 32u; ++k) sum += counters[s * 32u + ((k + s) & 31u)];
        } else {
            for (unsigned k = 0; k < copies; ++k) sum += counters[k * stride + s];
        }
        int b = fold ? fold[s] : (int)s;
        if (sum && b >= 0) atomicAdd(out + b, (u64)sum);
    }
}

// ---------------------------------------------------------------------------
// Weighted sums: one private copy per block (or global atomics when it does
// not fit). ACC: float64 sums, int64 sums, or fixed-point words (hi, lo).
// ---------------------------------------------------------------------------
enum { ACC_F64 = 0, ACC_I64 = 1, ACC_FIXED = 2 };

template <int ACC> struct AccOf { typedef double s_t; };
template <> struct AccOf<ACC_I64> { typedef u64 s_t; };
template <> struct AccOf<ACC_FIXED> { typedef u64 s_t; };

// W: the weights' type (float, double: F64 and FIXED; long long: I64).
// out: nslots sums (F64: double, I64: int64 as u64), or FIXED: hi words [0, nslots)
// then lo words [nslots, 2 nslots), each block's low words folded before the merge.
template <class T, class CMP, int BINNER, int ACC, class W, bool GLOBAL>
__global__ void __launch_bounds__(1024)
hist_sum(const T* __restrict__ x, const W* __restrict__ w, i64 n,
         const CMP* __restrict__ edges, unsigned nb, double glo, double gscale, double tau,
         int stage_edges, u64 base, unsigned nslots, double factor, double factor2,
         typename AccOf<ACC>::s_t* __restrict__ out) {
    typedef typename AccOf<ACC>::s_t S;
    typedef Binner<T, CMP, BINNER> B;
    unsigned words = ACC == ACC_FIXED ? 2u * nslots : nslots;
    S* acc = GLOBAL ? out : reinterpret_cast<S*>(smem);
    CMP* sh_edges = stage_edges
        ? reinterpret_cast<CMP*>(smem + (GLOBAL ? 0u : words * (unsigned)sizeof(S))) : (CMP*)0;
    if (!GLOBAL)
        for (unsigned i = threadIdx.x; i < words; i += blockDim.x) acc[i] = (S)0;
    B bin;
    make_rule(bin.r, edges, nb, glo, gscale, tau, sh_edges);
    __syncthreads();

    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        typename B::slot_t s = bin(x[i]) - (typename B::slot_t)base;
        if (s >= nslots) continue;
        if (ACC == ACC_FIXED) {
            i64 hi, lo;
            fixed_split(Widen<double, W>::of(w[i]), factor, factor2, hi, lo);
            atomicAdd((u64*)acc + s, (u64)hi);
            atomicAdd((u64*)acc + nslots + s, (u64)lo);
        } else {
            atomicAdd(acc + s, ACC == ACC_F64 ? (S)Widen<double, W>::of(w[i]) : (S)w[i]);
        }
    }
    if (GLOBAL) return;
    __syncthreads();
    for (unsigned s = threadIdx.x; s < nslots; s += blockDim.x) {
        if (ACC == ACC_FIXED) {
            u64 hi = (u64)acc[s], lo = (u64)acc[nslots + s];
            hi += (u64)((i64)lo >> 32);
            lo &= 0xffffffffull;
            if (hi) atomicAdd((u64*)out + s, hi);
            if (lo) atomicAdd((u64*)out + nslots + s, lo);
        } else {
            S v = acc[s];
            if (v != (S)0) atomicAdd(out + s, v);
        }
    }
}

// 8/16-bit integers: raw value counts -> bins through a value->bin table built
// by binning.BinRule.index on the host (exact by construction; -1: no bin).
__global__ void fold_lut(const u64* __restrict__ counts, const int* __restrict__ idx,
                         unsigned nvals, u64* __restrict__ out) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v < nvals) {
        u64 c = counts[v];
        int b = idx[v];
        if (c && b >= 0) atomicAdd(out + b, c);
    }
}
