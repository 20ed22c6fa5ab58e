// float32 prefix sums in the association order every backend shares (hotbin.scan_order).
// The data are the lanes [o, :, k] of a C-ordered (outer, m, inner) array; each lane is cut into
// blocks of BLOCK values, and one invocation owns one (o, block, k):
//   lane_sums: S[o, b, k] = ((-0.0 + x[lo]) + x[lo + 1]) + ...          (left to right)
//   (the host chains the sums into offsets O[o, b, k], left to right, as NumPy's cumsum)
//   lane_scan: out[i] = (((O[o, b, k] + x[lo]) + x[lo + 1]) + ...) + x[i]   (inclusive)
// Serial inside a block by design: that chain of f32 roundings is the result, and it is the
// cpu backend's and the cuda backend's (no reassociation: plain f32 adds). -0.0 is the exact
// additive identity, so the first block is NumPy's sequential scan bit for bit.

override WG: u32 = 64u;
override BLOCK: u32 = 2048u;  // set from hotbin.scan_order.SCAN_BLOCK
// Loops step UNROLL values at a time: lavapipe (llvmpipe) ends a loop after 65535 iterations
// in all (per invocation, nested loops included), so a block is at most 65535 * UNROLL values.
const UNROLL: u32 = 16u;

struct Params {
    m: u32,        // lane length
    inner: u32,    // lanes per outer index (the stride of a lane, in values)
    nblk: u32,     // blocks per lane
    units: u32,    // outer * nblk * inner invocations' worth of work
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read> offs: array<f32>;
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;

// (first value's index, values in the block) of unit u = (o * nblk + b) * inner + k
fn block_of(u: u32) -> vec2<u32> {
    let k = u % P.inner;
    let b = (u / P.inner) % P.nblk;
    let o = u / P.inner / P.nblk;
    let lo = b * BLOCK;
    return vec2<u32>(o * P.m * P.inner + lo * P.inner + k, min(P.m - lo, BLOCK));
}

@compute @workgroup_size(WG)
fn lane_sums(@builtin(global_invocation_id) gid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var u = gid.x; u < P.units; u += nwg.x * WG) {
        let blk = block_of(u);
        var s = bitcast<f32>(0x80000000u);  // -0.0
        let full = blk.y / UNROLL * UNROLL;
        for (var i = 0u; i < full; i += UNROLL) {
            for (var k = 0u; k < UNROLL; k += 1u) {  // unrolled: a constant trip count
                s = s + src[blk.x + (i + k) * P.inner];
            }
        }
        for (var i = full; i < blk.y; i += 1u) {
            s = s + src[blk.x + i * P.inner];
        }
        dst[u] = s;
    }
}

@compute @workgroup_size(WG)
fn lane_scan(@builtin(global_invocation_id) gid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var u = gid.x; u < P.units; u += nwg.x * WG) {
        let blk = block_of(u);
        var s = offs[u];
        let full = blk.y / UNROLL * UNROLL;
        for (var i = 0u; i < full; i += UNROLL) {
            for (var k = 0u; k < UNROLL; k += 1u) {
                let j = blk.x + (i + k) * P.inner;
                s = s + src[j];
                dst[j] = s;
            }
        }
        for (var i = full; i < blk.y; i += 1u) {
            let j = blk.x + i * P.inner;
            s = s + src[j];
            dst[j] = s;
        }
    }
}
