// hotbin: the accumulators of the 2-D kernels (spatial.cu): what a cell holds in
// shared memory and in the global result, one struct per hotbin.reductions acc.
//
// Every accumulator declares
//   Shared, words   its shared-memory word and the words per cell: a copy of `stride` cells
//                   (Ctx::stride) holds words * stride of them
//   Out             the global result's word; rows of ncell words (Ctx::ncell)
//   Weight          what the kernels read of the weights (weighted: whether they read any)
//   centered        whether Ctx::center applies: (w - center[cell])^2 accumulated
//   Run             what a thread sums in registers for consecutive points of one cell
// and
//   skip(w)               the weight is no value (NaN): no partial changes
//   run_of(w, ctr, x)     the run of one weight (ctr: its cell's center, when x.center)
//   extend(r, w, ctr, x)  one more weight of the run's cell
//   add(s, c, r, x)       a run into shared cell c (shared atomics)
//   flush(s, c, out, gc, x)  shared cell c into result cell gc (global atomics, once per cell)
//   put(out, gc, r, x)    a run straight into result cell gc (global atomics)
//
// Shared words start at zero, and so does the result: zero is the identity of every
// accumulator (the extremes keep order-preserving keys whose zero is below every value,
// finished into hotbin.reductions' partial by finish_values in spatial.cu).
// No standard headers: this file compiles under NVRTC and nvcc alike.
#pragma once

#include "hist_common.cuh"

typedef unsigned int u32;

#define DROP 0xFFFFFFFFu

// What every launch passes its accumulator.
struct Ctx {
    double f1, f2;         // FixedAcc: the fixed-point factor 2^(s-32) as two powers of two
    const double* center;  // centered accumulators: accumulate (w - center[cell])^2; null: w
    int op;                // ValuesAcc: OP_SUM, OP_MIN or OP_MAX
    u32 ncell;             // cells of the result (with categories: all of them), its row stride
    u32 stride;            // cells of the block's shared copy (a tile, the grid; 0: none)
};

// Kernel parameters of the context (CuPy passes scalars, not structs); the cells from the grid.
#define CTX_PARAMS double f1, double f2, const double* center, int op
#define CTX_OF(ncell, stride) Ctx{f1, f2, center, op, ncell, stride}

enum { OP_SUM = 0, OP_MIN = 1, OP_MAX = 2 };

// A weight as a value (exact widening), or (w - ctr)^2 when centered (one rounding each,
// as the cpu backend's float64 arithmetic).
template <typename W>
__device__ __forceinline__ double value_of(W w, double ctr, const Ctx& x) {
    const double v = Widen<double, W>::of(w);
    if (!x.center) return v;
    const double d = __dsub_rn(v, ctr);
    return __dmul_rn(d, d);
}

template <typename W>
__device__ __forceinline__ bool is_nan(W w) { return w != w; }

// Unweighted counts: u32 in shared memory, u64 in the result.
struct CountAcc {
    typedef u32 Shared;
    typedef u64 Out;
    typedef double Weight;  // unused
    static constexpr bool weighted = false, centered = false;
    static constexpr int words = 1;
    typedef u32 Run;
    __device__ static bool skip(Weight) { return false; }
    __device__ static Run run_of(Weight, double, const Ctx&) { return 1u; }
    __device__ static void extend(Run& r, Weight, double, const Ctx&) { ++r; }
    __device__ static void add(Shared* s, u32 c, const Run& r, const Ctx&) { atomicAdd(s + c, r); }
    __device__ static void flush(const Shared* s, u32 c, Out* out, u64 gc, const Ctx&) {
        const u32 v = s[c];
        if (v) atomicAdd(out + gc, (u64)v);
    }
    __device__ static void put(Out* out, u32 gc, const Run& r, const Ctx&) { atomicAdd(out + gc, (u64)r); }
};

