// 2-D histograms, the simple correct version: the exact bin rule on each axis
// and one 64-bit global atomic per point. The skew-proof tiled heatmap kernel
// (kernels/spatial.cu) replaces it where it matters.
#include "hist_common.cuh"

enum { ACC2_COUNT = 0, ACC2_F64 = 1, ACC2_I64 = 2, ACC2_FIXED = 3 };

template <class CMP, bool U>
__device__ __forceinline__ RuleBin<CMP, U> rule2(const CMP* e, unsigned nb, double glo,
                                                 double gscale, double tau) {
    typedef typename GuessT<CMP>::type G;
    RuleBin<CMP, U> r;
    r.e = e; r.nb = nb; r.lo = e[0]; r.hi = e[nb];
    r.glo = (G)glo; r.gscale = (G)gscale; r.tau = (G)tau; r.tau_hi = (G)1 - (G)tau;
    return r;
}

// TX, TY: data types; CX, CY: comparison types; UX, UY: linspace edges (else bisection);
// W: weights (double for F64/FIXED, long long for I64; unused for COUNT).
// out: ncell = nx * ny cells, row-major [ix, iy] (u64 counts, double sums, int64
// sums as u64, or FIXED: hi words then lo words); *kept: points that landed in a cell.
template <class TX, class CX, bool UX, class TY, class CY, bool UY, int ACC, class W>
__global__ void __launch_bounds__(1024)
hist2d_global(const TX* __restrict__ x, const TY* __restrict__ y, const W* __restrict__ w, i64 n,
              const CX* __restrict__ ex, unsigned nx, double glox, double gsx, double taux,
              const CY* __restrict__ ey, unsigned ny, double gloy, double gsy, double tauy,
              double factor, void* out, u64* kept) {
    RuleBin<CX, UX> rx = rule2<CX, UX>(ex, nx, glox, gsx, taux);
    RuleBin<CY, UY> ry = rule2<CY, UY>(ey, ny, gloy, gsy, tauy);
    u64 ncell = (u64)nx * ny;
    unsigned mine = 0;
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned ix = rx(Widen<CX, TX>::of(x[i])), iy = ry(Widen<CY, TY>::of(y[i]));
        if (ix >= nx || iy >= ny) continue;
        ++mine;
        u64 c = (u64)ix * ny + iy;
        if (ACC == ACC2_COUNT) atomicAdd((u64*)out + c, 1ull);
        else if (ACC == ACC2_F64) atomicAdd((double*)out + c, Widen<double, W>::of(w[i]));
        else if (ACC == ACC2_I64) atomicAdd((u64*)out + c, (u64)w[i]);
        else {
            i64 hi, lo;
            fixed_split(Widen<double, W>::of(w[i]), factor, hi, lo);
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
