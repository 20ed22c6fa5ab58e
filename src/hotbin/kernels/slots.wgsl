// Workgroup slots shared by the kernels that bin points (hist.wgsl, extreme.wgsl, fixed.wgsl):
// the host prepends it. Each kernel declares its own `wg` (an array of atomic<u32>) and where its
// cache tags lie in it; the points a workgroup kept in a cell are summed in `wkept`.

var<workgroup> wkept: atomic<u32>;

// Whether the cache slot whose tag is wg[t] holds cell c: a free tag (NONE) is claimed for c by
// whichever invocation gets there first; any other cell leaves the slot to its owner.
fn owns(t: u32, c: u32) -> bool {
    var owner = atomicLoad(&wg[t]);
    if (owner == NONE) {
        let r = atomicCompareExchangeWeak(&wg[t], NONE, c);
        owner = select(r.old_value, c, r.exchanged);
    }
    return owner == c;
}

// The workgroup's points in a cell (each invocation's `kept`) into 64-bit counter ncell.
fn finish_kept(lid: u32, kept: u32) {
    atomicAdd(&wkept, kept);
    workgroupBarrier();
    let k = atomicLoad(&wkept);
    if (lid == 0u && k != 0u) {
        add64(P.ncell, k);
    }
}
