// hotbin: the crossfilter pass of linked views (hotbin serve --hist) with the data on the device.
//
// One launch per brush state computes, for every row, the brush mask (bit b set when the row
// fails brush b), the row's state byte (bit 0: it fails no brush but the box, the map shows
// it; bit 1: it fails none) and its count in every histogram panel whose other brushes it
// passes: a row counts in panel p iff (mask & ~own[p]) == 0, so a brush never empties its
// own panel. The panels' bins were computed before by the exact bin rule (each row's bin as
// uint16, the panel's bin count for none), so the pass compares and counts, nothing more.
//
// Columns keep their own dtype (a table of pointers and dtype codes); a value is widened to
// double before it is compared with the double bounds of its brush, which is exact for every
// dtype but 64-bit integers beyond 2^53 (rounded to nearest, as NumPy's float64 copy of them).
// NaN fails every brush.
//
// Counts: with copies > 0 each block keeps `copies` private copies of every panel's bins in
// shared memory (32-bit, slot-major and copy-minor: s[slot * copies + lane % copies]), zeroed
// and merged into the 64-bit result with one atomic per non-empty slot, between barriers; the
// host keeps a block under 2^31 rows so no 32-bit counter wraps. With copies == 0 (the bins do
// not fit in shared memory) every count is a 64-bit global atomic. Rows are indexed with 64-bit
// integers (10^9 rows and more).

typedef unsigned int u32;
typedef unsigned long long u64;

// dtype codes of the columns (hotbin/backend/cuda/crossfilter.py: DTYPE_CODES)
#define T_F64 0
#define T_F32 1
#define T_I8 2
#define T_U8 3
#define T_I16 4
#define T_U16 5
#define T_I32 6
#define T_U32 7
#define T_I64 8
#define T_U64 9

// Row r of a column of dtype `type`, widened to double (64-bit integers rounded to nearest).
__device__ __forceinline__ double value_at(const void* p, int type, u64 r) {
    switch (type) {
        case T_F64: return ((const double*)p)[r];
        case T_F32: return (double)((const float*)p)[r];
        case T_I8: return (double)((const signed char*)p)[r];
        case T_U8: return (double)((const unsigned char*)p)[r];
        case T_I16: return (double)((const short*)p)[r];
        case T_U16: return (double)((const unsigned short*)p)[r];
        case T_I32: return (double)((const int*)p)[r];
        case T_U32: return (double)((const u32*)p)[r];
        case T_I64: return __ll2double_rn(((const long long*)p)[r]);
        default: return __ull2double_rn(((const u64*)p)[r]);
    }
}

// bcol, btype, blo, bhi, bbit: nb brushes (a column's pointer and dtype code, [lo, hi), its
// bit; the box is two brushes of one bit). codes, keep, nkeep: the category brush (cat_bit 0:
// none); a code k is kept iff 0 <= k < nkeep and keep[k]. pbin, pown, pbase: np panels (the
// rows' bins, the panel's own brush bits, its first slot); pbase[np] is the number of slots.
// state: n bytes; out: pbase[np] 64-bit counts, zeroed by the caller.
extern "C" __global__ void crossfilter_pass(
    const u64* __restrict__ bcol, const int* __restrict__ btype, const double* __restrict__ blo,
    const double* __restrict__ bhi, const u64* __restrict__ bbit, const int nb,
    const int* __restrict__ codes, const unsigned char* __restrict__ keep, const long long nkeep,
    const u64 cat_bit, const u64 box_bit,
    const u64* __restrict__ pbin, const u64* __restrict__ pown, const u32* __restrict__ pbase,
    const int np, const u32 copies, const u64 n,
    unsigned char* __restrict__ state, u64* __restrict__ out) {
    extern __shared__ u32 hist[];
    const u32 slots = np > 0 ? pbase[np] : 0u;
    if (copies > 0) {
        for (u32 i = threadIdx.x; i < slots * copies; i += blockDim.x) hist[i] = 0u;
        __syncthreads();
    }
    const u32 lane = copies > 0 ? threadIdx.x % copies : 0u;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += stride) {
        u64 m = 0;
        for (int b = 0; b < nb; ++b) {
            const double v = value_at((const void*)bcol[b], btype[b], r);
            if (!(v >= blo[b] && v < bhi[b])) m |= bbit[b];
        }
        if (cat_bit != 0) {
            const long long k = codes[r];
            if (k < 0 || k >= nkeep || keep[k] == 0) m |= cat_bit;
        }
        state[r] = (unsigned char)(((m & ~box_bit) == 0 ? 1 : 0) | (m == 0 ? 2 : 0));
        for (int p = 0; p < np; ++p) {
            if ((m & ~pown[p]) != 0) continue;  // fails a brush other than the panel's own
            const u32 i = ((const unsigned short*)pbin[p])[r];
            const u32 s = pbase[p] + i;
            if (s >= pbase[p + 1]) continue;  // in none of the panel's bins
            if (copies > 0) {
                atomicAdd(hist + (size_t)s * copies + lane, 1u);
            } else {
                atomicAdd(out + s, 1ull);
            }
        }
    }
    if (copies > 0) {
        __syncthreads();
        for (u32 s = threadIdx.x; s < slots; s += blockDim.x) {
            u64 t = 0;
            for (u32 c = 0; c < copies; ++c) t += hist[(size_t)s * copies + c];
            if (t != 0) atomicAdd(out + s, t);
        }
    }
}
