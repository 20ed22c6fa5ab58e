// hotbin: 2-D spatial binning of points (x, y) into an nx × ny grid (DESIGN.md §1.4).
//
// A point lands in cell (ix, iy) under the exact bin rule of hotbin.binning, one
// rule per axis, and gets the 4-byte code ix * ny + iy (DROP when it lands in no
// cell); with categories, code g * nx * ny + ix * ny + iy for its category g
// (Cats). What a cell accumulates is spatial_acc.cuh's. hotbin.backend.cuda.spatial
// picks one of three strategies:
//
//   private  the whole grid fits in shared memory: every block accumulates a
//            private copy and flushes it once (one pass over the points).
//   tiled    a tile is 2^shift consecutive codes. sample_tiles and plan_tiles size
//            one region of a buffer per tile from a sample of the points,
//            scatter_codes moves the codes into their regions (a block-local
//            counting sort, so the writes are coalesced runs; scatter_warps, the
//            same sort done by each warp alone, for grids of at most 32 tiles),
//            accumulate_tiles sums each tile in shared memory. accumulate_tiles
//            gives every block an equal slice of the sorted codes, so a hot tile
//            is split across all blocks, never one block.
//   direct   global atomics, one per run of a thread's points in one cell (grids
//            with too many tiles to sort, small inputs).
//
// Shared-memory counters are 32-bit (the host launches at most 2^28 points at a
// time, so a block never sees 2^32); global results are 64-bit.

#include "hist_common.cuh"
#include "scan_common.cuh"
#include "spatial_acc.cuh"

typedef unsigned short u16;

// ---------------------------------------------------------------------------
// The bin rule (hotbin.binning.BinRule.index): hist_common.cuh's exact
// comparisons, bisection and walk; the guess is floored here (any number of bins)
// ---------------------------------------------------------------------------

__device__ __forceinline__ float floor_of(float t) { return floorf(t); }
__device__ __forceinline__ double floor_of(double t) { return floor(t); }

// One axis. A value v lands in bin i iff e[i] <= v < e[i+1] compared in T (the
// last bin closed: v <= e[nb]). The host passes edges in the type the kernel
// compares in: float32 data against float64 edges use float32 edges rounded so
// every comparison gives the float64 answer (edges up, the closed end down). The
// table is hist_common.cuh's (nb + 2 entries: e[0..nb-1], the closed end's
// successor, the closed end); modes 0-2 read e[0..nb-1] and the ends passed apart.
template <typename T>
struct Axis {
    typedef typename GuessT<T>::type G;
    const T* e;     // the edge table (global memory; read only off the fast path)
    T first, last;  // e[0], the closed end
    G lo, scale;    // first guess t = (v - lo) * scale
    G eps;          // modes 2, 3: t farther than eps from an integer gives the bin outright
                    // (the host's bound covers rounding and float32 flush-to-zero)
    u32 nb;
    int mode;       // 0: binary search; 1: guess, then correct; 2: as 1, trusted off the edges;
                    // 3: the guess is less than half a bin off: RuleBin::nearest, one compare
                    // with the edge nearest the guess and no range test (the table's successor
                    // entry and the clamp of the guess give it), no branch but the edge load

    // mode 3: the bin, or any value >= nb (as unsigned) for none
    __device__ __forceinline__ u32 nearest(T v) const {
        return RuleBin<T, true>{e, nb, first, last, lo, scale, eps, true}.template nearest<true>(v);
    }

    __device__ __forceinline__ u32 find(T v) const {
        if (mode == 3) {
            const u32 b = nearest(v);
            return b < nb ? b : nb;
        }
        if (!(le(first, v) && le(v, last))) return nb;  // NaN, out of range
        if (mode == 0) return search_bin(e, nb, v);
        G t = ((G)v - lo) * scale;
        G f = floor_of(t);
        u32 g;
        if (f >= (G)0 && f < (G)nb) {
            g = (u32)f;
            G fr = t - f;
            if (mode == 2 && fr > eps && fr < (G)1 - eps) return g;
        } else {
            g = f < (G)0 ? 0u : nb - 1;  // also NaN (degenerate scale): walk from the top
        }
        return walk_bin(e, nb, v, g);
    }
};

// Category codes, one per point, of any integer type (`bytes` wide, signed or not):
// a code g in [0, n) is the point's category, any other (negative ones too) is
// category n. bytes == 0: no categories.
struct Cats {
    const void* p;
    u32 n, bytes, sign;
    __device__ __forceinline__ u32 of(u64 i) const {
        u64 r;
        switch (bytes) {
            case 1: r = __ldcs(static_cast<const unsigned char*>(p) + i); break;
            case 2: r = __ldcs(static_cast<const unsigned short*>(p) + i); break;
            case 4: r = __ldcs(static_cast<const unsigned int*>(p) + i); break;
            default: r = __ldcs(static_cast<const u64*>(p) + i); break;
        }
        if (sign && (r >> (8 * bytes - 1))) return n;  // negative
        return r < n ? (u32)r : n;
    }
};

