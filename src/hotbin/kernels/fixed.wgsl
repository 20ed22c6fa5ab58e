// Fixed-point sums of the float32 weights of each cell of cell.wgsl (hotbin.fixedpoint), and
// their number.
//
// A weight w is the integer q = round_half_even(w * 2^s) kept as two words, q = hi * 2^32 + lo
// with 0 <= lo <= 2^32, the words fixedpoint.split computes in float64 (floor, subtract, scale
// by 2^32, rint). WGSL has no float64: the words come from w's bits in integer arithmetic that
// gives those roundings exactly (words_of), so a cell's sums are bitwise the cpu backend's for
// any order. 64-bit integers are vec2<u32> (low, high), two's complement; they are added into
// pairs of u32 atomics, the add that wraps the low word carrying into the high one, so the
// pair holds the exact sum modulo 2^64 (the scale keeps every sum below 2^62).
// NaN weights are no value: skipped, not counted. Each invocation walks its share in runs of one
// cell (runs.wgsl; a run keeps its two word sums), flushed when the cell changes: a hot cell
// costs one flush per run.
//   fixed_private: runs flush into workgroup sums (every cell fits), then one global add a
//                  non-empty cell.
//   fixed_global:  a direct-mapped workgroup cache of cells (tag, sums, count), as
//                  extreme_global; misses go to the global sums.
// Global sums (binding 7): four u32 a cell, the hi sum's (low, high) then the lo sum's.
// Counters are the 64-bit add64 of the prepended out_*.wgsl, counter ncell taking the points
// that land in a cell whatever their weight. The scale s is Params.scale (cell.wgsl).

override WG: u32 = 256u;
override SLOTS: u32 = 256u;   // a power of 2: cells (fixed_private) or cache slots (fixed_global)
override WORDS: u32 = 1280u;  // workgroup words: 4 SLOTS of sums, SLOTS counts (and SLOTS tags)

@group(0) @binding(6) var<storage, read> ws: array<u32>;
@group(0) @binding(7) var<storage, read_write> sums: array<atomic<u32>>;

// slot i: its hi sum at 2i, 2i + 1, its lo sum at 2 SLOTS + 2i, +1, its count at 4 SLOTS + i,
// its cache tag at 5 SLOTS + i
var<workgroup> wg: array<atomic<u32>, WORDS>;

