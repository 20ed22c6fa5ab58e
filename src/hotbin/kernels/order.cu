// The order statistics' packed partial in one pass: for each point its cell (each axis
// binned by the reference rule, hotbin.core.binrule.BinRule.index) and its float32 value's
// key as one word ``cell << 32 | key`` (hotbin.core.order: sort_words), all ones for a point
// in no cell or without a value, so that a sort of the words groups each cell's values in
// order. The points in a cell are counted as well (the heatmap's ``kept``).

// BinRule.index of one value: the edges ``e`` (``ne`` of them, in the rule's compare
// dtype C) searched as numpy.searchsorted(e, c, side="right") - 1, the last edge closing
// the last bin, capped below the tail; ``ok`` false outside [e[0], e[ne - 1]] and for NaN.
template <typename T, typename C>
__device__ __forceinline__ long long bin_of(T v, const C* e, int ne, int nbins, int tail, bool& ok) {
    const C c = (C)v;
    int lo = 0, hi = ne;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (e[mid] <= c) lo = mid + 1; else hi = mid;
    }
    long long i = (long long)lo - 1;
    if (c == e[ne - 1]) i = nbins - 1;
    const long long top = (long long)nbins - tail - 1;
    if (i > top) i = top;
    ok = (c >= e[0]) && (c <= e[ne - 1]);
    return i;
}

// One thread a point, a block's threads in step (so that the block counts its points in a
// cell with one __syncthreads_count and one atomic). ``code``: category codes (int64) when
// ``ncat`` > 0, a cell being ``code * ngrid + ix * nby + iy``.
template <typename T, typename U, typename C, typename D>
__global__ void packed_words(const T* __restrict__ x, const U* __restrict__ y, const float* __restrict__ w,
                             const long long* __restrict__ code,
                             const C* __restrict__ ex, int nex, int nbx, int tx,
                             const D* __restrict__ ey, int ney, int nby, int ty,
                             long long ngrid, long long ncat, long long n,
                             unsigned long long* __restrict__ words, unsigned long long* __restrict__ kept) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < n; base += stride) {
        const long long i = base + threadIdx.x;
        bool in = false;
        if (i < n) {
            bool okx, oky;
            const long long ix = bin_of(x[i], ex, nex, nbx, tx, okx);
            const long long iy = bin_of(y[i], ey, ney, nby, ty, oky);
            in = okx && oky;
            long long c = ix * nby + iy;
            const float v = w[i];
            bool ok = in && !isnan(v);
            if (ncat > 0) {
                const long long k = code[i];
                ok = ok && k >= 0 && k < ncat;
                c += k * ngrid;
            }
            const unsigned int bits = __float_as_uint(v);
            const unsigned int key = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
            words[i] = ok ? (((unsigned long long)c << 32) | key) : 0xFFFFFFFFFFFFFFFFull;
        }
        const int inside = __syncthreads_count(in);
        if (threadIdx.x == 0 && inside) atomicAdd(kept, (unsigned long long)inside);
    }
}