template <typename TX, typename TY>
struct Cells {
    Axis<TX> ax;
    Axis<TY> ay;
    Cats cat;
    // cells of the result: nx * ny, times n + 1 with categories (the host keeps it < DROP)
    __device__ __forceinline__ u32 total() const {
        return ax.nb * ay.nb * (cat.bytes ? cat.n + 1 : 1u);
    }
    // the cell ix * ny + iy of (x, y), or DROP; NEAR: both axes are in mode 3 (the host
    // checks), and the caller's loop then holds no other rule (no walk, no search)
    template <bool NEAR = false>
    __device__ __forceinline__ u32 cell(TX x, TY y) const {
        const u32 ix = NEAR ? ax.nearest(x) : ax.find(x), iy = NEAR ? ay.nearest(y) : ay.find(y);
        return ix < ax.nb && iy < ay.nb ? ix * ay.nb + iy : DROP;
    }
    // the code of point i in cell c (not DROP): the cell, in its category's grid
    __device__ __forceinline__ u32 in_category(u32 c, u64 i) const {
        return cat.bytes ? cat.of(i) * (ax.nb * ay.nb) + c : c;
    }
    // the code of point i at (x, y)
    __device__ __forceinline__ u32 code(TX x, TY y, u64 i) const {
        const u32 c = cell(x, y);
        return c == DROP ? DROP : in_category(c, i);
    }
};

// Kernel parameters of one axis (CuPy passes scalars, not structs).
#define AXIS_PARAMS(T, p) const T* p##_e, T p##_first, T p##_last, \
    typename GuessT<T>::type p##_lo, typename GuessT<T>::type p##_scale, \
    typename GuessT<T>::type p##_eps, u32 p##_nb, int p##_mode
#define AXIS_OF(T, p) Axis<T>{p##_e, p##_first, p##_last, p##_lo, p##_scale, p##_eps, p##_nb, p##_mode}
#define CATS_PARAMS const void* cat_p, u32 cat_n, u32 cat_bytes, u32 cat_sign
#define CELLS_OF(TX, TY) Cells<TX, TY>{AXIS_OF(TX, x), AXIS_OF(TY, y), Cats{cat_p, cat_n, cat_bytes, cat_sign}}

// ---------------------------------------------------------------------------
// Loading points: K consecutive points per load (16 bytes of the wider axis)
// ---------------------------------------------------------------------------

template <int BYTES> struct Raw;
template <> struct Raw<4> { typedef u32 type; };
template <> struct Raw<8> { typedef uint2 type; };
template <> struct Raw<16> { typedef uint4 type; };

// K elements of p starting at i (i a multiple of K; p 16-byte aligned). The
// points are read once: streaming loads keep them from evicting the grid.
template <typename T, int K>
__device__ __forceinline__ void load_vec(const T* __restrict__ p, u64 i, T (&out)[K]) {
    typedef typename Raw<sizeof(T) * K>::type R;
    union { R r; T v[K]; } u;
    u.r = __ldcs(reinterpret_cast<const R*>(p + i));
#pragma unroll
    for (int k = 0; k < K; ++k) out[k] = u.v[k];
}

template <typename TX, typename TY>
struct Group {
    static constexpr int wide = sizeof(TX) > sizeof(TY) ? sizeof(TX) : sizeof(TY);
    static constexpr int K = 16 / wide;  // points per load
};

