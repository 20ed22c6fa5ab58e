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
// 16-bit integers whose bins are a shift of the value (cuda/rule.py shift_rule):
// slot = ((v ^ flip) - lo) >> shift, no edge and no value table; flip (0x8000
// for int16, read as its unsigned bits) makes the key grow with the value. A key
// below lo wraps past every slot; keys past the last bin shift to nslots or
// more: both go to the spare slot nslots, which the flush skips.
//
// Counters: `copies` C (a power of two <= 32) interleaved copies, copy
// c = lane & (C - 1). HALF = false: 32-bit counters, slot s of copy c at word
// s * C + c. HALF = true: 16-bit counters two to a word (65536 bins in 128 KiB,
// one block per SM), slot s of copy c in half s & 1 of word (s >> 1) * C + c.
// A 16-bit counter wraps after 65535 counts; the thread whose add wraps it sees
// that in the word the atomic returns and moves the lost 65536 to the result:
// a low half that wraps also carried 1 into the high half (slot s + 1), taken
// back there (and when the whole word wrapped, the high half lost 65536 too).
// Modular 64-bit adds keep every bin exact, whatever the order.
//
// A vector of 8 equal values (a constant region) is one add of 8: 32 lanes on
// one word serialize, 8 adds each would cost 8 times that.
// ---------------------------------------------------------------------------
template <bool HALF, bool FULL>
struct ShiftCount {
    unsigned flip2, lo, shift, nslots;  // flip2: flip in both halves of a 32-bit word
    unsigned stride;  // bytes between a copy's consecutive words: 4 * copies
    unsigned char* c;  // this thread's copy: the counters' bytes + 4 * (lane & (copies - 1))
    u64* out;
    // k counts of slot s wrapped its 16-bit counter (`now`: the word after the add).
    __device__ __noinline__ void spill(unsigned s, unsigned now, unsigned k) const {
        if (s >= nslots) return;  // the spare slot
        atomicAdd(out + s, 65536ull);
        // a low half's carry: out of the high half again, unless that wrapped too (now < k)
        if (!(s & 1u) && s + 1u < nslots) atomicAdd(out + s + 1u, now < k ? 65535ull : ~0ull);
    }
    // The slot of a 16-bit key (FULL: every key has one, lo = 0).
    __device__ __forceinline__ unsigned slot(unsigned key) const {
        if (FULL) return key >> shift;
        unsigned s = (key - lo) >> shift;
        return s < nslots ? s : nslots;
    }
    // Adds k counts to slot s. HALF: returns the word before the add times `mul`, the factor
    // that moves slot s's half to the top 16 bits (2^16 for the low half, 1 for the high):
    // (old + k * add) * mul = old * mul + k * 2^16, whose top half is below k iff the add
    // wrapped the counter (integer multiplies, not the ALU pipe that bounds this kernel).
    __device__ __forceinline__ unsigned bump(unsigned s, unsigned k, unsigned& mul) const {
        if (HALF) {
            unsigned add = (s & 1u) * 0xffffu + 1u;  // 1, or 1 << 16 for the high half
            mul = 65537u - add;
            return atomicAdd(reinterpret_cast<unsigned*>(c + (s >> 1) * stride), add * k);
        }
        atomicAdd(reinterpret_cast<unsigned*>(c + s * stride), k);
        mul = 0u;
        return 0u;
    }
    __device__ __forceinline__ void one(unsigned key, unsigned k) {
        unsigned s = slot(key), mul;
        unsigned old = bump(s, k, mul);
        if (HALF && old * mul + (k << 16) < (k << 16)) spill(s, old + k * (65537u - mul), k);
    }
    __device__ __forceinline__ void operator()(unsigned short v) { one(((unsigned)v ^ flip2) & 0xffffu, 1u); }
    // The 8 values of a vector: 8 atomics in flight, then one test of their words (a use of
    // each atomic's word right after it would hold the warp for its latency, value by value).
    __device__ __forceinline__ void vector(const uint4& r) {
        unsigned w[4] = {r.x ^ flip2, r.y ^ flip2, r.z ^ flip2, r.w ^ flip2};
        unsigned rot = __funnelshift_l(w[0], w[0], 16);
        if (((w[0] ^ w[1]) | (w[0] ^ w[2]) | (w[0] ^ w[3]) | (w[0] ^ rot)) == 0u) {
            one(w[0] & 0xffffu, 8u);  // 8 equal values
            return;
        }
        unsigned old[8], mul[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) old[j] = bump(slot(j & 1 ? w[j >> 1] >> 16 : w[j >> 1] & 0xffffu), 1u, mul[j]);
        if (!HALF) return;
        bool any = false;
#pragma unroll
        for (int j = 0; j < 8; ++j) any |= old[j] * mul[j] + 65536u < 65536u;
        if (any) {
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                if (old[j] * mul[j] + 65536u < 65536u)
                    spill(slot(j & 1 ? w[j >> 1] >> 16 : w[j >> 1] & 0xffffu), old[j] + (65537u - mul[j]), 1u);
            }
        }
    }
};

