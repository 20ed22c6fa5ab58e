// The min (or max, MAX) of the float32 weights of each cell of cell.wgsl, and their number.
//
// WGSL has only u32 atomics, so a weight is compared as its order key: the float32 bits mapped
// to a u32 whose unsigned order is the floats' total order (-0.0 below +0.0); atomicMin /
// atomicMax on keys are exact and order-free. NaN weights are no value: skipped, not counted.
// Each invocation walks its share in runs of one cell (runs.wgsl; a run keeps its extreme key),
// flushed when the cell changes: a hot cell costs one flush per run.
//   extreme_private: runs flush into workgroup keys and counters (every cell fits), then one
//                    global min/max and 64-bit add per non-empty cell.
//   extreme_global:  a direct-mapped workgroup cache of cells (tag, count, key), as
//                    hist_global; misses go to the global keys and counters.
// Global keys (binding 7) start at the identity (the host fills them); counters are the
// 64-bit add64 of the prepended out_*.wgsl, counter ncell taking the points that land in a
// cell whatever their weight.

override WG: u32 = 256u;
override SLOTS: u32 = 256u;   // a power of 2: cells (extreme_private) or cache slots (extreme_global)
override WORDS: u32 = 512u;   // workgroup words: SLOTS keys, SLOTS counts (and SLOTS cache tags)
override MAX: bool = false;

@group(0) @binding(6) var<storage, read> ws: array<u32>;
@group(0) @binding(7) var<storage, read_write> keys: array<atomic<u32>>;

// slot s: its key at s, its count at SLOTS + s, its cache tag at 2 SLOTS + s
var<workgroup> wg: array<atomic<u32>, WORDS>;

fn identity() -> u32 {
    return select(0xffffffffu, 0u, MAX);
}

fn order_key(bits: u32) -> u32 {
    if ((bits & 0x80000000u) != 0u) {
        return ~bits;
    }
    return bits ^ 0x80000000u;
}

fn pick(a: u32, b: u32) -> u32 {
    return select(min(a, b), max(a, b), MAX);
}

fn pick_wg(s: u32, k: u32) {
    if (MAX) {
        atomicMax(&wg[s], k);
    } else {
        atomicMin(&wg[s], k);
    }
}

fn pick_out(c: u32, k: u32) {
    if (MAX) {
        atomicMax(&keys[c], k);
    } else {
        atomicMin(&keys[c], k);
    }
}

fn flush(c: u32, n: u32, cached: bool) {
    let k = ext;
    var s = c;
    if (cached) {
        s = c & (SLOTS - 1u);
        if (!owns(2u * SLOTS + s, c)) {
            add64(c, n);
            pick_out(c, k);
            return;
        }
    }
    atomicAdd(&wg[SLOTS + s], n);
    pick_wg(s, k);
}

// The run's extreme key (runs.wgsl)
var<private> ext: u32;

fn run_reset() {
    ext = identity();
}

fn run_add(w: u32) {
    ext = pick(ext, order_key(w));
}

fn start(lid: u32, cached: bool) {
    for (var i = lid; i < SLOTS; i += WG) {
        if (cached) {
            atomicStore(&wg[2u * SLOTS + i], NONE);
        }
        atomicStore(&wg[i], identity());
        atomicStore(&wg[SLOTS + i], 0u);
    }
    if (lid == 0u) {
        atomicStore(&wkept, 0u);
    }
    workgroupBarrier();
}

@compute @workgroup_size(WG)
fn extreme_private(@builtin(local_invocation_index) lid: u32,
                   @builtin(workgroup_id) wid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
    start(lid, false);
    finish_kept(lid, scan_runs(wid.x * WG + lid, nwg.x * WG, false));
    for (var i = lid; i < P.ncell; i += WG) {
        let n = atomicLoad(&wg[SLOTS + i]);
        if (n != 0u) {
            add64(i, n);
            pick_out(i, atomicLoad(&wg[i]));
        }
    }
}

@compute @workgroup_size(WG)
fn extreme_global(@builtin(local_invocation_index) lid: u32,
                  @builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
    start(lid, true);
    finish_kept(lid, scan_runs(wid.x * WG + lid, nwg.x * WG, true));
    for (var i = lid; i < SLOTS; i += WG) {
        let c = atomicLoad(&wg[2u * SLOTS + i]);
        let n = atomicLoad(&wg[SLOTS + i]);
        if (c != NONE && n != 0u) {
            add64(c, n);
            pick_out(c, atomicLoad(&wg[i]));
        }
    }
}
