// 2-D histograms, the simple correct version: the exact bin rule on each axis
// and one 64-bit global atomic per point. The skew-proof tiled heatmap kernel
// (kernels/spatial.cu) replaces it where it matters.
#include "hist_common.cuh"

enum { ACC2_COUNT = 0, ACC2_F64 = 1, ACC2_I64 = 2, ACC2_FIXED = 3 };

template <int ACC> struct Acc2Of { typedef double w_t; };
template <> struct Acc2Of<ACC2_I64> { typedef i64 w_t; };

template <class CMP>
__device__ __forceinline__ RuleBin<CMP> rule2(const CMP* e, unsigned nb, double glo, double gscale,
                                              double tau, int uniform) {
    typedef typename GuessT<CMP>::type G;
    RuleBin<CMP> r;
    r.e = e; r.nb = nb; r.lo = e[0]; r.hi = e[nb];
    r.glo = (G)glo; r.gscale = (G)gscale; r.tau = (G)tau; r.uniform = uniform;
    return r;
}

// out: ncell = nx * ny cells, row-major [ix, iy] (u64 counts, double sums, int64
// sums as u64, or FIXED: hi words then lo words); *kept: points that landed in a cell.
template <class CX, class CY, int ACC>
__global__ void __launch_bounds__(1024)
hist2d_global(const CX* __restrict__ x, const CY* __restrict__ y,
              const typename Acc2Of<ACC>::w_t* __restrict__ w, i64 n,
              const CX* __restrict__ ex, unsigned nx, double glox, double gsx, double taux, int ux,
              const CY* __restrict__ ey, unsigned ny, double gloy, double gsy, double tauy, int uy,
              double factor, void* out, u64* kept) {
    RuleBin<CX> rx = rule2(ex, nx, glox, gsx, taux, ux);
    RuleBin<CY> ry = rule2(ey, ny, gloy, gsy, tauy, uy);
    u64 ncell = (u64)nx * ny;
    unsigned mine = 0;
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned ix = rx(x[i]), iy = ry(y[i]);
        if (ix >= nx || iy >= ny) continue;
        ++mine;
        u64 c = (u64)ix * ny + iy;
        if (ACC == ACC2_COUNT) atomicAdd((u64*)out + c, 1ull);
        else if (ACC == ACC2_F64) atomicAdd((double*)out + c, (double)w[i]);
        else if (ACC == ACC2_I64) atomicAdd((u64*)out + c, (u64)w[i]);
        else {
            i64 hi, lo;
            fixed_split((double)w[i], factor, hi, lo);
            atomicAdd((u64*)out + c, (u64)hi);
            atomicAdd((u64*)out + ncell + c, (u64)lo);
        }
    }
    __shared__ unsigned long long s_kept;
    if (threadIdx.x == 0) s_kept = 0;
    __syncthreads();
    if (mine) atomicAdd(&s_kept, (u64)mine);
    __syncthreads();
    if (threadIdx.x == 0 && s_kept) atomicAdd(kept, s_kept);
}
