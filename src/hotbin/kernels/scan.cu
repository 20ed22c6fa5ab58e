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
// association order every backend shares (hotbin.scan_order): lane_sums, lane_chain
// and lane_scan (or lane_scan_chained) at the end of this file.
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
// and adds its block left to right (IEEE adds, never reassociated nor contracted,
// subnormals kept: add_rn), so the chain of roundings is the cpu backend's:
//   lane_sums:  sums[u] = ((-0.0 + x[lo]) + x[lo + 1]) + ...
//   lane_chain: offs[u] = O_b with O_0 = carry (or -0.0), O_{b+1} = O_b + sums[u], in order
//   lane_scan:  out[i] = (((offs[u] + x[lo]) + x[lo + 1]) + ...) + x[i]   (inclusive)
// lane_scan_chained is lane_scan for one lane with lane_chain run by its first block.
__device__ __forceinline__ float add_rn(float a, float b) {
    float r;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
__device__ __forceinline__ double add_rn(double a, double b) {
    double r;
    asm("add.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b));
    return r;
}

// One 16-byte vector of A values, in registers or in a tile.
template <class A> union Vec16 {
    uint4 q;
    A a[16 / sizeof(A)];
};

// Lanes along the last axis (inner == 1) have contiguous blocks: read value by value, each
// load of a warp would touch 32 lines. A warp instead owns 32 consecutive units and moves
// their blocks through a transposed tile in shared memory, a stage of NV 16-byte vectors of
// each unit at a time (32 / NV units per warp-wide access, NV * 16 contiguous bytes each).
// The next stage's loads are in flight, in registers, while each thread adds its own
// unit's stage value by value, left to right. Rows of NV + 1 vectors (an odd count): the
// 16-byte accesses of a quarter-warp to 8 rows fall in distinct banks. Units not 16-byte
// aligned (data or result) or not whole vectors long go value by value through the same
// tile (the same adds).
template <class A, int NV> struct LaneTile {
    static constexpr int V = 16 / sizeof(A);  // values per vector
    static constexpr int C = NV * V;          // values of a unit per stage
    static constexpr int ROW = NV + 1;        // vectors per tile row
    static constexpr int VECS = 32 * ROW;     // vectors per warp's tile
    static_assert(32 % NV == 0, "a warp-wide access covers whole units");

    // Vector i of this thread in a stage: unit j(i), vector `lane % NV` of its stage.
    static __device__ __forceinline__ int unit(int i, int lane) { return lane / NV + i * (32 / NV); }

    // buf[i] = stage values [c, c + C) of unit unit(i) (those below its count).
    static __device__ __forceinline__ void load(uint4 (&buf)[NV], const A* __restrict__ x,
                                                const i64* st, const int* cnt, int c, bool vec,
                                                bool last_use, int lane) {
        const int off = c + (lane % NV) * V;
#pragma unroll
        for (int i = 0; i < NV; ++i) {
            const int j = unit(i, lane), n = cnt[j];
            if (off >= n) continue;
            const A* p = x + st[j] + off;
            if (vec) {
                const uint4* q = reinterpret_cast<const uint4*>(p);
                buf[i] = last_use ? __ldcs(q) : __ldg(q);
            } else {
                Vec16<A> t;
#pragma unroll
                for (int e = 0; e < V; ++e) t.a[e] = off + e < n ? p[e] : (A)0;
                buf[i] = t.q;
            }
        }
    }

    // The stage [c, c + C) of every unit from the tile to res (those below its count).
    static __device__ __forceinline__ void store(const uint4* tile, A* __restrict__ res,
                                                 const i64* st, const int* cnt, int c, bool vec,
                                                 int lane) {
        const int off = c + (lane % NV) * V;
#pragma unroll
        for (int i = 0; i < NV; ++i) {
            const int j = unit(i, lane), n = cnt[j];
            if (off >= n) continue;
            Vec16<A> t;
            t.q = tile[j * ROW + lane % NV];
            A* p = res + st[j] + off;
            if (vec) {
                __stcs(reinterpret_cast<uint4*>(p), t.q);
            } else {
#pragma unroll
                for (int e = 0; e < V; ++e)
                    if (off + e < n) p[e] = t.a[e];
            }
        }
    }
};

__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_release(unsigned long long* p, unsigned long long v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

// lane_sums (SCAN false: res = sums) and lane_scan (SCAN true: res = out) for inner == 1,
// warp w of block blk of nblk_grid, tiles: this block's WARPS tiles. With `ready` (scan of
// one lane while lane_chain runs in another block), a warp waits until *ready (offsets
// published so far) covers its units, its first stage's loads already in flight.
template <class A, bool SCAN, int WARPS, int NV>
__device__ __forceinline__ void lane_tiles(const A* __restrict__ x, i64 m, i64 nblk, i64 block,
                                           i64 units, const A* offs, A* __restrict__ res,
                                           uint4* tiles, i64 blk, i64 nblk_grid,
                                           const unsigned long long* ready) {
    typedef LaneTile<A, NV> T;
    __shared__ i64 starts[WARPS][32];
    __shared__ int counts[WARPS][32];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    uint4* tile = tiles + w * T::VECS;
    uint4* row = tile + lane * T::ROW;
    for (i64 u0 = (blk * WARPS + w) * 32; u0 < units; u0 += nblk_grid * WARPS * 32) {
        const i64 u = u0 + lane;
        i64 base = 0;
        int cnt = 0;
        if (u < units) {
            const i64 lo = (u % nblk) * block;
            base = (u / nblk) * m + lo;
            cnt = (int)(m - lo < block ? m - lo : block);
        }
        starts[w][lane] = base;
        counts[w][lane] = cnt;
        const unsigned long long addr = (unsigned long long)(x + base)
                                        | (SCAN ? (unsigned long long)(res + base) : 0ull);
        const bool vec = __all_sync(FULL_MASK, (addr & 15) == 0 && cnt % T::V == 0);
        int lim = cnt;  // the warp's longest block
        for (int o = 16; o; o >>= 1) lim = max(lim, __shfl_xor_sync(FULL_MASK, lim, o));
        __syncwarp();
        uint4 buf[NV];
#pragma unroll
        for (int i = 0; i < NV; ++i) buf[i] = make_uint4(0, 0, 0, 0);
        T::load(buf, x, starts[w], counts[w], 0, vec, SCAN, lane);
        A s = (A)-0.0;
        if (SCAN && ready) {
            const unsigned long long need = (unsigned long long)(u0 + 32 < units ? u0 + 32 : units);
            if (lane == 0) {  // asleep about as long as the chain needs to get there (~2 ns a block)
                for (unsigned long long r; (r = load_acquire(ready)) < need;)
                    __nanosleep(64u + (unsigned)(need - r < 8192ull ? 2 * (need - r) : 16384ull));
            }
            __syncwarp();
            if (u < units) s = __ldcg(offs + u);  // written during this kernel: not through L1
        } else if (SCAN) {
            if (u < units) s = offs[u];
        }
        for (int c = 0; c < lim; c += T::C) {
#pragma unroll
            for (int i = 0; i < NV; ++i) tile[T::unit(i, lane) * T::ROW + lane % NV] = buf[i];
            __syncwarp();
            if (c + T::C < lim) T::load(buf, x, starts[w], counts[w], c + T::C, vec, SCAN, lane);
            const int left = cnt - c;
            if (left >= T::C) {  // a whole stage: unrolled, so the tile loads overlap the adds
#pragma unroll
                for (int v = 0; v < NV; ++v) {
                    Vec16<A> q;
                    q.q = row[v];
#pragma unroll
                    for (int e = 0; e < T::V; ++e) {
                        s = add_rn(s, q.a[e]);
                        if (SCAN) q.a[e] = s;
                    }
                    if (SCAN) row[v] = q.q;
                }
            } else {
                for (int v = 0; v * T::V < left; ++v) {
                    Vec16<A> q;
                    q.q = row[v];
                    for (int e = 0; e < T::V && v * T::V + e < left; ++e) {
                        s = add_rn(s, q.a[e]);
                        if (SCAN) q.a[e] = s;
                    }
                    if (SCAN) row[v] = q.q;
                }
            }
            __syncwarp();
            if (SCAN) {
                T::store(tile, res, starts[w], counts[w], c, vec, lane);
                __syncwarp();
            }
        }
        if (!SCAN && u < units) res[u] = s;
        __syncwarp();  // starts/counts are rewritten by the next round
    }
}

// One lane's block offsets by one warp: d[b * stride] = run, then run = run + s[b * stride],
// for b = 0 .. nblk - 1, in order; returns the final run (the lane's total) to lane 0. The
// warp loads P * 32 sums at a time into `in` (the next ones in flight in registers) and
// lane 0 chains them into `ob` with 16-byte shared accesses (in, ob: P * 32 values each,
// 16-byte aligned, this warp's own). With `ready`, *ready = the offsets written so far.
template <class A, int P>
__device__ __forceinline__ A chain_lane(const A* __restrict__ s, i64 nblk, i64 stride, A run,
                                        A* __restrict__ d, A* __restrict__ in,
                                        A* __restrict__ ob, unsigned long long* ready, int lane) {
    constexpr int CH = 32 * P, V = 16 / sizeof(A);
    A v[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
        const i64 b = p * 32 + lane;
        v[p] = b < nblk ? s[b * stride] : (A)0;
    }
    for (i64 b0 = 0; b0 < nblk; b0 += CH) {
#pragma unroll
        for (int p = 0; p < P; ++p) in[p * 32 + lane] = v[p];
        __syncwarp();
        if (b0 + CH < nblk) {
#pragma unroll
            for (int p = 0; p < P; ++p) {
                const i64 b = b0 + CH + p * 32 + lane;
                v[p] = b < nblk ? s[b * stride] : (A)0;
            }
        }
        const int n = nblk - b0 < CH ? (int)(nblk - b0) : CH;
        if (lane == 0) {
            if (n == CH) {
                const uint4* iv = reinterpret_cast<const uint4*>(in);
                uint4* ov = reinterpret_cast<uint4*>(ob);
#pragma unroll 8
                for (int i = 0; i < CH / V; ++i) {
                    Vec16<A> q, o;
                    q.q = iv[i];
#pragma unroll
                    for (int e = 0; e < V; ++e) {
                        o.a[e] = run;
                        run = add_rn(run, q.a[e]);
                    }
                    ov[i] = o.q;
                }
            } else {
                for (int i = 0; i < n; ++i) {
                    ob[i] = run;
                    run = add_rn(run, in[i]);
                }
            }
        }
        __syncwarp();
#pragma unroll
        for (int p = 0; p < P; ++p) {
            const i64 b = b0 + p * 32 + lane;
            if (b < nblk) d[b * stride] = ob[p * 32 + lane];
        }
        __syncwarp();
        if (ready && lane == 0) {
            __threadfence();  // the warp's offsets (ordered by __syncwarp) before the count
            store_release(ready, (unsigned long long)(b0 + n));
        }
    }
    return run;
}

// Lanes with inner > 1: the units [o, b, k] of neighbouring k are neighbours, so thread by
// thread loops read and write whole lines.
template <class A>
__device__ __forceinline__ const A* lane_block(const A* x, i64 u, i64 m, i64 inner, i64 nblk,
                                               i64 block, i64& cnt) {
    i64 k = u % inner, b = (u / inner) % nblk, o = u / inner / nblk;
    i64 lo = b * block;
    cnt = m - lo < block ? m - lo : block;
    return x + (o * m + lo) * inner + k;
}

// WARPS: warps per thread block (hotbin.backend.cuda.scan.LANE_THREADS / 32); NV: 16-byte
// vectors per unit per stage of the tiles (scan.LANE_VECS).
template <class A, int WARPS, int NV>
__global__ void __launch_bounds__(WARPS * 32)
lane_sums(const A* __restrict__ x, i64 m, i64 inner, i64 nblk, i64 block, i64 units,
          A* __restrict__ sums) {
    __shared__ uint4 tiles[WARPS * LaneTile<A, NV>::VECS];
    if (inner == 1) {
        lane_tiles<A, false, WARPS, NV>(x, m, nblk, block, units, nullptr, sums, tiles, blockIdx.x,
                                        gridDim.x, nullptr);
        return;
    }
    for (i64 u = (i64)blockIdx.x * blockDim.x + threadIdx.x; u < units; u += (i64)gridDim.x * blockDim.x) {
        i64 cnt;
        const A* p = lane_block(x, u, m, inner, nblk, block, cnt);
        A s = (A)-0.0;
        for (i64 i = 0; i < cnt; ++i) s = add_rn(s, p[i * inner]);
        sums[u] = s;
    }
}

template <class A, int WARPS, int NV>
__global__ void __launch_bounds__(WARPS * 32)
lane_scan(const A* __restrict__ x, i64 m, i64 inner, i64 nblk, i64 block, i64 units,
          const A* __restrict__ offs, A* __restrict__ out) {
    __shared__ uint4 tiles[WARPS * LaneTile<A, NV>::VECS];
    if (inner == 1) {
        lane_tiles<A, true, WARPS, NV>(x, m, nblk, block, units, offs, out, tiles, blockIdx.x,
                                       gridDim.x, nullptr);
        return;
    }
    for (i64 u = (i64)blockIdx.x * blockDim.x + threadIdx.x; u < units; u += (i64)gridDim.x * blockDim.x) {
        i64 cnt;
        const A* p = lane_block(x, u, m, inner, nblk, block, cnt);
        A* q = out + (p - x);
        A s = offs[u];
        for (i64 i = 0; i < cnt; ++i) {
            s = add_rn(s, p[i * inner]);
            q[i * inner] = s;
        }
    }
}

// Sums chained per chunk of lane_chain / lane_scan_chained (32 * CHAIN_P block offsets).
#define CHAIN_P 16

// The block offsets of every lane (lanes = outer * inner) from its block sums (laid out as
// the units): one warp per lane (chain_lane). totals[lane]: the run after the lane's last
// block (the carry of a scan continued after it); carry: the lanes' first offsets when
// has_carry, else -0.0.
template <class A, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
lane_chain(const A* __restrict__ sums, i64 nblk, i64 inner, i64 lanes, const A* __restrict__ carry,
           int has_carry, A* __restrict__ offs, A* __restrict__ totals) {
    __shared__ uint4 stage[WARPS][2][CHAIN_P * 32 * sizeof(A) / 16];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const i64 L = (i64)blockIdx.x * WARPS + w;
    if (L >= lanes) return;  // whole warps
    const i64 first = (L / inner) * nblk * inner + L % inner;  // unit of block 0
    const A run = chain_lane<A, CHAIN_P>(sums + first, nblk, inner, has_carry ? carry[L] : (A)-0.0,
                                         offs + first, reinterpret_cast<A*>(stage[w][0]),
                                         reinterpret_cast<A*>(stage[w][1]), nullptr, lane);
    if (lane == 0) totals[L] = run;
}

// lane_scan of one lane (outer = inner = 1) with lane_chain in the same launch: the block
// that starts first (ticket 0 of state[0]) chains the offsets and publishes their count in
// state[1]; every other block scans, each warp waiting for its units' offsets. A block only
// waits on the first block, which is already running and waits on nothing: no deadlock
// whatever the order or number of resident blocks. state: two zero words.
template <class A, int WARPS, int NV>
__global__ void __launch_bounds__(WARPS * 32)
lane_scan_chained(const A* __restrict__ x, i64 m, i64 nblk, i64 block, const A* __restrict__ sums,
                  const A* __restrict__ carry, int has_carry, A* offs, A* __restrict__ out,
                  A* __restrict__ totals, unsigned long long* state) {
    typedef LaneTile<A, NV> T;
    static_assert(WARPS * T::VECS * 16 >= 2 * CHAIN_P * 32 * (int)sizeof(A), "chain buffers fit the tiles");
    __shared__ uint4 tiles[WARPS * T::VECS];
    __shared__ unsigned long long ticket;
    if (threadIdx.x == 0) ticket = atomicAdd(state, 1ull);
    __syncthreads();
    const i64 t = (i64)ticket;
    if (t == 0) {
        if (threadIdx.x < 32) {
            A* in = reinterpret_cast<A*>(tiles);
            const A run = chain_lane<A, CHAIN_P>(sums, nblk, 1, has_carry ? carry[0] : (A)-0.0, offs, in,
                                                 in + CHAIN_P * 32, state + 1, threadIdx.x);
            if (threadIdx.x == 0) totals[0] = run;
        }
        return;
    }
    lane_tiles<A, true, WARPS, NV>(x, m, nblk, block, nblk, offs, out, tiles, t - 1, gridDim.x - 1, state + 1);
}