// Calls f(code, i) once for every point i < n: the grid's threads stride over
// groups of K points, U groups in flight per thread; order is unspecified.
template <int U, typename TX, typename TY, typename F>
__device__ __forceinline__ void for_points(const TX* __restrict__ x, const TY* __restrict__ y, u64 n,
                                           const Cells<TX, TY>& cells, F f) {
    constexpr int K = Group<TX, TY>::K;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 ngroups = n / K;
    u64 g = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; g + (U - 1) * stride < ngroups; g += U * stride) {
        TX xv[U][K];
        TY yv[U][K];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            load_vec<TX, K>(x, (g + u * stride) * K, xv[u]);
            load_vec<TY, K>(y, (g + u * stride) * K, yv[u]);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const u64 i = (g + u * stride) * K + k;
                f(cells.code(xv[u][k], yv[u][k], i), i);
            }
    }
    for (; g < ngroups; g += stride) {
        TX xv[K];
        TY yv[K];
        load_vec<TX, K>(x, g * K, xv);
        load_vec<TY, K>(y, g * K, yv);
#pragma unroll
        for (int k = 0; k < K; ++k) f(cells.code(xv[k], yv[k], g * K + k), g * K + k);
    }
    for (u64 i = ngroups * K + (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        f(cells.code(x[i], y[i], i), i);
}

// ---------------------------------------------------------------------------
// Strategy "private": the whole grid in each block's shared memory
// ---------------------------------------------------------------------------

// THREADS, GROUPS: the launch's block size and batch shape (hotbin.backend.cuda.spatial).
template <typename TX, typename TY, typename Acc, int THREADS>
__global__ void __launch_bounds__(THREADS, 1) private_grid(
        const TX* __restrict__ x, const TY* __restrict__ y, const typename Acc::Weight* __restrict__ w,
        u64 n, AXIS_PARAMS(TX, x), AXIS_PARAMS(TY, y), CATS_PARAMS, CTX_PARAMS,
        typename Acc::Out* out, u64* dropped) {
    extern __shared__ __align__(16) unsigned char smem[];
    typename Acc::Shared* s = reinterpret_cast<typename Acc::Shared*>(smem);
    __shared__ u32 s_drop;
    const Cells<TX, TY> cells = CELLS_OF(TX, TY);
    const u32 ncell = cells.total();
    const Ctx ctx = CTX_OF(ncell, ncell);
    zero_shared<Acc>(s, ncell);
    if (threadIdx.x == 0) s_drop = 0;
    __syncthreads();
    u32 drop = 0;
    RunAdder<Acc, false> adder{s, out, ctx, 0};
    for_points<2>(x, y, n, cells, [&](u32 c, u64 i) {
        if (c == DROP) { ++drop; return; }
        typename Acc::Weight wi{};
        if constexpr (Acc::weighted) wi = w[i];
        adder(c, wi);
    });
    adder.finish();
    if (drop) atomicAdd(&s_drop, drop);
    __syncthreads();
    for (u32 c = threadIdx.x; c < ncell; c += blockDim.x) Acc::flush(s, c, out, c, ctx);
    if (threadIdx.x == 0 && s_drop) atomicAdd(dropped, (u64)s_drop);
}

// ---------------------------------------------------------------------------
// Strategy "direct": global atomics, one per run of a thread's points in one cell
// ---------------------------------------------------------------------------

template <typename TX, typename TY, typename Acc, int THREADS>
__global__ void __launch_bounds__(THREADS) direct_grid(
        const TX* __restrict__ x, const TY* __restrict__ y, const typename Acc::Weight* __restrict__ w,
        u64 n, AXIS_PARAMS(TX, x), AXIS_PARAMS(TY, y), CATS_PARAMS, CTX_PARAMS,
        typename Acc::Out* out, u64* dropped) {
    __shared__ u32 s_drop;
    const Cells<TX, TY> cells = CELLS_OF(TX, TY);
    const Ctx ctx = CTX_OF(cells.total(), 0);
    if (threadIdx.x == 0) s_drop = 0;
    __syncthreads();
    u32 drop = 0;
    RunAdder<Acc, true> adder{nullptr, out, ctx, 0};
    for_points<2>(x, y, n, cells, [&](u32 c, u64 i) {
        if (c == DROP) { ++drop; return; }
        typename Acc::Weight wi{};
        if constexpr (Acc::weighted) wi = w[i];
        adder(c, wi);
    });
    adder.finish();
    if (drop) atomicAdd(&s_drop, drop);
    __syncthreads();
    if (threadIdx.x == 0 && s_drop) atomicAdd(dropped, (u64)s_drop);
}

// ---------------------------------------------------------------------------
// Strategy "tiled"
// ---------------------------------------------------------------------------
// Tile t holds codes [t << shift, (t + 1) << shift). The sorted-code buffer gives
// tile t the region [base[t], base[t] + cap[t]), sized from a sample of the points
// (no counting pass over all of them); a run that does not fit goes straight to
// the result with global atomics, so an unlucky sample costs time, never counts.
// The points taken so far by tile t's region are fill[t * FILL_STRIDE]: one counter
// per 128-byte line, so the scatters' atomics on different tiles meet in no line.
#define FILL_STRIDE 32u
// The scatters' parameters (scatter_codes and scatter_warps take the same launch): the points,
// their rule, the tiles' regions (base, cap) and fill counters, the sorted codes and weights
// out, the context, the result for runs that overflow a region, and the points kept.
#define SCATTER_PARAMS(TX, TY, Acc) \
        const TX* __restrict__ x, const TY* __restrict__ y, const typename Acc::Weight* __restrict__ w, \
        u64 n, AXIS_PARAMS(TX, x), AXIS_PARAMS(TY, y), CATS_PARAMS, u32 shift, u32 ntiles, \
        const u32* __restrict__ base, const u32* __restrict__ cap, u32* fill, \
        u16* __restrict__ codes_out, typename Acc::Weight* __restrict__ w_out, \
        CTX_PARAMS, typename Acc::Out* out, u64* kept

// 1. counts[t] += sampled points of tile t (t < ntiles), counts[ntiles] += sampled
//    points in no cell: nsample points, evenly strided over the n points.
template <typename TX, typename TY, int THREADS>
__global__ void __launch_bounds__(THREADS) sample_tiles(
        const TX* __restrict__ x, const TY* __restrict__ y, u64 n,
        AXIS_PARAMS(TX, x), AXIS_PARAMS(TY, y), CATS_PARAMS, u32 shift, u32 ntiles, u64 nsample,
        u32* counts) {
    extern __shared__ __align__(16) unsigned char smem[];
    u32* s_cnt = reinterpret_cast<u32*>(smem);  // ntiles + 1
    const Cells<TX, TY> cells = CELLS_OF(TX, TY);
    for (u32 t = threadIdx.x; t <= ntiles; t += blockDim.x) s_cnt[t] = 0;
    __syncthreads();
    for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < nsample; j += (u64)gridDim.x * blockDim.x) {
        const u64 i = j * n / nsample;
        const u32 c = cells.code(x[i], y[i], i);
        atomicAdd(&s_cnt[c == DROP ? ntiles : c >> shift], 1u);
    }
    __syncthreads();
    for (u32 t = threadIdx.x; t <= ntiles; t += blockDim.x)
        if (s_cnt[t]) atomicAdd(&counts[t], s_cnt[t]);
}

