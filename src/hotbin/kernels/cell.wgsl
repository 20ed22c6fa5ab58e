// The cell of a point: 1-D bins, 2-D cells and categories, under the exact rule of rule.wgsl.
//
// Shared by the kernels that bin points (hist.wgsl counts, extreme.wgsl min/max): the host
// prepends it, after rule.wgsl. A 2-D cell is bx * ny + by; with categories (CAT_BITS > 0) it
// is cat * nxy + cell, a code outside [0, ncat) going to category ncat (the protocol's clamp,
// hotbin.backend). Codes are read raw: 8/16-bit codes packed in u32 words, signed or not
// (CAT_SIGNED); the host narrows 64-bit codes to u32 after clamping them itself.

override DIMS: u32 = 1u;
override KIND_X: u32 = 2u;
override KIND_Y: u32 = 2u;
override CAT_BITS: u32 = 0u;     // 0: no categories; else 8, 16 or 32
override CAT_SIGNED: bool = false;

struct Params {
    n: u32,         // points in this chunk
    ny: u32,        // cells along y (2-D)
    ncell: u32,     // cells in all (categories included)
    ncat: u32,      // categories (the clamp target); 0 without
    nxy: u32,       // cells of one category's grid
    scale: i32,     // fixed.wgsl: the fixed-point exponent s (0 for the other kernels)
    _pad1: u32,
    _pad2: u32,
    rx: Axis,
    ry: Axis,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read> xs: array<u32>;
@group(0) @binding(3) var<storage, read> ys: array<u32>;
@group(0) @binding(5) var<storage, read> cats: array<u32>;

fn value16(j: u32) -> u32 {
    return (xs[j >> 1u] >> ((j & 1u) * 16u)) & 0xffffu;
}

// The category of point j, clamped: codes outside [0, ncat) are category ncat.
fn category(j: u32) -> u32 {
    var v: u32;
    var negative: bool;
    if (CAT_BITS == 8u) {
        v = (cats[j >> 2u] >> ((j & 3u) * 8u)) & 0xffu;
        negative = CAT_SIGNED && v >= 0x80u;
    } else if (CAT_BITS == 16u) {
        v = (cats[j >> 1u] >> ((j & 1u) * 16u)) & 0xffffu;
        negative = CAT_SIGNED && v >= 0x8000u;
    } else {
        v = cats[j];
        negative = CAT_SIGNED && v >= 0x80000000u;
    }
    return select(P.ncat, v, !negative && v < P.ncat);
}

fn cell_of(j: u32) -> u32 {
    var bx: u32;
    if (KIND_X == KIND_LUT16) {
        bx = bin_of(value16(j), KIND_X, P.rx);
    } else {
        bx = bin_of(xs[j], KIND_X, P.rx);
    }
    if (DIMS == 1u || bx == NONE) {
        return bx;
    }
    let by = bin_of(ys[j], KIND_Y, P.ry);
    if (by == NONE) {
        return NONE;
    }
    let c = bx * P.ny + by;
    if (CAT_BITS == 0u) {
        return c;
    }
    return category(j) * P.nxy + c;
}
