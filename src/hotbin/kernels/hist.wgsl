// Histograms of 32-bit values (1-D) and of (x, y) pairs (2-D), with or without categories: the
// counts of the cells of cell.wgsl (prepended, after rule.wgsl).
//
// Each invocation walks its share of the chunk (grid-stride) and keeps a run: the current cell
// and how many consecutive values of its share landed there. A run is flushed only when the
// cell changes, so a hot cell costs one flush per run, not one atomic per value.
//   hist_private: runs flush into workgroup counters (all cells fit), then one 64-bit add per
//                 non-empty cell into the global result (DESIGN.md §1.1).
//   hist_global:  too many cells for workgroup memory; runs flush into a direct-mapped
//                 workgroup cache of cells (a slot is claimed once by the first cell seen), and
//                 only misses go to global memory. A hot cell claims its slot early and then
//                 never reaches a global atomic.
// Global results are 64-bit counters, add64 from the prepended out_atomic64.wgsl (the
// adapter's 64-bit atomics) or out_split.wgsl (split u32 counters). Workgroup counters stay
// below 2^32 because one dispatch reads at most one storage binding (< 2^31 values).

override WG: u32 = 256u;
override SLOTS: u32 = 256u;   // workgroup words, a power of 2: counters (hist_private) or
                              // SLOTS/2 cache tags then SLOTS/2 cache counts (hist_global)

var<workgroup> wg: array<atomic<u32>, SLOTS>;

fn flush_private(c: u32, k: u32) {
    atomicAdd(&wg[c], k);
}

fn flush_cached(c: u32, k: u32) {
    let half = SLOTS / 2u;
    let s = c & (half - 1u);
    if (owns(s, c)) {
        atomicAdd(&wg[half + s], k);
    } else {
        add64(c, k);
    }
}

// This invocation's share of the points, consecutive points of one cell added as
// one run: a hot cell costs one atomic per run, not per point.
fn count_runs(start: u32, stride: u32, cached: bool) {
    var cur = NONE;
    var run = 0u;
    for (var j = start; j < P.n; j += stride) {
        let c = cell_of(j);
        if (c != cur) {
            if (cur != NONE) {
                flush(cur, run, cached);
            }
            cur = c;
            run = 0u;
        }
        run += 1u;
    }
    if (cur != NONE) {
        flush(cur, run, cached);
    }
}

fn flush(c: u32, k: u32, cached: bool) {
    if (cached) {
        flush_cached(c, k);
    } else {
        flush_private(c, k);
    }
}

@compute @workgroup_size(WG)
fn hist_private(@builtin(local_invocation_index) lid: u32,
                @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = lid; i < SLOTS; i += WG) {
        atomicStore(&wg[i], 0u);
    }
    workgroupBarrier();
    count_runs(wid.x * WG + lid, nwg.x * WG, false);
    workgroupBarrier();
    for (var i = lid; i < P.ncell; i += WG) {
        let k = atomicLoad(&wg[i]);
        if (k != 0u) {
            add64(i, k);
        }
    }
}

@compute @workgroup_size(WG)
fn hist_global(@builtin(local_invocation_index) lid: u32,
               @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let half = SLOTS / 2u;
    for (var i = lid; i < half; i += WG) {
        atomicStore(&wg[i], NONE);
        atomicStore(&wg[half + i], 0u);
    }
    workgroupBarrier();
    count_runs(wid.x * WG + lid, nwg.x * WG, true);
    workgroupBarrier();
    for (var i = lid; i < half; i += WG) {
        let c = atomicLoad(&wg[i]);
        let k = atomicLoad(&wg[half + i]);
        if (c != NONE && k != 0u) {
            add64(c, k);
        }
    }
}
