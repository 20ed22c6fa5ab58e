"""The wgpu backend's tuning table: launch sizes and strategy choices, with their provenance.

benchmarks/wgpu_suite.py justified the uint8 rows; rerun it (``--sweep``) to retune.
Each device copies ATOMIC64, WORKGROUPS and CHUNK_BYTES when made (tests switch them there).
"""

#: invocations per workgroup of every kernel (WebGPU guarantees 256)
WG = 256
#: workgroups per dispatch of the streaming kernels, by adapter type; each grid-strides.
#: GPUs: enough resident workgroups to cover an H200's 132 SMs several times over.
#: CPU adapters (lavapipe): a few per core, so the per-workgroup merge stays cheap.
WORKGROUPS = {"gpu": 2048, "cpu": 16}
#: hist_u8.wgsl (256-bin uint8, target G7), by adapter type. mode "atomic": COPIES
#: interleaved copies of workgroup atomic counters; "private": u16 counters per invocation,
#: plain increments. wg: invocations per workgroup; unroll: 16-byte loads in flight per
#: invocation; groups: workgroups per dispatch.
#: gpu: H200 (Vulkan), `wgpu_suite.py --sweep`, 1 GiB, 2026-11-30 10:46 UTC: atomic copies,
#:      1024 invocations, 8 copies, no unrolling, 2112 workgroups = 2296 / 2376 / 3796 GB/s
#:      (uniform / narrow / constant), 0.82 / 0.79 / 1.37 of the cuda backend's counting
#:      kernel in the same process. 32 lane copies peaked at 2264 / 2259 / 2766; unrolling
#:      (a dynamically indexed array of loads) fell to ~800; private counters to ~107.
#: cpu: lavapipe, `wgpu_suite.py --mib 4 --sweep` on 2 cores: private counters, 16
#:      invocations, 2 loads in flight (0.79 GB/s uniform vs 0.10 for 8 atomic copies).
U8 = {"gpu": {"mode": "atomic", "wg": 1024, "copies": 8, "unroll": 1, "groups": 2112},
      "cpu": {"mode": "private", "wg": 16, "unroll": 2, "groups": 16}}
#: interleaved copies of the 256 level counters in luma.wgsl: its default, not swept
#: (4 KiB of workgroup counters, a quarter of WebGPU's guaranteed 16 KiB)
LUMA_COPIES = 4
#: (tag, count) cache slots of hist.wgsl's hist_global (cells too many for workgroup
#: memory): 2048 pairs fill WebGPU's guaranteed 16 KiB of workgroup storage. extreme.wgsl's
#: extreme_global takes as many (tag, count, key) triples as fit, at most this many
#: (1024 in 16 KiB; not swept)
CACHE_SLOTS = 2048
#: fewest workgroup counters of hist.wgsl's hist_private (and cells of extreme.wgsl's
#: extreme_private): pipelines are compiled per counter count, so every rule of up to 64
#: cells shares one (not swept)
MIN_SLOTS = 64
#: values per invocation in scan.wgsl (a block is WG * SCAN_ITEMS values)
SCAN_ITEMS = 8
#: invocations per workgroup of scan_lanes.wgsl (one per lane block: few, long-running)
SCAN_LANES_WG = {"gpu": 64, "cpu": 4}
#: use the adapter's 64-bit atomics for global counters where present (else split counters)
ATOMIC64 = True
#: upper bound on the bytes of one chunk (one storage binding); the adapter's binding
#: limit lowers it
CHUNK_BYTES = 1 << 30
