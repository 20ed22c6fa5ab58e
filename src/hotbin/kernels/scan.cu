// Device-wide prefix sums in one pass: decoupled look-back (Merrill & Garland).
//
// Each block takes the next tile (a dynamic tile id, so every tile it waits on
// belongs to a block already running), loads it with 16-byte vector loads into
// registers, publishes the tile's aggregate, then one warp looks back over the
// predecessors' published aggregates until it meets an inclusive prefix. A
// published value and its status share one 8- or 16-byte word written by a
// single store, so no memory fence is needed.
//
// scan_lookback serves integer scans (exact in any order). Float scans follow the
// association order every backend shares (hotbin.scan_order): lane_sums and
// lane_scan at the end of this file.
#include "hist_common.cuh"
#include "scan_common.cuh"

// A tile descriptor: value and status (0 none, 1 aggregate, 2 inclusive) in one word.
template <class A, int SIZE = sizeof(A)> struct Desc;

template <class A> struct Desc<A, 4> {
    enum { WORDS = 1 };
    static __device__ __forceinline__ void store(u64* p, A v, unsigned status) {
        union { A a; unsigned u; } c;
        c.a = v;
        u64 w = ((u64)status << 32) | c.u;
        asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" :: "l"(p), "l"(w) : "memory");
    }
    static __device__ __forceinline__ unsigned load(const u64* p, A& v) {
        u64 w;
        asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
        union { A a; unsigned u; } c;
        c.u = (unsigned)w;
        v = c.a;
        return (unsigned)(w >> 32);
    }
};

template <class A> struct Desc<A, 8> {
    enum { WORDS = 2 };
    static __device__ __forceinline__ void store(u64* p, A v, unsigned status) {
        union { A a; u64 u; } c;
        c.a = v;
        asm volatile("st.relaxed.gpu.global.v2.b64 [%0], {%1, %2};"
                     :: "l"(p), "l"(c.u), "l"((u64)status) : "memory");
    }
    static __device__ __forceinline__ unsigned load(const u64* p, A& v) {
        u64 a, s;
        asm volatile("ld.relaxed.gpu.global.v2.b64 {%0, %1}, [%2];"
                     : "=l"(a), "=l"(s) : "l"(p) : "memory");
        union { A a; u64 u; } c;
        c.u = a;
        v = c.a;
        return (unsigned)s;
    }
};

// The exclusive prefix of tile `tile` (> 0), computed by one whole warp.
template <class A>
__device__ A look_back(i64 tile, const u64* aggd, const u64* incd, unsigned lane) {
    typedef Desc<A> D;
    const int W = D::WORDS;
    i64 pos = tile, jinc;
    A vinc;
    for (;;) {
        i64 t = pos - 1 - (i64)lane;  // lane 0: the nearest predecessor
        A vi = (A)0, va;
        unsigned si = t >= 0 ? D::load(incd + t * W, vi) : 2u;  // before tile 0: an inclusive 0
        bool ready = si == 2u || D::load(aggd + t * W, va) == 1u;
        while (!__all_sync(FULL_MASK, ready)) {
            if (!ready) {
                si = D::load(incd + t * W, vi);
                ready = si == 2u || D::load(aggd + t * W, va) == 1u;
            }
        }
        unsigned m = __ballot_sync(FULL_MASK, si == 2u);
        if (m) {
            int l = __ffs(m) - 1;
            jinc = pos - 1 - l;
            vinc = __shfl_sync(FULL_MASK, vi, l);
            break;
        }
        pos -= 32;
    }
    A val = vinc;
    for (i64 s = jinc + 1; s < tile; s += 32) {  // aggregates of jinc+1 .. tile-1, in order
        i64 t = s + (i64)lane;
        A a = (A)0;
        if (t < tile) D::load(aggd + t * W, a);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) a = a + __shfl_xor_sync(FULL_MASK, a, o);  // any order is exact
        val = val + a;
    }
    return val;
}

