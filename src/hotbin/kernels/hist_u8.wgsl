// Counts of the 256 byte values of a uint8 chunk (the host folds values into bins exactly).
//
// Privatized (DESIGN.md §1.1): each workgroup zeroes COPIES interleaved copies of 256 counters,
// counts 16-byte loads into them, and adds each non-empty value's total into the global
// 64-bit counters (add64: out_atomic64.wgsl or out_split.wgsl, prepended by the host). Neighbouring invocations use different copies,
// and copies of one value sit in neighbouring banks, so a hot value does not serialize on
// one counter; a load whose 16 bytes are all equal (a constant run) is one atomic add.
// The host counts the chunk's last bytes that do not fill a 16-byte load.

override WG: u32 = 256u;
override COPIES: u32 = 8u;   // a power of 2
override UNROLL: u32 = 2u;   // 16-byte loads in flight per invocation (1, 2 or 4)
override PRIV_WORDS: u32 = 1u;  // count_bytes_private: 128 * WG words of u16 counter pairs

struct Params {
    n16: u32,   // 16-byte loads in this chunk
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read> data: array<vec4<u32>>;

var<workgroup> wg: array<atomic<u32>, 256u * COPIES>;
var<workgroup> pc: array<u32, PRIV_WORDS>;

// The UNROLL loads of one trip: j, j + stride, ... (past the end: the last load again,
// not counted). Each is a value of its own, never an array element: a function-scope array
// indexed in a loop went to local memory on NVIDIA's Vulkan compiler (3x slower than one
// load per trip, results/wgpu-h200.md).
struct Loads {
    v0: vec4<u32>,
    v1: vec4<u32>,
    v2: vec4<u32>,
    v3: vec4<u32>,
}

fn loads(j: u32, stride: u32) -> Loads {
    let last = P.n16 - 1u;
    var q: Loads;
    q.v0 = data[j];
    if (UNROLL >= 2u) {
        q.v1 = data[min(j + stride, last)];
    }
    if (UNROLL >= 4u) {
        q.v2 = data[min(j + 2u * stride, last)];
        q.v3 = data[min(j + 3u * stride, last)];
    }
    return q;
}

fn count_word(w: u32, copy: u32) {
    atomicAdd(&wg[(w & 0xffu) * COPIES + copy], 1u);
    atomicAdd(&wg[((w >> 8u) & 0xffu) * COPIES + copy], 1u);
    atomicAdd(&wg[((w >> 16u) & 0xffu) * COPIES + copy], 1u);
    atomicAdd(&wg[(w >> 24u) * COPIES + copy], 1u);
}

fn count16(v: vec4<u32>, copy: u32) {
    let b = v.x & 0xffu;
    if (all(v == vec4<u32>(b * 0x01010101u))) {
        atomicAdd(&wg[b * COPIES + copy], 16u);
    } else {
        count_word(v.x, copy);
        count_word(v.y, copy);
        count_word(v.z, copy);
        count_word(v.w, copy);
    }
}

@compute @workgroup_size(WG)
fn count_bytes(@builtin(local_invocation_index) lid: u32,
               @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = lid; i < 256u * COPIES; i += WG) {
        atomicStore(&wg[i], 0u);
    }
    workgroupBarrier();
    let copy = lid & (COPIES - 1u);
    let stride = nwg.x * WG;
    for (var j = wid.x * WG + lid; j < P.n16; j += stride * UNROLL) {
        let q = loads(j, stride);  // all loads first, then counting
        count16(q.v0, copy);
        if (UNROLL >= 2u && j + stride < P.n16) {
            count16(q.v1, copy);
        }
        if (UNROLL >= 4u && j + 2u * stride < P.n16) {
            count16(q.v2, copy);
        }
        if (UNROLL >= 4u && j + 3u * stride < P.n16) {
            count16(q.v3, copy);
        }
    }
    workgroupBarrier();
    for (var b = lid; b < 256u; b += WG) {
        var k = 0u;
        for (var c = 0u; c < COPIES; c += 1u) {
            k += atomicLoad(&wg[b * COPIES + ((c + b) & (COPIES - 1u))]);  // rotated: no bank conflicts
        }
        if (k != 0u) {
            add64(b, k);
        }
    }
}

// count_bytes_private: no atomics in the hot loop. Each invocation owns 256 u16 counters,
// packed in pairs into 128 workgroup words laid out word-major (word i of invocation t at
// i * WG + t: neighbouring invocations hit neighbouring banks whatever the bytes), and
// increments them with plain read-modify-writes. Every FLUSH loop trips (before any u16
// can wrap: 16 * UNROLL * FLUSH < 65536) and at the end, an invocation adds its counters
// into the workgroup totals (wg, COPIES = 1) and clears them.
const FLUSH: u32 = 1000u;

fn bump_word(w: u32, lid: u32) {
    for (var k = 0u; k < 32u; k += 8u) {
        let v = (w >> k) & 0xffu;
        let i = (v >> 1u) * WG + lid;
        pc[i] += 1u << ((v & 1u) * 16u);
    }
}

fn bump16(v: vec4<u32>, lid: u32) {
    let b = v.x & 0xffu;
    if (all(v == vec4<u32>(b * 0x01010101u))) {
        pc[(b >> 1u) * WG + lid] += 16u << ((b & 1u) * 16u);
    } else {
        bump_word(v.x, lid);
        bump_word(v.y, lid);
        bump_word(v.z, lid);
        bump_word(v.w, lid);
    }
}

fn flush_private(lid: u32) {
    for (var i = 0u; i < 128u; i += 1u) {
        let x = pc[i * WG + lid];
        if (x != 0u) {
            atomicAdd(&wg[2u * i], x & 0xffffu);
            atomicAdd(&wg[2u * i + 1u], x >> 16u);
            pc[i * WG + lid] = 0u;
        }
    }
}

@compute @workgroup_size(WG)
fn count_bytes_private(@builtin(local_invocation_index) lid: u32,
                       @builtin(workgroup_id) wid: vec3<u32>,
                       @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = lid; i < 256u * COPIES; i += WG) {
        atomicStore(&wg[i], 0u);
    }
    for (var i = 0u; i < 128u; i += 1u) {
        pc[i * WG + lid] = 0u;
    }
    workgroupBarrier();
    let stride = nwg.x * WG;
    var trips = 0u;
    for (var j = wid.x * WG + lid; j < P.n16; j += stride * UNROLL) {
        let q = loads(j, stride);
        bump16(q.v0, lid);
        if (UNROLL >= 2u && j + stride < P.n16) {
            bump16(q.v1, lid);
        }
        if (UNROLL >= 4u && j + 2u * stride < P.n16) {
            bump16(q.v2, lid);
        }
        if (UNROLL >= 4u && j + 3u * stride < P.n16) {
            bump16(q.v3, lid);
        }
        trips += 1u;
        if (trips == FLUSH) {
            flush_private(lid);
            trips = 0u;
        }
    }
    flush_private(lid);
    workgroupBarrier();
    for (var b = lid; b < 256u; b += WG) {
        let k = atomicLoad(&wg[b]);
        if (k != 0u) {
            add64(b, k);
        }
    }
}