template <bool HALF, bool FULL, int UNROLL>
__global__ void __launch_bounds__(1024, 1)
hist_shift(const unsigned short* __restrict__ x, i64 n, unsigned flip, unsigned lo, unsigned shift,
           unsigned nslots, unsigned copies, u64* __restrict__ out) {
    unsigned* counters = reinterpret_cast<unsigned*>(smem);
    // slots and the spare, as words per copy, padded so that every warp of the flush is whole
    unsigned per = HALF ? (nslots + 2u) >> 1 : nslots + 1u;
    unsigned total = (per * copies + 31u) & ~31u;
    for (unsigned i = threadIdx.x; i < total; i += blockDim.x) counters[i] = 0;
    ShiftCount<HALF, FULL> f;
    f.flip2 = flip | (flip << 16);
    f.lo = lo;
    f.shift = shift;
    f.nslots = nslots;
    f.stride = copies * 4u;
    f.c = smem + 4u * (threadIdx.x & 31u & (copies - 1u));
    f.out = out;
    __syncthreads();

    for_each_vec<unsigned short, UNROLL>(x, n, f, blockIdx.x, gridDim.x, false);

    __syncthreads();
    // Flush: the copies of a word are `copies` consecutive words, read by as many consecutive
    // lanes (no bank conflict) and summed across them by shuffles.
    unsigned lg = __ffs(copies) - 1u;
    for (unsigned i = threadIdx.x; i < total; i += blockDim.x) {
        unsigned v = counters[i];
        unsigned a = HALF ? v & 0xffffu : v, b = HALF ? v >> 16 : 0u;
        for (unsigned d = 1; d < copies; d <<= 1) {
            a += __shfl_xor_sync(0xffffffffu, a, d);
            if (HALF) b += __shfl_xor_sync(0xffffffffu, b, d);
        }
        if (i & (copies - 1u)) continue;
        unsigned s = HALF ? (i >> lg) << 1 : i >> lg;
        if (a && s < nslots) atomicAdd(out + s, (u64)a);
        if (HALF && b && s + 1u < nslots) atomicAdd(out + s + 1u, (u64)b);
    }
}

// ---------------------------------------------------------------------------
// Weighted sums. Shell as hist_count: zero the block's private sums, consume
// (value, weight) pairs as 16-byte vectors of each (for_each_pair), merge the
// private sums into the result. ACC: float64 sums, int64 sums, or fixed-point
// words (hi, lo).
//
// Private sums: `copies` C (a power of two <= 32) interleaved copies of every
// slot and of one spare slot for values in no bin, the 8-byte word of (s, c) at
// s * C + c, c = lane & (C - 1): lanes of one warp that hit one slot hit C
// different words (a 64-bit add in shared memory is a compare-and-swap loop on
// sm_90, so lanes on one word retry), and with C >= 16 each half-warp's 8-byte
// words sit in 16 different bank pairs. FIXED: three planes of 32-bit words at
// the same indices, each a native atomic add (no compare-and-swap loop): the hi
// words' low halves, their high halves, the low words. The thread whose add
// carries out of a low word adds that 2^32 to the hi word's low half, in the same
// add as its own part, and the thread whose add carries out of that half adds
// 2^32 to the high half; the hi words are whole again mod 2^64 (exact: they fit).
// GLOBAL: no private sums, 64-bit atomics straight into the result (slots beyond
// shared memory).
//
// Runs: each thread adds consecutive pairs of one slot in registers and adds the
// run's sum to the shared word when the slot changes (a constant column costs one
// shared add per thread, not one per value). Sums of one slot are therefore added
// in another order than value by value: float64 sums were never ordered (atomics);
// integer and fixed-point sums are exact in any order.
// ---------------------------------------------------------------------------
enum { ACC_F64 = 0, ACC_I64 = 1, ACC_FIXED = 2 };