// 2. One block: cap[t] = the sample's estimate of tile t's points with a margin
//    (1 + slack, plus `sigmas` standard deviations of the estimate, plus pad),
//    scaled down if the regions would exceed `capacity`; base = their offsets;
//    the fill counters zeroed, and the counts for the next chunk.
template <int THREADS>
__global__ void __launch_bounds__(THREADS) plan_tiles(u32* counts, u32 ntiles, u32 nsample, u32 n,
                                                   u32 capacity, double slack, double sigmas, u32 pad,
                                                   u32* base, u32* cap, u32* fill) {
    __shared__ u32 s_warp[32];
    const double scale = (double)n / (double)nsample;
    for (u32 t = threadIdx.x; t < ntiles; t += blockDim.x) {
        const double c = counts[t];
        const double e = c * scale * (1.0 + slack) + sigmas * sqrt(c + 1.0) * scale + pad;
        cap[t] = (u32)fmin(e, (double)n);
        fill[t * FILL_STRIDE] = 0;
    }
    __syncthreads();
    u32 total = block_exclusive_scan(cap, base, ntiles, s_warp);
    if (total > capacity) {
        for (u32 t = threadIdx.x; t < ntiles; t += blockDim.x) cap[t] = (u32)((u64)cap[t] * capacity / total);
        __syncthreads();
        block_exclusive_scan(cap, base, ntiles, s_warp);
    }
    for (u32 t = threadIdx.x; t <= ntiles; t += blockDim.x) counts[t] = 0;
}

// 3. Scatter the codes (and weights) of the points into their tiles' regions. Each
//    block takes batches of BATCH consecutive points: ranks them by tile in shared
//    memory (a counting sort), reserves each tile's run with one global atomic, and
//    writes the runs out with consecutive threads on consecutive addresses. A
//    thread's points in the tile of its first point share one shared atomic (hot
//    data would otherwise queue every rank on one counter). *kept += points in a cell.
//    THREADS threads per block, GROUPS groups of K points per thread per batch.
template <typename TX, typename TY, typename Acc, bool PREFETCH, int THREADS, int GROUPS>
__global__ void __launch_bounds__(THREADS, PREFETCH ? 2 : 3) scatter_codes(
        SCATTER_PARAMS(TX, TY, Acc)) {
    typedef typename Acc::Weight W;
    constexpr int K = Group<TX, TY>::K;
    constexpr int ITEMS = GROUPS * K;
    constexpr u32 BATCH = THREADS * ITEMS;
    extern __shared__ __align__(16) unsigned char smem[];
    W* s_w = reinterpret_cast<W*>(smem);                                                  // BATCH (weighted)
    u32* s_code = reinterpret_cast<u32*>(smem + (Acc::weighted ? BATCH * sizeof(W) : 0));  // BATCH
    u32* s_cnt = s_code + BATCH;  // ntiles: points of the batch per tile
    u32* s_off = s_cnt + ntiles;  // ntiles: their offsets in s_code
    u32* s_pos = s_off + ntiles;  // ntiles: the run's position in the tile's region
    u32* s_base = s_pos + ntiles;  // ntiles
    u32* s_cap = s_base + ntiles;  // ntiles
    __shared__ u32 s_warp[32];
    __shared__ u32 s_kept;
    const Cells<TX, TY> cells = CELLS_OF(TX, TY);
    const Ctx ctx = CTX_OF(cells.total(), 0);
    for (u32 t = threadIdx.x; t < ntiles; t += blockDim.x) {
        s_cnt[t] = 0;
        s_base[t] = base[t];
        s_cap[t] = cap[t];
    }
    if (threadIdx.x == 0) s_kept = 0;
    __syncthreads();
    u32 my_kept = 0;
    const u64 nbatches = (n + BATCH - 1) / BATCH;
    // PREFETCH: the points of the next batch are loaded while this one is ranked
    // and written (more bytes in flight, more registers).
    TX xv[GROUPS][K];
    TY yv[GROUPS][K];
    auto load = [&](u64 b) {
#pragma unroll
        for (int u = 0; u < GROUPS; ++u) {
            const u64 g = b * (BATCH / K) + (u64)u * THREADS + threadIdx.x;
            if ((g + 1) * K <= n) {
                load_vec<TX, K>(x, g * K, xv[u]);
                load_vec<TY, K>(y, g * K, yv[u]);
            } else {
#pragma unroll
                for (int k = 0; k < K; ++k)
                    if (g * K + k < n) {
                        xv[u][k] = x[g * K + k];
                        yv[u][k] = y[g * K + k];
                    }
            }
        }
    };
    if constexpr (PREFETCH)
        if (blockIdx.x < nbatches) load(blockIdx.x);
    for (u64 b = blockIdx.x; b < nbatches; b += gridDim.x) {
        if constexpr (!PREFETCH) load(b);
        u32 code[ITEMS], rank[ITEMS];
#pragma unroll
        for (int u = 0; u < GROUPS; ++u) {
            const u64 g = b * (BATCH / K) + (u64)u * THREADS + threadIdx.x;
#pragma unroll
            for (int k = 0; k < K; ++k)
                code[u * K + k] = g * K + k < n ? cells.code(xv[u][k], yv[u][k], g * K + k) : DROP;
        }
        if constexpr (PREFETCH)
            if (b + gridDim.x < nbatches) load(b + gridDim.x);
        u32 t0 = DROP, n0 = 0;
#pragma unroll
        for (int j = ITEMS - 1; j >= 0; --j)
            if (code[j] != DROP) t0 = code[j] >> shift;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) n0 += code[j] != DROP && (code[j] >> shift) == t0;
        my_kept += n0;
        const u32 lane = threadIdx.x & 31, tw = __shfl_sync(FULL_MASK, t0, 0);
        if (__all_sync(FULL_MASK, n0 == ITEMS && t0 == tw)) {
            // the warp's points all in one tile (hot data): one run for the warp, item j
            // of lane l at rank base + 32 j + l, so the writes below hit every bank (runs
            // of ITEMS per thread would put the lanes 16 words apart: one bank in 16)
            u32 base = lane == 0 ? atomicAdd(&s_cnt[tw], 32u * ITEMS) : 0u;
            base = __shfl_sync(FULL_MASK, base, 0);
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) rank[j] = base + 32u * j + lane;
        } else {
            u32 r0 = n0 ? atomicAdd(&s_cnt[t0], n0) : 0u;
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                if (code[j] == DROP) continue;
                const u32 t = code[j] >> shift;
                if (t == t0) {
                    rank[j] = r0++;
                } else {
                    rank[j] = atomicAdd(&s_cnt[t], 1u);
                    ++my_kept;
                }
            }
        }
        __syncthreads();
        const u32 nvalid = block_exclusive_scan(s_cnt, s_off, ntiles, s_warp);
        for (u32 t = threadIdx.x; t < ntiles; t += blockDim.x)
            if (s_cnt[t]) s_pos[t] = atomicAdd(&fill[t * FILL_STRIDE], s_cnt[t]);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {  // the weights are read here: no registers held across the ranking
            if (code[j] == DROP) continue;
            const u32 p = s_off[code[j] >> shift] + rank[j];
            s_code[p] = code[j];
            if constexpr (Acc::weighted)
                s_w[p] = w[(b * (BATCH / K) + (u64)(j / K) * THREADS + threadIdx.x) * K + j % K];
        }
        __syncthreads();
        for (u32 i = threadIdx.x; i < nvalid; i += blockDim.x) {
            const u32 c = s_code[i], t = c >> shift;
            const u32 k = s_pos[t] + (i - s_off[t]);
            W wi{};
            if constexpr (Acc::weighted) wi = s_w[i];
            if (k < s_cap[t]) {
                codes_out[s_base[t] + k] = (u16)(c - (t << shift));  // the region names the tile
                if constexpr (Acc::weighted) w_out[s_base[t] + k] = wi;
            } else {
                put_point<Acc>(out, c, wi, ctx);  // the region is full
            }
        }
        __syncthreads();
        for (u32 t = threadIdx.x; t < ntiles; t += blockDim.x) s_cnt[t] = 0;
        __syncthreads();
    }
    if (my_kept) atomicAdd(&s_kept, my_kept);
    __syncthreads();
    if (threadIdx.x == 0 && s_kept) atomicAdd(kept, (u64)s_kept);
}

