// 64-bit global counters without 64-bit atomics: split counters, two u32 words (lo, hi) per
// counter (the little-endian layout of a u64). Whichever atomic add wraps the low word adds
// the carry to the high word, so after all adds the pair holds the exact 64-bit sum.

@group(0) @binding(4) var<storage, read_write> out: array<atomic<u32>>;

fn add64(i: u32, c: u32) {
    let old = atomicAdd(&out[2u * i], c);
    if (old > 0xffffffffu - c) {
        atomicAdd(&out[2u * i + 1u], 1u);
    }
}