// float64 sums (float atomics: the order of additions is not fixed).
struct SumF64 {
    typedef double Shared;
    typedef double Out;
    typedef double Weight;
    static constexpr bool weighted = true, centered = false;
    static constexpr int words = 1;
    typedef double Run;
    __device__ static bool skip(Weight) { return false; }
    __device__ static Run run_of(Weight w, double, const Ctx&) { return w; }
    __device__ static void extend(Run& r, Weight w, double, const Ctx&) { r += w; }
    __device__ static void add(Shared* s, u32 c, const Run& r, const Ctx&) { atomicAdd(s + c, r); }
    __device__ static void flush(const Shared* s, u32 c, Out* out, u64 gc, const Ctx&) {
        const double v = s[c];
        if (v != 0.0) atomicAdd(out + gc, v);  // NaN passes; skipping -0.0 matches 0.0 + -0.0
    }
    __device__ static void put(Out* out, u32 gc, const Run& r, const Ctx&) { atomicAdd(out + gc, r); }
};

// int64 sums of integer weights (two's complement in u64 words: exact, wrap like int64).
struct SumI64 {
    typedef u64 Shared;
    typedef u64 Out;
    typedef i64 Weight;
    static constexpr bool weighted = true, centered = false;
    static constexpr int words = 1;
    typedef u64 Run;
    __device__ static bool skip(Weight) { return false; }
    __device__ static Run run_of(Weight w, double, const Ctx&) { return (u64)w; }
    __device__ static void extend(Run& r, Weight w, double, const Ctx&) { r += (u64)w; }
    __device__ static void add(Shared* s, u32 c, const Run& r, const Ctx&) { atomicAdd(s + c, r); }
    __device__ static void flush(const Shared* s, u32 c, Out* out, u64 gc, const Ctx&) {
        const u64 v = s[c];
        if (v) atomicAdd(out + gc, v);
    }
    __device__ static void put(Out* out, u32 gc, const Run& r, const Ctx&) { atomicAdd(out + gc, r); }
};

// Deterministic fixed-point sums (hotbin.fixedpoint.split): each value becomes
// hi * 2^32 + lo with hi = floor(v * f1 * f2), lo = rint(frac * 2^32) in [0, 2^32];
// the two words are summed as integers (any order gives the same words). The
// result is (2, ncell): hi words, then lo words (folded by fold_words). NaN weights
// are skipped; centered, the value is (w - center)^2.
struct FixedAcc {
    typedef u64 Shared;
    typedef u64 Out;
    typedef double Weight;
    static constexpr bool weighted = true, centered = true;
    static constexpr int words = 2;
    struct Run { u64 hi, lo; };  // a run's words: lo < 2^32 each, at most 2^28 of them
    __device__ static bool skip(Weight w) { return is_nan(w); }
    __device__ static Run run_of(Weight w, double ctr, const Ctx& x) {
        i64 h, l;
        fixed_split(value_of(w, ctr, x), x.f1, x.f2, h, l);
        return Run{(u64)h, (u64)l};
    }
    __device__ static void extend(Run& r, Weight w, double ctr, const Ctx& x) {
        const Run o = run_of(w, ctr, x);
        r.hi += o.hi;
        r.lo += o.lo;
    }
    __device__ static void add(Shared* s, u32 c, const Run& r, const Ctx&) {
        atomicAdd(s + 2 * c, r.hi);
        atomicAdd(s + 2 * c + 1, r.lo);
    }
    __device__ static void flush(const Shared* s, u32 c, Out* out, u64 gc, const Ctx& x) {
        const u64 hi = s[2 * c], lo = s[2 * c + 1];
        if (hi) atomicAdd(out + gc, hi);
        if (lo) atomicAdd(out + x.ncell + gc, lo);
    }
    __device__ static void put(Out* out, u32 gc, const Run& r, const Ctx& x) {
        atomicAdd(out + gc, r.hi);
        atomicAdd(out + x.ncell + gc, r.lo);
    }
};