// 3'. scatter_codes for grids of at most WARP_TILES tiles, one warp at a time: no
//    block barrier and no contended shared atomic. A warp takes batches of 32 * ITEMS
//    consecutive points (GROUPS groups of K per lane). Lane l counts the batch's
//    points of tile l: five ballots of the tile bits give it the lanes whose tile
//    is l, and a point of tile t asks lane t for its peers and their count so far,
//    so a hot tile costs what a spread one costs. The warp then lays its tiles end to
//    end in its slice of shared memory, lane l reserves tile l's run of its region
//    with one global atomic, and the runs are written out by consecutive lanes to
//    consecutive addresses. Same arguments and results as scatter_codes (2.2-2.3 ms for
//    2^28 points, with block barriers, global atomics and same-address shared atomics on
//    32 counters in each batch, 80 registers: results/gpu-spatial-h200.md).
//
//    The next batch's points are copied into the warp's staging area (cp.async) while
//    this one is sorted, and a batch is written out in the next round, after that round's
//    cells, when its reservation has long returned (Nsight Compute, issue17h run 1,
//    without both: 53 % of the cycles between instructions waiting on global memory, 32
//    warps an SM, 116 instructions a point). With both, 2^28 points took 1.08 instead of
//    1.42 ms all in one cell, 1.83 instead of 1.92 at 90 %, and the same 2.13-2.16 ms at 0
//    and 50 %: there the cost seems to follow the runs, not the waits (a batch meets all 32
//    tiles, each a reservation and a run of a few codes, at 0, 50 and 90 % alike; only
//    the batches all in one tile are cheap; not profiled since). Both axes' rules must be
//    RuleBin::nearest (Axis mode 3, the host checks: then TX and TY are floating types,
//    and the points past the end of the last batch are NaN, in no cell). Shared memory
//    per warp: the staging area (BATCH points: STAGE bytes), the slice (BATCH codes, and
//    weights). At most 1024 / THREADS resident blocks' registers each (64 for 256 threads).
#define WARP_TILES 32u
#define WARP_TILE_BITS 5
#define WARP_CODE_BITS 21
#define WARP_CODE_MASK ((1u << WARP_CODE_BITS) - 1u)

// The lanes of the (converged) warp where v & m is not 0: one and-to-predicate and the
// ballot (nvcc shifts and compares each bit apart: three instructions)
__device__ __forceinline__ u32 ballot_and(u32 v, u32 m) {
    u32 r;
    asm volatile("{.reg .pred p; .reg .b32 a; and.b32 a, %1, %2; setp.ne.u32 p, a, 0; vote.sync.ballot.b32 %0, p, 0xffffffff;}"
                 : "=r"(r) : "r"(v), "r"(m));
    return r;
}