// A: NumPy's accumulator/output dtype for T. BLOCK threads, NVEC 16-byte
// vectors per thread. aggd/incd: Desc<A>::WORDS u64 per tile; they and
// *tile_counter are zero at launch. init: the inclusive prefix before tile 0 (0, or
// the total of the slabs before this one: the same chain of roundings as one pass).
template <class T, class A, int BLOCK, int NVEC, bool EXCLUSIVE>
__global__ void __launch_bounds__(BLOCK)
scan_lookback(const T* __restrict__ x, i64 n, A* __restrict__ out, u64* aggd, u64* incd,
              unsigned* tile_counter, A init) {
    typedef Desc<A> D;
    const int VEC = 16 / sizeof(T);
    const int WARPS = BLOCK / 32;
    const i64 WARP_ITEMS = (i64)NVEC * 32 * VEC;
    const i64 TILE = WARPS * WARP_ITEMS;
    __shared__ i64 s_tile;
    __shared__ A s_warp[WARPS];
    __shared__ A s_excl;
    unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;

    if (threadIdx.x == 0) s_tile = (i64)atomicAdd(tile_counter, 1u);
    __syncthreads();
    const i64 tile = s_tile;
    const i64 wstart = tile * TILE + (i64)warp * WARP_ITEMS;
    const bool full = (tile + 1) * TILE <= n;

    T v[NVEC][VEC];
    if (full) {
        uint4 r[NVEC];
#pragma unroll
        for (int c = 0; c < NVEC; ++c)
            r[c] = __ldcs(reinterpret_cast<const uint4*>(x + wstart + ((i64)c * 32 + lane) * VEC));
#pragma unroll
        for (int c = 0; c < NVEC; ++c) {
            const T* t = reinterpret_cast<const T*>(&r[c]);
#pragma unroll
            for (int k = 0; k < VEC; ++k) v[c][k] = t[k];
        }
    } else {
#pragma unroll
        for (int c = 0; c < NVEC; ++c)
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                i64 i = wstart + ((i64)c * 32 + lane) * VEC + k;
                v[c][k] = i < n ? x[i] : (T)0;
            }
    }

    // Warp aggregates, then the tile's exclusive warp prefixes.
    A tsum = (A)0;
#pragma unroll
    for (int c = 0; c < NVEC; ++c)
#pragma unroll
        for (int k = 0; k < VEC; ++k) tsum = tsum + (A)v[c][k];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) tsum = tsum + __shfl_xor_sync(FULL_MASK, tsum, o);
    if (lane == 0) s_warp[warp] = tsum;
    __syncthreads();

    if (warp == 0) {
        A wv = lane < (unsigned)WARPS ? s_warp[lane] : (A)0;
        A inc = warp_inclusive_scan(wv, lane);
        A wex = __shfl_up_sync(FULL_MASK, inc, 1);
        A tile_agg = __shfl_sync(FULL_MASK, inc, 31);
        A excl = init;
        if (tile == 0) {
            if (lane == 0) D::store(incd, init + tile_agg, 2u);
        } else {
            if (lane == 0) D::store(aggd + tile * D::WORDS, tile_agg, 1u);
            excl = look_back<A>(tile, aggd, incd, lane);
            if (lane == 0) D::store(incd + tile * D::WORDS, excl + tile_agg, 2u);
        }
        if (lane < (unsigned)WARPS) s_warp[lane] = lane == 0 ? (A)0 : wex;
        if (lane == 0) s_excl = excl;
    }
    __syncthreads();

    // Scan the warp's segment chunk by chunk: lane-local, then across the warp.
    A running = s_excl + s_warp[warp];
#pragma unroll
    for (int c = 0; c < NVEC; ++c) {
        A acc[VEC];
        A s = (A)0;
#pragma unroll
        for (int k = 0; k < VEC; ++k) { s = s + (A)v[c][k]; acc[k] = s; }
        A inc = warp_inclusive_scan(s, lane);
        A lex = __shfl_up_sync(FULL_MASK, inc, 1);
        A base = lane == 0 ? running : running + lex;
        A o[VEC];
#pragma unroll
        for (int k = 0; k < VEC; ++k)
            o[k] = EXCLUSIVE ? (k == 0 ? base : base + acc[k - 1]) : base + acc[k];
        i64 i0 = wstart + ((i64)c * 32 + lane) * VEC;
        if (full) {
            uint4* d = reinterpret_cast<uint4*>(out + i0);
            const uint4* q = reinterpret_cast<const uint4*>(o);
#pragma unroll
            for (int k = 0; k < (int)(VEC * sizeof(A) / 16); ++k) __stcs(d + k, q[k]);
        } else {
#pragma unroll
            for (int k = 0; k < VEC; ++k)
                if (i0 + k < n) out[i0 + k] = o[k];
        }
        running = running + __shfl_sync(FULL_MASK, inc, 31);
    }
}

// Float scans in the association order every backend shares (hotbin.scan_order).
// The data are the lanes [o, :, k] of a C-ordered (outer, m, inner) array of A, each cut
// into blocks of `block` values; one thread owns one unit u = (o * nblk + b) * inner + k
// and adds its block left to right (plain adds, never reassociated; -ftz=false keeps
// subnormals), so the chain of roundings is the cpu backend's:
//   lane_sums: sums[u] = ((-0.0 + x[lo]) + x[lo + 1]) + ...
//   (the host chains the sums into offsets, left to right, as NumPy's cumsum)
//   lane_scan: out[i] = (((offs[u] + x[lo]) + x[lo + 1]) + ...) + x[i]   (inclusive)
template <class A>
__device__ __forceinline__ const A* lane_block(const A* x, i64 u, i64 m, i64 inner, i64 nblk,
                                               i64 block, i64& cnt) {
    i64 k = u % inner, b = (u / inner) % nblk, o = u / inner / nblk;
    i64 lo = b * block;
    cnt = m - lo < block ? m - lo : block;
    return x + (o * m + lo) * inner + k;
}