// The bits of |w| as an unsigned integer: they order NaN above infinity above every
// finite value (max |w|, fixedpoint.scale_for); integer weights (ACC_I64) have none.
template <class W> struct AbsBits { typedef unsigned type; static const unsigned mask = 0x7fffffffu; };
template <> struct AbsBits<double> { typedef u64 type; static const u64 mask = 0x7fffffffffffffffull; };
template <> struct AbsBits<long long> { typedef unsigned type; static const unsigned mask = 0u; };

template <class W> __device__ __forceinline__ typename AbsBits<W>::type abs_bits(W v) {
    typedef typename AbsBits<W>::type U;
    return sizeof(W) == sizeof(U) ? *reinterpret_cast<const U*>(&v) & AbsBits<W>::mask : (U)0;
}

// out = max(out, m over the block): lanes folded by shuffles, warps in shared memory, one
// atomic per block. Every thread of the block calls it (a barrier).
template <class U> __device__ __forceinline__ void block_max(U m, U* out) {
    __shared__ U warp_max[32];
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) m = max(m, (U)__shfl_xor_sync(0xffffffffu, m, d));
    if ((threadIdx.x & 31u) == 0) warp_max[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (unsigned k = 1; k < blockDim.x / 32u; ++k) m = max(m, warp_max[k]);
        if (m) atomicMax(out, m);
    }
}

// The words of a fixed-point scale guessed on the device (sample_scale, read by hist_sum and
// fixed_finish; hotbin/backend/cuda/sums.py GUESS_*): the factors (float64 bits), the scale
// s, the state, the sample's max |w| (float64 bits) and the sums' max |w| (AbsBits, `seen`).
enum { GUESS_F1 = 0, GUESS_F2 = 1, GUESS_SCALE = 2, GUESS_STATE = 3, GUESS_MAX = 4, GUESS_SEEN = 5 };
// no guess (a sample of zeros, or a tail the sample cannot bound), a guess, NaN or inf sampled
enum { GUESS_NONE = 0, GUESS_MADE = 1, GUESS_NAN = 2 };

// ---------------------------------------------------------------------------
// max |w| of float weights in one pass (the fixed-point scale, fixedpoint.scale_for):
// the largest bits of |w| as an unsigned integer, which orders NaN above infinity
// above every finite value. out: one word, zeroed by the caller.
// ---------------------------------------------------------------------------
template <class W>
struct MaxAbs {
    typedef typename AbsBits<W>::type U;
    U m;
    __device__ __forceinline__ void operator()(W v) { m = max(m, abs_bits(v)); }
    __device__ __forceinline__ void vector(const uint4& r) {
        const W* t = reinterpret_cast<const W*>(&r);
#pragma unroll
        for (int k = 0; k < (int)(16 / sizeof(W)); ++k) (*this)(t[k]);
    }
};

template <class W>
__device__ __forceinline__ void max_abs_walk(const W* __restrict__ w, i64 n, typename AbsBits<W>::type* out) {
    MaxAbs<W> f;
    f.m = 0;
    for_each_vec<W, 4>(w, n, f, blockIdx.x, gridDim.x, false);
    block_max(f.m, out);
}

template <class W>
__global__ void __launch_bounds__(512) max_abs_bits(const W* __restrict__ w, i64 n,
                                                     typename AbsBits<W>::type* __restrict__ out) {
    max_abs_walk(w, n, out);
}