// BYTES (8 or 16, aligned) from global to shared memory without registers (cp.async; 16
// bytes through L2 only), and the wait for this thread's copies
template <int BYTES>
__device__ __forceinline__ void copy_async(void* smem, const void* gmem) {
    static_assert(BYTES == 8 || BYTES == 16, "cp.async sizes");
    u32 s;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(s) : "l"(smem));
    if (BYTES == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
    else asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void copy_async_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// A coordinate in no cell (the nearest-edge rule sends NaN out): what the points past the
// end of the last batch read. Floating types only.
template <typename T> __device__ __forceinline__ T no_cell();
template <> __device__ __forceinline__ float no_cell<float>() { return __int_as_float(0x7fffffff); }
template <> __device__ __forceinline__ double no_cell<double>() { return __longlong_as_double(0x7fffffffffffffffll); }

template <typename TX, typename TY, typename Acc, int THREADS, int GROUPS>
__global__ void __launch_bounds__(THREADS, 1024 / THREADS) scatter_warps(
        SCATTER_PARAMS(TX, TY, Acc)) {
    typedef typename Acc::Weight W;
    constexpr int K = Group<TX, TY>::K;
    constexpr int ITEMS = GROUPS * K;
    constexpr u32 BATCH = 32 * ITEMS;  // points of one warp's batch
    constexpr u32 WARPS = THREADS / 32;
    constexpr u32 XB = K * sizeof(TX), YB = K * sizeof(TY);  // bytes of a group of each coordinate
    constexpr u32 STAGE = 32 * GROUPS * (XB + YB);  // bytes of a batch's points
    static_assert(BATCH < (1u << (32 - WARP_CODE_BITS)), "ranks above the codes");
    extern __shared__ __align__(16) unsigned char smem[];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    // the warp's staging area (x, then y), its slice of codes, then (weighted) of weights
    unsigned char* s_x = smem + warp * STAGE;
    unsigned char* s_y = s_x + 32 * GROUPS * XB;
    u32* s_code = reinterpret_cast<u32*>(smem + WARPS * STAGE) + warp * BATCH;
    W* s_w = reinterpret_cast<W*>(smem + WARPS * (STAGE + BATCH * 4)) + warp * BATCH;
    const Cells<TX, TY> cells = CELLS_OF(TX, TY);
    const Ctx ctx = CTX_OF(cells.total(), 0);
    // lane l's tile: where its region starts, and where it ends
    const u32 t_base = lane < ntiles ? base[lane] : 0u;
    const u32 t_end = lane < ntiles ? t_base + cap[lane] : 0u;
    const u32 lanes_below = (1u << lane) - 1u;
    u32 lane_bit[WARP_TILE_BITS];  // bit k of a ballot XOR lane_bit[k]: set where bit k of the tile is this lane's
#pragma unroll
    for (int k = 0; k < WARP_TILE_BITS; ++k) lane_bit[k] = (lane >> k) & 1u ? 0u : ~0u;
    const u64 nbatches = (n + BATCH - 1) / BATCH, stride = (u64)gridDim.x * WARPS;
    // a whole batch's points into the staging area: lane l copies its own groups (and reads
    // only those back: no other lane's copy to wait for); 16 or 8 bytes a group and coordinate
    auto stage = [&](u64 b) {
        if (b >= nbatches || (b + 1) * BATCH > n) return;  // the partial last batch is read directly
#pragma unroll
        for (int u = 0; u < GROUPS; ++u) {
            const u64 g = b * (BATCH / K) + 32u * u + lane;
            copy_async<XB>(s_x + (32u * u + lane) * XB, x + g * K);
            copy_async<YB>(s_y + (32u * u + lane) * YB, y + g * K);
        }
    };
    // the sorted batch in the slice out to the regions: entry i (of tile t) to to[t] + i (mod
    // 2^32), while below the end of t's region; the rest, by global atomics
    auto write_out = [&](u32 total, u32 to) {
        u32 over = 0;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const u32 i = 32u * k + lane;
            const bool in = i < total;
            const u32 c = in ? s_code[i] : 0u;
            const u32 t = c >> shift;
            const u32 a = __shfl_sync(FULL_MASK, to, t) + i;
            const bool fits = a < __shfl_sync(FULL_MASK, t_end, t);
            if (in && fits) {
                codes_out[a] = (u16)(c - (t << shift));  // the region names the tile
                if constexpr (Acc::weighted) w_out[a] = s_w[i];
            }
            over |= (u32)(in && !fits) << k;
        }
        for (int k = 0; over; ++k, over >>= 1)  // a full region (rare): off the path above
            if (over & 1u) {
                W wi{};
                if constexpr (Acc::weighted) wi = s_w[32u * k + lane];
                put_point<Acc>(out, s_code[32u * k + lane], wi, ctx);
            }
    };
    u32 n_kept = 0;  // the warp's points in a cell (the same in every lane)
    u32 last_total = 0, last_taken = 0, last_start = 0;  // the batch in the slice, not yet written
    u64 b = (u64)blockIdx.x * WARPS + warp;
    stage(b);
    for (; b < nbatches; b += stride) {
        const u64 g0 = b * (BATCH / K) + lane;  // the lane's first group; group u is g0 + 32 u
        u32 code[ITEMS];
        {
            TX xv[GROUPS][K];
            TY yv[GROUPS][K];
            if ((b + 1) * BATCH <= n) {
                copy_async_wait();
#pragma unroll
                for (int u = 0; u < GROUPS; ++u) {
                    union { typename Raw<XB>::type r; TX v[K]; } ux;
                    union { typename Raw<YB>::type r; TY v[K]; } uy;
                    ux.r = *reinterpret_cast<const typename Raw<XB>::type*>(s_x + (32u * u + lane) * XB);
                    uy.r = *reinterpret_cast<const typename Raw<YB>::type*>(s_y + (32u * u + lane) * YB);
#pragma unroll
                    for (int k = 0; k < K; ++k) {
                        xv[u][k] = ux.v[k];
                        yv[u][k] = uy.v[k];
                    }
                }
            } else {
#pragma unroll
                for (int u = 0; u < GROUPS; ++u)
#pragma unroll
                    for (int k = 0; k < K; ++k) {
                        const u64 i = (g0 + 32u * u) * K + k;
                        xv[u][k] = i < n ? x[i] : no_cell<TX>();
                        yv[u][k] = i < n ? y[i] : no_cell<TY>();
                    }
            }
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) code[j] = cells.template cell<true>(xv[j / K][j % K], yv[j / K][j % K]);
        }
        stage(b + stride);  // the staging area is read (the codes used every value)
        if (cells.cat.bytes) {  // one test for the batch, outside the loops
#pragma unroll
            for (int j = 0; j < ITEMS; ++j)
                if (code[j] != DROP) code[j] = cells.in_category(code[j], (g0 + 32u * (j / K)) * K + j % K);
        }
        if (last_total) write_out(last_total, t_base + last_taken - last_start);
        __syncwarp();  // the slice is read before this batch is sorted into it
        // the point's rank among the batch's points of its tile joins its code in the
        // bits above WARP_CODE_BITS (codes < 2^(16 + 5): tiles of at most 2^16 cells)
        u32 cnt = 0;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 t = code[j] != DROP ? code[j] >> shift : 0u;
            u32 mine = __ballot_sync(FULL_MASK, code[j] != DROP);  // the lanes whose tile is this lane
#pragma unroll
            for (int k = 0; k < WARP_TILE_BITS; ++k) mine &= ballot_and(t, 1u << k) ^ lane_bit[k];
            const u32 peers = __shfl_sync(FULL_MASK, mine, t);  // the lanes whose tile is this point's
            const u32 rank = __shfl_sync(FULL_MASK, cnt, t) + __popc(peers & lanes_below);
            if (code[j] != DROP) code[j] |= rank << WARP_CODE_BITS;  // rank < BATCH: never DROP
            cnt += __popc(mine);
        }
        // the tiles end to end: tile l at [start, start + cnt) of the warp's slice
        u32 end = cnt;
