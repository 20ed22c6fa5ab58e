// hotbin's exact bin rule (hotbin.binning.BinRule.index) on order-preserving u32 keys.
//
// Shared by the kernels that bin 32-bit values (hist.wgsl): the host prepends this file to
// the kernel's own source. Data values and edges are both mapped to u32 keys whose unsigned
// order is the values' order, so one comparison serves u32, i32 and f32 data. The host turns
// the rule's edges into key thresholds exactly (hotbin.backend.wgpu.keys.thresholds):
//   th[off + i]  lowest key of bin i (i < nsearch), so bin i = largest i with th[off+i] <= key;
//   khi          highest key of the last bin (the closed last edge).
// A value lands in no bin iff key < th[off] or key > khi; NaN keys fall outside both ends.

const NONE: u32 = 0xffffffffu;

const KIND_U32: u32 = 0u;
const KIND_I32: u32 = 1u;
const KIND_F32: u32 = 2u;
const KIND_LUT16: u32 = 3u;  // 16-bit raw values; th[off + v] is the bin of v (NONE: no bin)

struct Axis {
    lo: f32,        // first edge as f32 (uniform guess for floats)
    scale: f32,     // nbins / (hi - lo) (uniform guess)
    off: u32,       // first threshold (or table entry) of this axis in th
    nsearch: u32,   // thresholds that a key may reach (bins beyond hold no value)
    khi: u32,       // key of the closed upper end
    uniform: u32,   // 1: guess by multiplying, then correct; 0: binary search
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(1) var<storage, read> th: array<u32>;

fn key_of(bits: u32, kind: u32) -> u32 {
    if (kind == KIND_F32) {
        if (bits == 0x80000000u) {
            return 0x80000000u;  // -0.0 compares equal to +0.0
        }
        if ((bits & 0x80000000u) != 0u) {
            return ~bits;
        }
        return bits ^ 0x80000000u;
    }
    if (kind == KIND_I32) {
        return bits ^ 0x80000000u;
    }
    return bits;
}

// Bin of a 32-bit value (its raw bits) under axis r, or NONE.
fn bin_of(bits: u32, kind: u32, r: Axis) -> u32 {
    if (kind == KIND_LUT16) {
        return th[r.off + bits];
    }
    let k = key_of(bits, kind);
    let k0 = th[r.off];
    if (k < k0 || k > r.khi) {
        return NONE;
    }
    let last = r.nsearch - 1u;
    if (r.uniform != 0u) {
        var t: f32;
        if (kind == KIND_F32) {
            t = (bitcast<f32>(bits) - r.lo) * r.scale;
        } else {
            t = f32(k - k0) * r.scale;
        }
        var g = min(u32(clamp(t, 0.0, f32(last))), last);
        while (g > 0u && k < th[r.off + g]) {
            g -= 1u;
        }
        while (g < last && k >= th[r.off + g + 1u]) {
            g += 1u;
        }
        return g;
    }
    var a = 0u;
    var b = r.nsearch;
    while (b - a > 1u) {
        let m = (a + b) >> 1u;
        if (th[r.off + m] <= k) {
            a = m;
        } else {
            b = m;
        }
    }
    return a;
}