// A fixed-point scale guessed from max |w| of `sample` evenly spaced weights w[k * step],
// when that max likely lies in the binade of the whole array's: fixedpoint.scale_for and
// fixedpoint.factors of it, written to `guess` (GUESS_* words) for hist_sum to use and the
// host to confirm with the max |w| the sums saw. Extrapolation: where a tail thins
// exponentially, the largest of n draws exceeds the largest of k by about ln(n / k) times the
// gap between the top two of the k; reach = m1 + 2 (m1 - m2) ln(n / k) must stay in m1's
// binade (2^28 weights uniform in [0, 1.75) from 2^12: ~1.7496 + 2 * 11 * 4e-4; an
// exponential's: ~8.3 + 2 * 11 * 1 > 16, no guess). One block of THREADS threads.
template <class U> __device__ __forceinline__ void top_two(U& a1, U& a2, U b1, U b2) {
    U hi = max(a1, b1), mid = max(min(a1, b1), max(a2, b2));
    a1 = hi;
    a2 = mid;
}

template <class W, int THREADS>
__global__ void __launch_bounds__(THREADS) sample_scale(const W* __restrict__ w, i64 step, int sample,
                                                         double log_ratio, int n_bits, u64* __restrict__ guess) {
    typedef typename AbsBits<W>::type U;
    __shared__ U tops[THREADS / 32][2];
    U a1 = 0, a2 = 0;
    for (int k = threadIdx.x; k < sample; k += THREADS) top_two(a1, a2, abs_bits(w[(i64)k * step]), (U)0);
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        top_two(a1, a2, (U)__shfl_xor_sync(0xffffffffu, a1, d), (U)__shfl_xor_sync(0xffffffffu, a2, d));
    if ((threadIdx.x & 31u) == 0) {
        tops[threadIdx.x >> 5][0] = a1;
        tops[threadIdx.x >> 5][1] = a2;
    }
    __syncthreads();
    if (threadIdx.x) return;
    for (int k = 1; k < THREADS / 32; ++k) top_two(a1, a2, tops[k][0], tops[k][1]);
    W v1 = *reinterpret_cast<const W*>(&a1), v2 = *reinterpret_cast<const W*>(&a2);
    double m1 = (double)v1, m2 = (double)v2, f1 = 0.0, f2 = 0.0;
    long long s = 0;
    u64 state = GUESS_NONE;
    if (!isfinite(m1)) {
        state = GUESS_NAN;
    } else if (m1 > 0.0) {
        double reach = __dadd_rn(m1, __dmul_rn(__dmul_rn(2.0, __dsub_rn(m1, m2)), log_ratio));
        int e1, e2;
        frexp(m1, &e1);
        frexp(reach, &e2);
        if (e1 == e2) {  // fixedpoint.scale_for and fixedpoint.factors
            state = GUESS_MADE;
            s = 62 - n_bits - e1 + 32;
            int k = (int)s - 32, a = k > 1023 ? 1023 : (k < -1022 ? k + 64 : k);
            f1 = ldexp(1.0, a);
            f2 = ldexp(1.0, k - a);
        }
    }
    guess[GUESS_F1] = (u64)__double_as_longlong(f1);
    guess[GUESS_F2] = (u64)__double_as_longlong(f2);
    guess[GUESS_SCALE] = (u64)s;
    guess[GUESS_STATE] = state;
    guess[GUESS_MAX] = (u64)__double_as_longlong(m1);
}

// Fixed-point words (hi [0, nslots), lo [nslots, 2 nslots), low words not yet folded) as
// float64 at the scale guess[GUESS_SCALE]: fixedpoint.combine with the same roundings
// (fold, IEEE conversions, one add, ldexp).
__global__ void fixed_finish(const long long* __restrict__ words, unsigned nslots, const u64* __restrict__ guess,
                             double* __restrict__ out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nslots) return;
    int s = (int)(long long)guess[GUESS_SCALE];
    long long lo = words[nslots + i], hi = words[i] + (lo >> 32);
    out[i] = ldexp(__dadd_rn(ldexp(__ll2double_rn(hi), 32), __ll2double_rn(lo & 0xffffffffll)), -s);
}