fn add2(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn neg2(a: vec2<u32>) -> vec2<u32> {
    return add2(vec2<u32>(~a.x, ~a.y), vec2<u32>(1u, 0u));
}

// round_half_even(a / 2^d) for d >= 1 (a < 2^31)
fn round_shift(a: u32, d: u32) -> u32 {
    if (d >= 32u) {
        return 0u;  // a / 2^d < 1/2
    }
    let q = a >> d;
    let rem = a & ((1u << d) - 1u);
    let half = 1u << (d - 1u);
    return q + select(0u, 1u, rem > half || (rem == half && (q & 1u) == 1u));
}

struct Words {
    hi: vec2<u32>,
    lo: vec2<u32>,
}

// fixedpoint.split of the finite float32 with bits b at scale s. w = ±a * 2^e (a < 2^24), and
// t = w * 2^(s - 32) = ±a * 2^k is exact in float64 (s is within [-98, 241] for float32
// weights). k >= 0: hi = t, lo = 0. Else, d = -k, a = q * 2^d + rem:
//   t >= 0: hi = q, lo = rint(rem * 2^(32 - d)): exact for d <= 32, one rounding beyond;
//   t < 0, rem > 0: hi = -q - 1 and t - hi = 1 - rem * 2^-d, which float64 holds exactly for
//     d <= 53 (lo = 2^32 - rem * 2^(32 - d), rounded once for d > 32); for d > 53 float64
//     rounds it to a multiple of 2^-53 first (A = rint(rem * 2^(53 - d))), then rint rounds
//     (1 - A * 2^-53) * 2^32: lo = 2^32 - rint(A * 2^-21). round_half_even(N - x) =
//     N - round_half_even(x) for even N, so both roundings are those of float64.
fn words_of(b: u32, s: i32) -> Words {
    let ex = (b >> 23u) & 0xffu;
    let a = select((b & 0x7fffffu) | 0x800000u, b & 0x7fffffu, ex == 0u);
    let e = select(i32(ex) - 150, -149, ex == 0u);
    let neg = (b >> 31u) == 1u;
    let k = e + s - 32;
    var out = Words(vec2<u32>(0u, 0u), vec2<u32>(0u, 0u));
    if (a == 0u) {
        return out;
    }
    if (k >= 0) {
        let u = u32(k);
        var v: vec2<u32>;
        if (u >= 32u) {
            v = vec2<u32>(0u, a << (u - 32u));
        } else if (u == 0u) {
            v = vec2<u32>(a, 0u);
        } else {
            v = vec2<u32>(a << u, a >> (32u - u));
        }
        out.hi = select(v, neg2(v), neg);
        return out;
    }
    let d = u32(-k);
    let q = select(0u, a >> d, d < 32u);
    let rem = select(a, a & ((1u << d) - 1u), d < 32u);
    if (!neg) {
        out.hi = vec2<u32>(q, 0u);
        out.lo = vec2<u32>(select(round_shift(rem, d - 32u), rem << (32u - d), d <= 32u), 0u);
        return out;
    }
    if (rem == 0u) {
        out.hi = neg2(vec2<u32>(q, 0u));
        return out;
    }
    out.hi = neg2(vec2<u32>(q + 1u, 0u));
    var x: u32;
    if (d <= 32u) {
        x = rem << (32u - d);
    } else if (d <= 53u) {
        x = round_shift(rem, d - 32u);
    } else {
        x = round_shift(round_shift(rem, d - 53u), 21u);
    }
    // 2^32 - x: x = 0 is 2^32 itself
    out.lo = select(vec2<u32>(0u - x, 0u), vec2<u32>(0u, 1u), x == 0u);
    return out;
}

fn add_wg(i: u32, v: vec2<u32>) {
    let old = atomicAdd(&wg[i], v.x);
    let hi = v.y + select(0u, 1u, old > 0xffffffffu - v.x);
    if (hi != 0u) {
        atomicAdd(&wg[i + 1u], hi);
    }
}

fn add_out(i: u32, v: vec2<u32>) {
    let old = atomicAdd(&sums[i], v.x);
    let hi = v.y + select(0u, 1u, old > 0xffffffffu - v.x);
    if (hi != 0u) {
        atomicAdd(&sums[i + 1u], hi);
    }
}

fn flush_out(c: u32, n: u32, hi: vec2<u32>, lo: vec2<u32>) {
    add64(c, n);
    add_out(4u * c, hi);
    add_out(4u * c + 2u, lo);
}

fn flush(c: u32, n: u32, cached: bool) {
    let hi = run_hi;
    let lo = run_lo;
    var s = c;
    if (cached) {
        s = c & (SLOTS - 1u);
        if (!owns(5u * SLOTS + s, c)) {
            flush_out(c, n, hi, lo);
            return;
        }
    }
    atomicAdd(&wg[4u * SLOTS + s], n);
    add_wg(2u * s, hi);
    add_wg(2u * SLOTS + 2u * s, lo);
}

// The run's sums of hi and lo words (runs.wgsl)
var<private> run_hi: vec2<u32>;
var<private> run_lo: vec2<u32>;

fn run_reset() {
    run_hi = vec2<u32>(0u, 0u);
    run_lo = vec2<u32>(0u, 0u);
}

fn run_add(w: u32) {
    let q = words_of(w, P.scale);
    run_hi = add2(run_hi, q.hi);
    run_lo = add2(run_lo, q.lo);
}

fn start(lid: u32, cached: bool) {
    for (var i = lid; i < SLOTS; i += WG) {
        if (cached) {
            atomicStore(&wg[5u * SLOTS + i], NONE);
        }
        for (var r = 0u; r < 5u; r++) {
            atomicStore(&wg[r * SLOTS + i], 0u);
        }
    }
    if (lid == 0u) {
        atomicStore(&wkept, 0u);
    }
    workgroupBarrier();
}

fn flush_slot(c: u32, s: u32) {
    let n = atomicLoad(&wg[4u * SLOTS + s]);
    if (n != 0u) {
        flush_out(c, n, vec2<u32>(atomicLoad(&wg[2u * s]), atomicLoad(&wg[2u * s + 1u])),
                  vec2<u32>(atomicLoad(&wg[2u * SLOTS + 2u * s]), atomicLoad(&wg[2u * SLOTS + 2u * s + 1u])));
    }
}

@compute @workgroup_size(WG)
fn fixed_private(@builtin(local_invocation_index) lid: u32,
                 @builtin(workgroup_id) wid: vec3<u32>,
                 @builtin(num_workgroups) nwg: vec3<u32>) {
    start(lid, false);
    finish_kept(lid, scan_runs(wid.x * WG + lid, nwg.x * WG, false));
    for (var i = lid; i < P.ncell; i += WG) {
        flush_slot(i, i);
    }
}

@compute @workgroup_size(WG)
fn fixed_global(@builtin(local_invocation_index) lid: u32,
                @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    start(lid, true);
    finish_kept(lid, scan_runs(wid.x * WG + lid, nwg.x * WG, true));
    for (var i = lid; i < SLOTS; i += WG) {
        let c = atomicLoad(&wg[5u * SLOTS + i]);
        if (c != NONE) {
            flush_slot(c, i);
        }
    }
}
