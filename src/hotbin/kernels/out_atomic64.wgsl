// 64-bit global counters through the adapter's 64-bit atomics (shader-int64-atomic-all-ops).
// Same memory layout as out_split.wgsl: one little-endian u64 per counter.

@group(0) @binding(4) var<storage, read_write> out: array<atomic<u64>>;

fn add64(i: u32, c: u32) {
    atomicAdd(&out[i], u64(c));
}