// Lanes along the last axis (inner == 1) have contiguous blocks: read value by value, each
// load of a warp would touch 32 lines (150 GB/s on the H200). A warp instead owns 32
// consecutive units and moves their blocks one 128-byte line (W values) at a time through a
// transposed tile in shared memory: loads and stores are whole lines, and each thread still
// adds its own block's values one by one, left to right (the same adds as the loops below).
// WARPS: warps per thread block (hotbin.backend.cuda.scan.LANE_THREADS / 32).
template <class A, bool SCAN, int WARPS>
__device__ __forceinline__ void lane_tiles(const A* __restrict__ x, i64 m, i64 nblk, i64 block,
                                           i64 units, const A* __restrict__ offs,
                                           A* __restrict__ res) {
    constexpr int W = 128 / sizeof(A);   // values per line
    constexpr int R = 32 / W;            // units whose lines one warp-wide access covers
    __shared__ A tiles[WARPS][32][W + 1];
    __shared__ i64 starts[WARPS][32], counts[WARPS][32];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    A (*tile)[W + 1] = tiles[w];
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    for (i64 u0 = ((i64)blockIdx.x * (blockDim.x >> 5) + w) * 32; u0 < units; u0 += warps * 32) {
        const i64 u = u0 + lane;
        i64 cnt = 0, base = 0;
        if (u < units) {
            const i64 b = u % nblk, lo = b * block;
            base = (u / nblk) * m + lo;
            cnt = m - lo < block ? m - lo : block;
        }
        starts[w][lane] = base;
        counts[w][lane] = cnt;
        i64 lim = cnt;  // the warp's longest block
        for (int o = 16; o; o >>= 1) lim = max(lim, __shfl_xor_sync(FULL_MASK, lim, o));
        __syncwarp();
        A s = SCAN ? (u < units ? offs[u] : (A)0) : (A)-0.0;
        const int k = lane % W, r = lane / W;
        for (i64 c = 0; c < lim; c += W) {
#pragma unroll
            for (int j = r; j < 32; j += R)  // line c / W of unit j: lane k of it
                if (c + k < counts[w][j]) tile[j][k] = x[starts[w][j] + c + k];
            __syncwarp();
            if (cnt - c >= W) {  // a whole line: unrolled, so the shared loads overlap
#pragma unroll
                for (int q = 0; q < W; ++q) {
                    s = s + tile[lane][q];
                    if (SCAN) tile[lane][q] = s;
                }
            } else {
                for (int q = 0; q < cnt - c; ++q) {
                    s = s + tile[lane][q];
                    if (SCAN) tile[lane][q] = s;
                }
            }
            __syncwarp();
            if (SCAN) {
#pragma unroll
                for (int j = r; j < 32; j += R)
                    if (c + k < counts[w][j]) res[starts[w][j] + c + k] = tile[j][k];
                __syncwarp();
            }
        }
        if (!SCAN && u < units) res[u] = s;
        __syncwarp();  // starts/counts are rewritten by the next round
    }
}

template <class A, int WARPS>
__global__ void lane_sums(const A* __restrict__ x, i64 m, i64 inner, i64 nblk, i64 block,
                          i64 units, A* __restrict__ sums) {
    if (inner == 1) {
        lane_tiles<A, false, WARPS>(x, m, nblk, block, units, nullptr, sums);
        return;
    }
    for (i64 u = (i64)blockIdx.x * blockDim.x + threadIdx.x; u < units; u += (i64)gridDim.x * blockDim.x) {
        i64 cnt;
        const A* p = lane_block(x, u, m, inner, nblk, block, cnt);
        A s = (A)-0.0;
        for (i64 i = 0; i < cnt; ++i) s = s + p[i * inner];
        sums[u] = s;
    }
}

template <class A, int WARPS>
__global__ void lane_scan(const A* __restrict__ x, i64 m, i64 inner, i64 nblk, i64 block,
                          i64 units, const A* __restrict__ offs, A* __restrict__ out) {
    if (inner == 1) {
        lane_tiles<A, true, WARPS>(x, m, nblk, block, units, offs, out);
        return;
    }
    for (i64 u = (i64)blockIdx.x * blockDim.x + threadIdx.x; u < units; u += (i64)gridDim.x * blockDim.x) {
        i64 cnt;
        const A* p = lane_block(x, u, m, inner, nblk, block, cnt);
        A* q = out + (p - x);
        A s = offs[u];
        for (i64 i = 0; i < cnt; ++i) {
            s = s + p[i * inner];
            q[i * inner] = s;
        }
    }
}
