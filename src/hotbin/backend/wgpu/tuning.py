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
#: gpu: H200 (Vulkan), `wgpu_suite.py --sweep`: atomic copies, 1024 invocations, 32 lane
#:      copies, 4 loads in flight, 1056 workgroups (8 per SM), the loads of a trip held as
#:      values (an array of them lands in local memory): the best over all three inputs, at
#:      the cuda backend's counting kernel.
#: cpu: lavapipe, `wgpu_suite.py --mib 4 --sweep` on 2 cores: private counters, 16
#:      invocations, 2 loads in flight (atomic copies were far slower there).
#: Numbers: results/wgpu-h200.md.
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
#: bytes of idle buffers the device keeps for later calls (inputs, counters, staging buffers,
#: by size class; :mod:`.memory`), by adapter type, the oldest destroyed past it: a call reuses
#: the last call's buffers instead of new device memory that wgpu zeroes before first use. A CPU
#: adapter's buffers are the host's memory: it keeps less
POOL_BYTES = {"gpu": 2 << 30, "cpu": 512 << 20}
#: read-backs go through mapped staging buffers of at most READ_PIECE bytes, READ_RING of them
#: in turn when larger (one copied out while the next crosses the link): no staging buffer the
#: size of a large result made and dropped each call
READ_PIECE = 64 << 20
READ_RING = 2
#: host copies into and out of mapped memory are split over COPY_THREADS threads, by adapter type,
#: COPY_PIECE bytes a thread at least (NumPy copies release the GIL): one thread's copy bounds
#: the uploads of a discrete GPU; a CPU adapter (lavapipe) needs the cores for its kernels.
#: Not yet measured on a GPU: ``wgpu_suite.py --calls --sweep`` times 1-8 threads and pieces
#: of 16 and 64 MiB (READ_PIECE, UPLOAD_PIECE) on the public calls
COPY_THREADS = {"gpu": 4, "cpu": 1}
COPY_PIECE = 4 << 20
#: uploads from UPLOAD_STAGE_FROM bytes go through a ring of UPLOAD_RING mapped staging buffers of
#: UPLOAD_PIECE bytes, kept between calls (a piece written while the one before is copied),
#: instead of ``queue.write_buffer``, slower on lavapipe and the bound of every heatmap from
#: NumPy input on the H200's Vulkan adapter (results/wgpu-h200.md)
UPLOAD_STAGE_FROM = 1 << 20
UPLOAD_PIECE = 64 << 20
UPLOAD_RING = 3
#: bind groups kept for dispatches repeated on the same buffers and parameters (each holds
#: its buffers until they are dropped; making them each call was slower: results/wgpu-h200.md).
BIND_CACHE = 64
#: seconds a read-back polls the device from the calling thread before it blocks on
#: wgpu-py's poll thread, by adapter type. gpu: the poll thread's wake-up comes late after a
#: longer dispatch, and a blocking wgpuDevicePoll in the calling thread was slower still. cpu:
#: lavapipe's workers need the cores a spinning thread takes (results/wgpu-h200.md).
SPIN_S = {"gpu": 0.002, "cpu": 0.0}
