// One 256-level luma histogram per image of a uint8 batch (N, H, W, C), C = 3 or 4.
//
// level = (2126 R + 7152 G + 722 B) / 10000 in exact integer arithmetic (DESIGN.md §4): a gray
// pixel (v, v, v) has level v, white has 255. Alpha is ignored. The chunk holds whole pixels
// of consecutive images; workgroup row wid.y takes image j of the chunk, and the workgroups of a
// row stride over that image's pixels. Counting is privatized (workgroup counters, COPIES
// interleaved copies, per-invocation runs of one level), then one 64-bit add per non-empty level
// into out[j][level] (add64: out_atomic64.wgsl or out_split.wgsl, prepended by the host).

override WG: u32 = 256u;
override COPIES: u32 = 4u;   // a power of 2
override C: u32 = 4u;        // channels: 3 (RGB) or 4 (RGBA)

struct Params {
    off0: u32,   // pixels of the chunk's first image that precede the chunk
    ppi: u32,    // pixels per image
    npx: u32,    // pixels in this chunk
    _pad: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read> data: array<u32>;

var<workgroup> wg: array<atomic<u32>, 256u * COPIES>;

fn rgb(i: u32) -> u32 {
    if (C == 4u) {
        return data[i];
    }
    let byte = 3u * i;
    let q = byte >> 2u;
    let s = (byte & 3u) * 8u;
    var w = data[q] >> s;
    if (s > 8u) {
        w |= data[q + 1u] << (32u - s);
    }
    return w;
}

fn level(w: u32) -> u32 {
    let r = w & 0xffu;
    let g = (w >> 8u) & 0xffu;
    let b = (w >> 16u) & 0xffu;
    return (2126u * r + 7152u * g + 722u * b) / 10000u;
}

@compute @workgroup_size(WG)
fn luma_hist(@builtin(local_invocation_index) lid: u32,
             @builtin(workgroup_id) wid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = lid; i < 256u * COPIES; i += WG) {
        atomicStore(&wg[i], 0u);
    }
    workgroupBarrier();
    let img = wid.y;
    let first = max(img * P.ppi, P.off0) - P.off0;
    let end = min((img + 1u) * P.ppi - P.off0, P.npx);
    let copy = lid & (COPIES - 1u);
    var cur = 0u;
    var run = 0u;
    for (var i = first + wid.x * WG + lid; i < end; i += nwg.x * WG) {
        let l = level(rgb(i));
        if (l != cur) {
            if (run != 0u) {
                atomicAdd(&wg[cur * COPIES + copy], run);
            }
            cur = l;
            run = 0u;
        }
        run += 1u;
    }
    if (run != 0u) {
        atomicAdd(&wg[cur * COPIES + copy], run);
    }
    workgroupBarrier();
    for (var l = lid; l < 256u; l += WG) {
        var k = 0u;
        for (var c = 0u; c < COPIES; c += 1u) {
            k += atomicLoad(&wg[l * COPIES + c]);
        }
        if (k != 0u) {
            add64(img * 256u + l, k);
        }
    }
}
