// Warp and block scans shared by hotbin's CUDA kernels (scan.cu, spatial.cu).
// Every block size is a multiple of 32; integer sums, exact in any order.
// No standard headers: this file compiles under NVRTC and nvcc alike.
#pragma once

#define FULL_MASK 0xffffffffu

// Inclusive scan over the 32 lanes of a full warp: lane l gets v_0 + ... + v_l
// (each step adds the prefix from below to the lane's own partial).
template <class A>
__device__ __forceinline__ A warp_inclusive_scan(A v, unsigned lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        A u = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= (unsigned)o) v = u + v;
    }
    return v;
}


// Inclusive sum of v over the block's threads; *total gets the block's sum.
__device__ __forceinline__ unsigned block_inclusive_sum(unsigned v, unsigned* s_warp, unsigned* total) {
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_inclusive_scan(v, lane);
    if (lane == 31) s_warp[warp] = v;
    __syncthreads();
    if (warp == 0) {
        s_warp[lane] = warp_inclusive_scan(lane < nwarps ? s_warp[lane] : 0u, lane);
    }
    __syncthreads();
    if (warp > 0) v += s_warp[warp - 1];
    *total = s_warp[nwarps - 1];
    __syncthreads();  // s_warp is free again
    return v;
}

// out[i] = a[0] + ... + a[i-1] for i < n; returns the total to every thread.
// a and out may be shared or global memory, but not the same array.
__device__ unsigned block_exclusive_scan(const unsigned* a, unsigned* out, unsigned n, unsigned* s_warp) {
    const unsigned per = (n + blockDim.x - 1) / blockDim.x;
    const unsigned begin = min(n, threadIdx.x * per), end = min(n, begin + per);
    unsigned sum = 0;
    for (unsigned i = begin; i < end; ++i) sum += a[i];
    unsigned total;
    unsigned run = block_inclusive_sum(sum, s_warp, &total) - sum;
    for (unsigned i = begin; i < end; ++i) {
        unsigned v = a[i];
        out[i] = run;
        run += v;
    }
    __syncthreads();
    return total;
}