template <int ACC> struct AccOf { typedef double s_t; };
template <> struct AccOf<ACC_I64> { typedef u64 s_t; };
template <> struct AccOf<ACC_FIXED> { typedef u64 s_t; };

// One thread's run: its slot and the sum of its weights (FIXED: the hi and lo words).
template <int ACC, class W> struct Run {
    typedef typename AccOf<ACC>::s_t S;
    S a, b;  // b: FIXED's low word
    double f1, f2;  // FIXED: the factor as two powers of two (fixedpoint.factors)
    typename AbsBits<W>::type seen;  // FIXED: the largest bits of |w| of every weight added
    __device__ __forceinline__ void clear() { a = (S)0; b = (S)0; }
    __device__ __forceinline__ void add(W w) {
        if (ACC == ACC_FIXED) {
            i64 hi, lo;
            fixed_split(Widen<double, W>::of(w), f1, f2, hi, lo);
            a += (u64)hi;
            b += (u64)lo;
            seen = max(seen, abs_bits(w));
        } else if (ACC == ACC_F64) {
            a += (S)Widen<double, W>::of(w);
        } else {
            a += (S)w;
        }
    }
};

template <class T, class CMP, int BINNER, int ACC, class W, bool GLOBAL>
struct SumOne {
    typedef Binner<T, CMP, BINNER> B;
    typedef typename B::slot_t slot_t;
    typedef typename AccOf<ACC>::s_t S;
    B bin;
    Run<ACC, W> run;
    slot_t base;
    unsigned nslots, cur;  // cur: the run's slot (nslots: the spare, or none yet)
    S* acc;                // this thread's copy: the word of slot s at acc[s * copies]
    unsigned* lo;          // FIXED: this thread's copy of the low words, lo[s * copies]
    unsigned* mid;         // FIXED: the hi words' low halves, mid[s * copies]; high halves at mid[per + ...]
    unsigned copies, per;

    __device__ __forceinline__ void flush() {
        if (cur >= nslots) return;  // values in no bin (and the start)
        if (GLOBAL) {
            atomicAdd(acc + cur, run.a);
            if (ACC == ACC_FIXED) atomicAdd(acc + nslots + cur, run.b);
        } else if (ACC == ACC_FIXED) {  // three native 32-bit adds, each carrying into the next
            u64 b = (u64)run.b, h = (u64)run.a + (b >> 32);
            unsigned i = cur * copies, l = (unsigned)b, hl = (unsigned)h;
            unsigned old = atomicAdd(lo + i, l);
            unsigned m = hl + (unsigned)(old + l < old);  // + the low word's carry
            unsigned oldm = atomicAdd(mid + i, m);
            atomicAdd(mid + per + i, (unsigned)(h >> 32) + (unsigned)(m < hl) + (unsigned)(oldm + m < oldm));
        } else {
            atomicAdd(acc + cur * copies, run.a);
        }
    }
    __device__ __forceinline__ void operator()(T v, W w) {
        slot_t s = bin(v) - base;
        unsigned k = s < (slot_t)nslots ? (unsigned)s : nslots;
        if (k != cur) {
            flush();
            cur = k;
            run.clear();
        }
        run.add(w);
    }
    __device__ __forceinline__ void step(const uint4* rx, const uint4* rw) {
        const T* t = reinterpret_cast<const T*>(rx);
        const W* u = reinterpret_cast<const W*>(rw);
#pragma unroll
        for (int k = 0; k < PairStep<T, W>::K; ++k) (*this)(t[k], u[k]);
    }
};

