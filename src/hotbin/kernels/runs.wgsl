// Runs of weighted points, shared by extreme.wgsl and fixed.wgsl (the host prepends it): each
// invocation walks its share (grid-stride) keeping a run, the cell and how many of its share
// landed there in a row, and flushes it when the cell changes, so a hot cell costs one flush a
// run. What else a run holds is the kernel's: it declares the weights `ws` and the private run
// state that run_reset empties and run_add grows, and flush(cell, n, cached) adds the run to
// its slot. NaN weights are no value: skipped, not counted (but their points are kept).

// This invocation's share; returns the points in a cell.
fn scan_runs(start: u32, stride: u32, cached: bool) -> u32 {
    var cur = NONE;
    var run = 0u;
    var kept = 0u;
    run_reset();
    for (var j = start; j < P.n; j += stride) {
        let c = cell_of(j);
        if (c == NONE) {
            continue;
        }
        kept += 1u;
        let w = ws[j];
        if ((w & 0x7fffffffu) > 0x7f800000u) {
            continue;  // NaN
        }
        if (c != cur) {
            if (run != 0u) {
                flush(cur, run, cached);
            }
            cur = c;
            run = 0u;
            run_reset();
        }
        run += 1u;
        run_add(w);
    }
    if (run != 0u) {
        flush(cur, run, cached);
    }
    return kept;
}