// Order-preserving keys of floats (not NaN): a < b iff key(a) < key(b), and key(-inf)
// > 0 (-0.0 is one below +0.0). Minima keep ~key, so both extremes are atomicMax of
// keys whose zero means "no value".
__device__ __forceinline__ u64 order_key(double v) {
    const u64 b = (u64)__double_as_longlong(v);
    return (b >> 63) ? ~b : b | 0x8000000000000000ull;
}
__device__ __forceinline__ u32 order_key(float v) {
    const u32 b = __float_as_uint(v);
    return (b >> 31) ? ~b : b | 0x80000000u;
}
template <typename T>
__device__ __forceinline__ T extreme_key(T k, int op) { return op == OP_MIN ? ~k : k; }
__device__ __forceinline__ double key_value(u64 key, int op) {
    const u64 k = extreme_key(key, op);
    return __longlong_as_double((long long)((k >> 63) ? k & 0x7FFFFFFFFFFFFFFFull : ~k));
}
__device__ __forceinline__ float key_value(u32 key, int op) {
    const u32 k = extreme_key(key, op);
    return __uint_as_float((k >> 31) ? k & 0x7FFFFFFFu : ~k);
}

// The values accumulators (hotbin.reductions acc mean, min, max: the launch's op).
// Values are the weights widened to float64 (W: float or double as read), or
// (w - center)^2 centered; NaN weights change nothing. A shared copy of `stride` cells
// is three arrays: the float64 sums or 64-bit extreme keys (u64 words 0 .. stride;
// float weights keep 32-bit keys in u32 words 0 .. stride), then the u32 counts
// (u32 words 2 * stride ..). 32-bit atomics are native, 64-bit shared atomics
// compare-and-swap loops (run 1 of benchmarks/gpu_agg.py: accumulate_tiles took
// 1.9 ms for 2^28 uniform points with 64-bit keys and counts, 0.6 ms with 32-bit
// ones); contiguous arrays spread random cells over all banks. The result has
// (2, ncell) words: sums or 64-bit keys, then u64 counts, which finish_values turns
// into float64 [sum or extreme, n].
template <typename W>
struct ValuesAcc {
    typedef u32 Shared;
    typedef u64 Out;
    typedef W Weight;
    static constexpr bool weighted = true, centered = true;
    static constexpr int words = 3;
    struct Run { double v; u32 n; };
    __device__ static bool skip(Weight w) { return is_nan(w); }
    __device__ static Run run_of(Weight w, double ctr, const Ctx& x) { return Run{value_of(w, ctr, x), 1u}; }
    __device__ static void extend(Run& r, Weight w, double ctr, const Ctx& x) {
        const double v = value_of(w, ctr, x);
        if (x.op == OP_SUM) r.v = __dadd_rn(r.v, v);
        else if (x.op == OP_MIN ? v < r.v : v > r.v) r.v = v;
        ++r.n;
    }
    __device__ static u64* wide(Shared* s) { return reinterpret_cast<u64*>(s); }
    __device__ static void add(Shared* s, u32 c, const Run& r, const Ctx& x) {
        if (x.op == OP_SUM) atomicAdd(reinterpret_cast<double*>(s) + c, r.v);
        else if (sizeof(W) == 4) atomicMax(s + c, extreme_key(order_key((float)r.v), x.op));
        else atomicMax(wide(s) + c, extreme_key(order_key(r.v), x.op));
        atomicAdd(s + 2 * x.stride + c, r.n);
    }
    __device__ static void flush(const Shared* s, u32 c, Out* out, u64 gc, const Ctx& x) {
        const u32 n = s[2 * x.stride + c];
        if (!n) return;
        const u64 a = reinterpret_cast<const u64*>(s)[c];
        if (x.op == OP_SUM) {
            atomicAdd(reinterpret_cast<double*>(out + gc), __longlong_as_double((long long)a));
        } else if (sizeof(W) == 4) {
            const double v = Widen<double, float>::of(key_value(s[c], x.op));
            atomicMax(out + gc, extreme_key(order_key(v), x.op));
        } else {
            atomicMax(out + gc, a);
        }
        atomicAdd(out + x.ncell + gc, (u64)n);
    }
    __device__ static void put(Out* out, u32 gc, const Run& r, const Ctx& x) {
        if (x.op == OP_SUM) atomicAdd(reinterpret_cast<double*>(out + gc), r.v);
        else atomicMax(out + gc, extreme_key(order_key(r.v), x.op));
        atomicAdd(out + x.ncell + gc, (u64)r.n);
    }
};

