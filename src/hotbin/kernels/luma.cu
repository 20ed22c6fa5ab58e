// hotbin: fused luminance histogram of 8-bit RGB(A) images (DESIGN.md §4).
//
// One read of the pixels, no luma plane: level = (2126 R + 7152 G + 722 B) / 10000
// in exact integer arithmetic (gray (v, v, v) -> v, white -> 255; alpha ignored),
// counted per image. Batches (N, H, W, C) -> (N, 256) in one launch: block b
// takes part b % parts of image b / parts.
//
// Each block keeps 32 copies of the 256 counters in shared memory, laid out bin-
// major and lane-minor (s[level * 32 + lane]): the 32 lanes of a warp always hit
// 32 different banks, whatever the image (uniform noise or one flat colour), so
// no increment waits on a bank conflict. Counters are 32-bit (the host keeps a
// block under 2^31 pixels) and are summed into the 64-bit result once per block.

typedef unsigned int u32;
typedef unsigned long long u64;

#define LANES 32

// The weights split into bytes for two 4-way byte dot products:
// 2126 = 8 * 256 + 78, 7152 = 27 * 256 + 240, 722 = 2 * 256 + 210; alpha weight 0.
#define W_HI 0x00021B08u  // bytes 8, 27, 2, 0
#define W_LO 0x00D2F04Eu  // bytes 78, 240, 210, 0

// px: the pixel's bytes R, G, B(, A) in memory order (little endian).
__device__ __forceinline__ u32 luma_level(u32 px) {
    const u32 s = __dp4a(px, W_LO, __dp4a(px, W_HI, 0u) << 8);  // 2126 R + 7152 G + 722 B
    return s / 10000u;
}

__device__ __forceinline__ void count(u32* my, u32 px) { atomicAdd(my + (luma_level(px) << 5), 1u); }

// A pixel read one byte at a time (the unaligned head and tail of an image).
template <int C>
__device__ __forceinline__ u32 pixel_at(const unsigned char* p, u64 j) {
    const unsigned char* q = p + j * C;
    return (u32)q[0] | ((u32)q[1] << 8) | ((u32)q[2] << 16);
}

// Pixels per vector unit: RGBA one 16-byte load = 4 pixels; RGB three = 16 pixels.
template <int C> struct Unit;
template <> struct Unit<4> {
    static constexpr int pixels = 4;
    __device__ static void load(const uint4* v, u64 q, uint4 (&r)[3]) { r[0] = __ldcs(v + q); }
    __device__ static void count_all(u32* my, const uint4 (&r)[3]) {
        count(my, r[0].x); count(my, r[0].y); count(my, r[0].z); count(my, r[0].w);
    }
};
template <> struct Unit<3> {
    static constexpr int pixels = 16;
    __device__ static void load(const uint4* v, u64 q, uint4 (&r)[3]) {
        r[0] = __ldcs(v + 3 * q); r[1] = __ldcs(v + 3 * q + 1); r[2] = __ldcs(v + 3 * q + 2);
    }
    __device__ static void count_all(u32* my, const uint4 (&r)[3]) {
        const u32 w[12] = {r[0].x, r[0].y, r[0].z, r[0].w, r[1].x, r[1].y,
                           r[1].z, r[1].w, r[2].x, r[2].y, r[2].z, r[2].w};
#pragma unroll
        for (int j = 0; j < 16; ++j) {  // pixel j: bytes 3j .. 3j + 2
            const int k = (3 * j) >> 2, o = (3 * j) & 3;
            const u32 hi = k + 1 < 12 ? w[k + 1] : 0u;
            count(my, __byte_perm(w[k], hi, o | ((o + 1) << 4) | ((o + 2) << 8) | ((o + 3) << 12)));
        }
    }
};

// THREADS: threads per block (hotbin.backend.cuda.luma.LUMA_THREADS).
template <int C, int THREADS>
__global__ void __launch_bounds__(THREADS) luma_histogram(const unsigned char* __restrict__ img,
                                                               u64 npix, u32 parts, u64* __restrict__ out) {
    __shared__ u32 s[256 * LANES];
    for (u32 i = threadIdx.x; i < 256 * LANES; i += blockDim.x) s[i] = 0;
    __syncthreads();

    const u32 image = blockIdx.x / parts, part = blockIdx.x % parts;
    const unsigned char* p = img + (u64)image * npix * C;
    u32* my = s + (threadIdx.x & (LANES - 1));

    // The body starts at the first pixel on a 16-byte boundary: 4 p0 = -addr or
    // 3 p0 = -addr (mod 16), and 11 is the inverse of 3 mod 16.
    const u32 mis = (16u - (u32)((size_t)p & 15u)) & 15u;
    u64 p0 = C == 4 ? (mis % 4u == 0 ? mis / 4u : npix) : (mis * 11u) & 15u;
    if (p0 > npix) p0 = npix;
    constexpr int PU = Unit<C>::pixels;
    const u64 units = (npix - p0) / PU;
    const u64 body_end = p0 + units * PU;

    // Head and tail: at most 2 * 15 pixels, counted by part 0.
    const u64 nleft = p0 + (npix - body_end);
    if (part == 0)
        for (u64 j = threadIdx.x; j < nleft; j += blockDim.x)
            count(my, pixel_at<C>(p, j < p0 ? j : body_end + (j - p0)));

    const uint4* v = reinterpret_cast<const uint4*>(p + p0 * C);
    const u64 stride = (u64)parts * blockDim.x;
    u64 q = (u64)part * blockDim.x + threadIdx.x;
    constexpr int U = C == 4 ? 4 : 2;  // 16-byte loads in flight per thread: 4 or 6
    for (; q + (U - 1) * stride < units; q += U * stride) {
        uint4 r[U][3];
#pragma unroll
        for (int u = 0; u < U; ++u) Unit<C>::load(v, q + u * stride, r[u]);
#pragma unroll
        for (int u = 0; u < U; ++u) Unit<C>::count_all(my, r[u]);
    }
    for (; q < units; q += stride) {
        uint4 r[3];
        Unit<C>::load(v, q, r);
        Unit<C>::count_all(my, r);
    }
    __syncthreads();

    // Sum the 32 copies of each level (rotated so a warp's reads hit 32 banks).
    for (u32 level = threadIdx.x; level < 256; level += blockDim.x) {
        u64 sum = 0;
        for (u32 l = 0; l < LANES; ++l) sum += s[level * LANES + ((l + level) & (LANES - 1))];
        if (sum) atomicAdd(out + (u64)image * 256 + level, sum);
    }
}