// Registers: 3 blocks of 512 per SM (42 registers each). The fixed-point kernel otherwise
// takes 54-64 (2 blocks); at 40 it does not spill for float weights (32 bytes for double).
// W: the weights' type (float, double: F64 and FIXED; long long: I64).
// out: nslots sums (F64: double, I64: int64 as u64), or FIXED: hi words [0, nslots)
// then lo words [nslots, 2 nslots), each block's low words folded before the merge.
// seen (FIXED, may be null): max |w| bits of every weight read, in or out of the bins, so a
// scale guessed before the sums can be confirmed after them (sums.py, plan.weighted).
// guess (FIXED, may be null): a scale guessed on the device (sample_scale's words): its
// factors replace factor and factor2; with no guess made the pass only finds max |w| (seen).
template <class T, class CMP, int BINNER, int ACC, class W, bool GLOBAL>
__global__ void __launch_bounds__(512, 3)
hist_sum(const T* __restrict__ x, const W* __restrict__ w, i64 n,
         const CMP* __restrict__ edges, unsigned nb, double glo, double gscale, double tau,
         int stage_edges, u64 base, unsigned nslots, double factor, double factor2, unsigned copies,
         typename AccOf<ACC>::s_t* __restrict__ out, typename AbsBits<W>::type* __restrict__ seen,
         const u64* __restrict__ guess) {
    typedef typename AccOf<ACC>::s_t S;
    typedef SumOne<T, CMP, BINNER, ACC, W, GLOBAL> F;
    if (ACC == ACC_FIXED && guess) {  // the same in every thread: no barrier diverges
        if (guess[GUESS_STATE] != GUESS_MADE) {
            max_abs_walk(w, n, seen);
            return;
        }
        factor = __longlong_as_double((long long)guess[GUESS_F1]);
        factor2 = __longlong_as_double((long long)guess[GUESS_F2]);
    }
    unsigned per = GLOBAL ? 0u : (nslots + 1u) * copies;  // words of each plane
    unsigned bytes = per * (ACC == ACC_FIXED ? 12u : 8u);
    S* acc = reinterpret_cast<S*>(smem);
    unsigned* acc_lo = reinterpret_cast<unsigned*>(smem + per * 8u);
    CMP* sh_edges = reinterpret_cast<CMP*>(smem + ((bytes + 15u) & ~15u));
    for (unsigned i = threadIdx.x; i < bytes / 4u; i += blockDim.x) reinterpret_cast<unsigned*>(smem)[i] = 0u;
    F f;
    make_rule(f.bin.r, edges, nb, glo, gscale, tau, stage_edges ? sh_edges : (CMP*)0);
    f.base = (typename F::slot_t)base;
    f.nslots = nslots;
    f.cur = nslots;
    f.copies = copies;
    f.acc = GLOBAL ? out : acc + (threadIdx.x & 31u & (copies - 1u));
    f.lo = acc_lo + (threadIdx.x & 31u & (copies - 1u));
    f.mid = reinterpret_cast<unsigned*>(smem) + (threadIdx.x & 31u & (copies - 1u));
    f.per = per;
    f.run.f1 = factor;
    f.run.f2 = factor2;
    f.run.seen = 0;
    f.run.clear();
    __syncthreads();  // sums zeroed, edges staged

    // the host stages the edges for the nearest-edge binners: read as shared memory
    if (BINNER == BIN_NEAREST || BINNER == BIN_NEAREST_ALL) f.bin.r.e = sh_edges;
    for_each_pair<T, W, 2>(x, w, n, f);
    f.flush();
    if (ACC == ACC_FIXED && seen) block_max(f.run.seen, seen);  // the same branch in every thread
    if (GLOBAL) return;
    __syncthreads();  // every private sum is in
    for (unsigned s = threadIdx.x; s < nslots; s += blockDim.x) {
        S a = (S)0, b = (S)0;
        for (unsigned k = 0; k < copies; ++k) {
            unsigned c = (k + s) & (copies - 1u);  // consecutive slots start in other banks
            if constexpr (ACC == ACC_FIXED) {  // the hi word from its halves (mod 2^64: exact)
                const unsigned* m = reinterpret_cast<const unsigned*>(smem) + s * copies + c;
                a += (S)m[0] + ((S)m[per] << 32);
                b += (S)acc_lo[s * copies + c];
            } else {
                a += acc[s * copies + c];
            }
        }
        if (ACC == ACC_FIXED) {
            u64 hi = (u64)a + ((u64)b >> 32), lo = (u64)b & 0xffffffffull;
            if (hi) atomicAdd((u64*)out + s, hi);
            if (lo) atomicAdd((u64*)out + nslots + s, lo);
        } else if (a != (S)0) {
            atomicAdd(out + s, a);
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