// Whether a RunAdder keeps a second run open (below): for float64 sums, whose shared-memory
// adds on one word are what a hot cell costs; integer adds and extremes are cheap, and the
// second run's bookkeeping measured slower for them (max 0.50 -> 0.64 ms uniform).
template <typename Acc> struct Parks {
    __device__ static bool on(const Ctx&) { return false; }
};
template <> struct Parks<SumF64> {
    __device__ static bool on(const Ctx&) { return true; }
};
template <typename W> struct Parks<ValuesAcc<W>> {
    __device__ static bool on(const Ctx& x) { return x.op == OP_SUM; }
};

// Adds a thread's points one run at a time: consecutive points of the thread in the
// same cell are summed in registers and added with one atomic when the cell changes
// (call finish() before the barrier), into shared cells (GLOBAL false: s, codes local
// to `base`) or the result (GLOBAL true: out). On hot data a run lasts most of a
// thread's share, so the hot cell takes about one atomic per thread instead of one
// per point (float64 and 64-bit shared atomics on one address serialize: run 1
// measured 3.9 G points/s for hot float64 sums). For float64 sums (Parks) a run that
// another cell's point interrupts is parked, not added, and resumes when its cell comes
// back: with 20 % of 2^28 points in one cell of 1024^2 the hot tile kept ~6 % other
// points, and mean's accumulate_tiles took 3.5 ms against 1.1 uniform (now 1.2).
// Points without a value are skipped.
template <typename Acc, bool GLOBAL>
struct RunAdder {
    typename Acc::Shared* s;
    typename Acc::Out* out;
    Ctx x;
    u32 base;         // the global code of code 0 (centers, the global sink)
    u32 cell = DROP;  // the current run's cell (DROP: none)
    u32 cell2 = DROP; // the parked run's
    double ctr = 0.0, ctr2 = 0.0;
    typename Acc::Run run{}, run2{};
    __device__ __forceinline__ void operator()(u32 c, typename Acc::Weight w) {
        if (Acc::skip(w)) return;
        if (c == cell) {
            Acc::extend(run, w, ctr, x);
            return;
        }
        if (Parks<Acc>::on(x)) {
            if (c == cell2) {  // the parked run resumes; the current one is parked
                Acc::extend(run2, w, ctr2, x);
                swap(cell, cell2);
                swap(run, run2);
                swap(ctr, ctr2);
                return;
            }
            put(cell2, run2);
            cell2 = cell;
            run2 = run;
            ctr2 = ctr;
        } else {
            put(cell, run);
        }
        cell = c;
        if (Acc::centered && x.center) ctr = x.center[base + c];
        run = Acc::run_of(w, ctr, x);
    }
    __device__ __forceinline__ void finish() {
        put(cell, run);
        put(cell2, run2);
        cell = cell2 = DROP;
    }
    template <typename T> __device__ __forceinline__ static void swap(T& a, T& b) {
        const T t = a;
        a = b;
        b = t;
    }
    __device__ __forceinline__ void put(u32 c, const typename Acc::Run& r) {
        if (c == DROP) return;
        if constexpr (GLOBAL) Acc::put(out, base + c, r, x);
        else Acc::add(s, c, r, x);
    }
};

// One point straight into the result (a full region of the tiled strategy).
template <typename Acc>
__device__ __forceinline__ void put_point(typename Acc::Out* out, u32 gc, typename Acc::Weight w, const Ctx& x) {
    if (Acc::skip(w)) return;
    const double ctr = Acc::centered && x.center ? x.center[gc] : 0.0;
    Acc::put(out, gc, Acc::run_of(w, ctr, x), x);
}

// Zero a shared copy of `cells` cells of Acc.
template <typename Acc>
__device__ __forceinline__ void zero_shared(typename Acc::Shared* s, u32 cells) {
    for (u32 c = threadIdx.x; c < cells * Acc::words; c += blockDim.x) s[c] = 0;
}
