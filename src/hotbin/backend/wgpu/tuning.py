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
#: gpu: H200 (Vulkan), `wgpu_suite.py --sweep`, 1 GiB, 2026-12-01 run 2 (results/
#:      gpu-h200.md), with the loads of a trip held as values (not an
#:      array): atomic copies, 1024 invocations, 32 lane copies, 4 loads in flight, 1056
#:      workgroups (8 per SM) = 3553 / 3407 / 3846 GB/s (uniform / narrow / constant), 1.01 /
#:      1.04 / 1.13 of the cuda backend's counting kernel in the same process; the best over
#:      all three inputs. The 2026-11-30 row (8 copies, no unrolling, 2112 workgroups) ran
#:      2321 / 2393 / 3990 in the same run; 2 loads in flight 3272 / 3240 (uniform / narrow).
#:      Before, unrolling through a dynamically indexed array of loads fell to ~800 (local
#:      memory); private counters ran ~107.
#: cpu: lavapipe, `wgpu_suite.py --mib 4 --sweep` on 2 cores: private counters, 16
#:      invocations, 2 loads in flight (0.79 GB/s uniform vs 0.10 for 8 atomic copies).
U8 = {"gpu": {"mode": "atomic", "wg": 1024, "copies": 32, "unroll": 4, "groups": 1056},
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
#: largest read-back (and counter) buffer kept for reuse, by power-of-two size class: a
#: call's counters are zeroed, counted and copied out in one submission and come back through
#: a staging buffer mapped once. 1 GiB uint8, H200, wgpu_suite.py run 3 (results/
#: gpu-h200.md), uniform / narrow / constant: 0.521 / 0.490 / 0.665 ms a
#: call, against 0.912 / 1.082 / 0.904 with new counters, a submission and
#: ``queue.read_buffer`` (a second submission and a new staging buffer). 16 MiB holds a
#: 1024 x 1024 grid of 64-bit counters; larger results get a buffer of their own.
STAGING_POOL_BYTES = 16 << 20
#: uploads from UPLOAD_STAGE_FROM bytes go through a ring of UPLOAD_RING mapped staging buffers of
#: UPLOAD_PIECE bytes, kept between calls (a piece written while the one before is copied),
#: instead of ``queue.write_buffer``: 256 MiB on lavapipe 1.4-1.6 GB/s written, 4.7-5.7 mapped;
#: on the H200's Vulkan adapter write_buffer bound every heatmap from NumPy input (~3.3 GB/s)
UPLOAD_STAGE_FROM = 1 << 20
UPLOAD_PIECE = 64 << 20
UPLOAD_RING = 3
#: bind groups kept for dispatches repeated on the same buffers and parameters (each holds
#: its buffers until they are dropped). Same run: 0.681 / 0.919 / 0.777 ms a call making
#: its uniform buffer and bind group each time.
BIND_CACHE = 64
#: seconds a read-back polls the device from the calling thread before it blocks on
#: wgpu-py's poll thread, by adapter type. gpu: same run, 0.794 / 0.743 / 0.692 ms a call
#: waiting on the poll thread (its wake-up comes late after a longer dispatch); a blocking
#: wgpuDevicePoll of its own in the calling thread took 10.3-10.6 ms (run 2). cpu: lavapipe's
#: workers need the cores a spinning thread takes: a 4 KiB call went from 1.0 to 3.7 ms with
#: 2 ms of spinning on 2 cores.
SPIN_S = {"gpu": 0.002, "cpu": 0.0}