#pragma unroll
        for (u32 d = 1; d < 32; d <<= 1) {
            const u32 v = __shfl_up_sync(FULL_MASK, end, d);
            if (lane >= d) end += v;
        }
        const u32 total = __shfl_sync(FULL_MASK, end, 31), start = end - cnt;
        n_kept += total;
        // the run of tile l in its region; waited for in the next round
        last_taken = cnt ? atomicAdd(&fill[lane * FILL_STRIDE], cnt) : 0u;
        last_total = total;
        last_start = start;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {  // the weights are read here: no registers held across the ranking
            const u32 c = code[j] & WARP_CODE_MASK;
            const u32 t = code[j] != DROP ? c >> shift : 0u;
            const u32 p = __shfl_sync(FULL_MASK, start, t) + (code[j] >> WARP_CODE_BITS);
            if (code[j] == DROP) continue;
            s_code[p] = c;
            if constexpr (Acc::weighted) s_w[p] = w[(g0 + 32u * (j / K)) * K + j % K];
        }
        __syncwarp();  // the slice is written before the next round reads it
    }
    if (last_total) write_out(last_total, t_base + last_taken - last_start);
    if (lane == 0 && n_kept) atomicAdd(kept, (u64)n_kept);
}

// 4. One block: start = offsets of the filled part of each region, laid end to end
//    (start[ntiles] = the total); scratch (ntiles + 1) is left zeroed.
template <int THREADS>
__global__ void __launch_bounds__(THREADS) fill_offsets(u32* scratch, const u32* fill, const u32* cap,
                                                     u32 ntiles, u32* start) {
    __shared__ u32 s_warp[32];
    for (u32 t = threadIdx.x; t < ntiles; t += blockDim.x) scratch[t] = min(fill[t * FILL_STRIDE], cap[t]);
    __syncthreads();
    const u32 total = block_exclusive_scan(scratch, start, ntiles, s_warp);
    if (threadIdx.x == 0) start[ntiles] = total;
    for (u32 t = threadIdx.x; t <= ntiles; t += blockDim.x) scratch[t] = 0;
}

// Eight weights from w + i (i a multiple of 8; w 16-byte aligned): 16-byte loads.
template <typename W>
__device__ __forceinline__ void load8(const W* __restrict__ w, u32 i, W (&out)[8]) {
    constexpr int N = (int)sizeof(W) / 2;  // 16-byte loads for 8 weights
    union { uint4 r[N]; W v[8]; } u;
    const uint4* p = reinterpret_cast<const uint4*>(w + i);
#pragma unroll
    for (int k = 0; k < N; ++k) u.r[k] = __ldcs(p + k);
#pragma unroll
    for (int k = 0; k < 8; ++k) out[k] = u.v[k];
}

