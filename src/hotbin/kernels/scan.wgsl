// Prefix sums across workgroups by reduce-then-scan (DESIGN.md §1.3; WebGPU gives no
// forward-progress guarantee, so no single-pass look-back).
//   reduce_blocks: total of each block of BLOCK = WG * ITEMS values -> sums
//   (the host scans the block totals with the same two kernels, exclusive, recursively)
//   scan_blocks:   each block scanned in place, starting from carry + its block offset
// Integers only: summed as 64-bit two's-complement words (vec2<u32>: lo, hi), so every
// scan is exact and wraps exactly as NumPy's int64/uint64 cumsum. (float32 scans follow the
// block order every backend shares: scan_lanes.wgsl.)
// Inside a block: each invocation sums ITEMS consecutive values serially, then the invocation
// totals are scanned Hillis-Steele (two barriers per step).

override WG: u32 = 256u;
override ITEMS: u32 = 8u;
override ELEM: u32 = 1u;   // input: 0 u32, 1 i32 (sign-extended), 2 64-bit words

struct Params {
    n: u32,          // values
    nblk: u32,       // blocks
    exclusive: u32,
    _pad: u32,
    carry: vec2<u32>,  // added to every output
    _pad1: vec2<u32>,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read> offs: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

var<workgroup> part: array<vec2<u32>, WG>;

fn add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn load(i: u32) -> vec2<u32> {
    if (i >= P.n) {
        return vec2<u32>(0u, 0u);
    }
    if (ELEM == 2u) {
        return vec2<u32>(src[2u * i], src[2u * i + 1u]);
    }
    let v = src[i];
    if (ELEM == 1u) {
        return vec2<u32>(v, select(0u, 0xffffffffu, (v & 0x80000000u) != 0u));
    }
    return vec2<u32>(v, 0u);
}

fn load_off(b: u32) -> vec2<u32> {
    return vec2<u32>(offs[2u * b], offs[2u * b + 1u]);
}

fn store(i: u32, v: vec2<u32>) {
    if (i >= P.n) {
        return;
    }
    dst[2u * i] = v.x;
    dst[2u * i + 1u] = v.y;
}

// The sum of this invocation's ITEMS consecutive elements from base.
fn thread_sum(base: u32) -> vec2<u32> {
    var s = vec2<u32>(0u, 0u);
    for (var k = 0u; k < ITEMS; k += 1u) {
        s = add(s, load(base + k));
    }
    return s;
}

@compute @workgroup_size(WG)
fn reduce_blocks(@builtin(local_invocation_index) lid: u32,
                 @builtin(workgroup_id) wid: vec3<u32>,
                 @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var blk = wid.x; blk < P.nblk; blk += nwg.x) {
        part[lid] = thread_sum(blk * WG * ITEMS + lid * ITEMS);
        workgroupBarrier();
        for (var h = WG / 2u; h > 0u; h >>= 1u) {
            if (lid < h) {
                part[lid] = add(part[lid], part[lid + h]);
            }
            workgroupBarrier();
        }
        if (lid == 0u) {
            dst[2u * blk] = part[0].x;
            dst[2u * blk + 1u] = part[0].y;
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(WG)
fn scan_blocks(@builtin(local_invocation_index) lid: u32,
               @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var blk = wid.x; blk < P.nblk; blk += nwg.x) {
        let base = blk * WG * ITEMS + lid * ITEMS;
        part[lid] = thread_sum(base);
        workgroupBarrier();
        for (var d = 1u; d < WG; d <<= 1u) {
            var t = part[lid];
            if (lid >= d) {
                t = add(part[lid - d], t);
            }
            workgroupBarrier();
            part[lid] = t;
            workgroupBarrier();
        }
        var run = add(P.carry, load_off(blk));
        if (lid > 0u) {
            run = add(run, part[lid - 1u]);
        }
        for (var k = 0u; k < ITEMS; k += 1u) {
            let v = load(base + k);
            if (P.exclusive != 0u) {
                store(base + k, run);
                run = add(run, v);
            } else {
                run = add(run, v);
                store(base + k, run);
            }
        }
        workgroupBarrier();
    }
}