// Calls f(code, weight) for i in [a, b) of the sorted codes (2-byte codes within a
// tile) and their weights (WEIGHTED; else W{}); the block's threads stride over
// 16-byte loads of 8 codes (and the 8 weights beside them).
template <bool WEIGHTED, typename W, typename F>
__device__ __forceinline__ void for_codes(const u16* __restrict__ codes, const W* __restrict__ w, u32 a, u32 b,
                                          F f) {
    auto one = [&](u32 i) { f((u32)codes[i], WEIGHTED ? w[i] : W{}); };
    const u32 va = min(b, (a + 7u) & ~7u), vb = max(va, b & ~7u);
    for (u32 i = a + threadIdx.x; i < va; i += blockDim.x) one(i);
    for (u32 i = vb + threadIdx.x; i < b; i += blockDim.x) one(i);
    const uint4* v = reinterpret_cast<const uint4*>(codes);
    const u32 q0 = va >> 3, q1 = vb >> 3;
    auto each = [&](const uint4& r, const W (&x)[8]) {
        f(r.x & 0xFFFFu, x[0]); f(r.x >> 16, x[1]); f(r.y & 0xFFFFu, x[2]); f(r.y >> 16, x[3]);
        f(r.z & 0xFFFFu, x[4]); f(r.z >> 16, x[5]); f(r.w & 0xFFFFu, x[6]); f(r.w >> 16, x[7]);
    };
    u32 q = q0 + threadIdx.x;
    constexpr int U = 2;
    for (; q + (U - 1) * blockDim.x < q1; q += U * blockDim.x) {
        uint4 r[U];
        W x[U][8] = {};
#pragma unroll
        for (int u = 0; u < U; ++u) {
            r[u] = __ldcs(v + q + u * blockDim.x);
            if constexpr (WEIGHTED) load8(w, (q + u * blockDim.x) << 3, x[u]);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) each(r[u], x[u]);
    }
    for (; q < q1; q += blockDim.x) {
        W x[8] = {};
        if constexpr (WEIGHTED) load8(w, q << 3, x);
        each(__ldcs(v + q), x);
    }
}

// 5. Block k sums the k-th equal slice of the filled regions laid end to end: for
//    each tile the slice meets, zero the tile in shared memory, accumulate, flush
//    its non-zero cells once into the result. A hot tile is split over all blocks.
template <typename Acc, int THREADS>
__global__ void __launch_bounds__(THREADS, 1) accumulate_tiles(
        const u16* __restrict__ codes, const typename Acc::Weight* __restrict__ w,
        const u32* __restrict__ start, const u32* __restrict__ base, u32 ntiles, u32 shift, u32 ncell,
        CTX_PARAMS, typename Acc::Out* out) {
    const Ctx ctx = CTX_OF(ncell, 1u << shift);
    extern __shared__ __align__(16) unsigned char smem[];
    typename Acc::Shared* s = reinterpret_cast<typename Acc::Shared*>(smem);
    const u32 total = start[ntiles];
    const u32 per = (total + gridDim.x - 1) / gridDim.x;
    const u32 lo = min(total, blockIdx.x * per), hi = min(total, lo + per);
    if (lo >= hi) return;
    u32 a = 0, b = ntiles;  // start[a] <= lo < start[b]
    while (b - a > 1) {
        u32 m = (a + b) >> 1;
        if (start[m] <= lo) a = m; else b = m;
    }
    for (u32 t = a; t < ntiles && start[t] < hi; ++t) {
        const u32 s0 = max(lo, start[t]), s1 = min(hi, start[t + 1]);
        if (s0 >= s1) continue;
        const u32 cell0 = t << shift, cells = min(1u << shift, ncell - cell0);
        const u32 p0 = base[t] + (s0 - start[t]);  // where the slice lies in the buffer
        zero_shared<Acc>(s, ctx.stride);  // the whole copy: its arrays lie `stride` apart
        __syncthreads();
        RunAdder<Acc, false> adder{s, out, ctx, cell0};
        for_codes<Acc::weighted>(codes, w, p0, p0 + (s1 - s0), [&](u32 c, typename Acc::Weight wi) { adder(c, wi); });
        adder.finish();
        __syncthreads();
        for (u32 c = threadIdx.x; c < cells; c += blockDim.x) Acc::flush(s, c, out, cell0 + c, ctx);
        __syncthreads();
    }
}

// ---------------------------------------------------------------------------
// Fixed-point words: carry the low words into the high words (fixedpoint.fold)
// ---------------------------------------------------------------------------

__global__ void fold_words(u64* words, u32 ncell) {
    for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < ncell; c += gridDim.x * blockDim.x) {
        const u64 lo = words[ncell + c];
        words[c] += lo >> 32;
        words[ncell + c] = lo & 0xFFFFFFFFull;
    }
}

// ---------------------------------------------------------------------------
// The values accumulators: keys and counts into hotbin.reductions' partial
// ---------------------------------------------------------------------------

// ValuesAcc's (2, ncell) words become float64 [sum or extreme, n]: the counts
// converted, the extremes' keys decoded (op OP_MIN, OP_MAX), the identity (+inf for
// minima, -inf for maxima) where a cell has no value; sums stay as they are.
__global__ void finish_values(u64* words, u32 ncell, int op) {
    for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < ncell; c += gridDim.x * blockDim.x) {
        const u64 n = words[ncell + c];
        if (op != OP_SUM) {
            const u64 inf = 0x7FF0000000000000ull, neg_inf = 0xFFF0000000000000ull;
            words[c] = n ? (u64)__double_as_longlong(key_value(words[c], op)) : op == OP_MIN ? inf : neg_inf;
        }
        words[ncell + c] = (u64)__double_as_longlong((double)n);
    }
}
