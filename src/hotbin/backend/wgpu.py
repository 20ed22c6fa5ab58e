"""The wgpu backend: WGSL compute shaders through wgpu-py, on any GPU (Vulkan, Metal, D3D12).

Inputs are NumPy arrays (copied to the device a binding at a time), results are NumPy.
Kernels live in ``hotbin/kernels/*.wgsl``, are specialized with WGSL ``override``
constants and compiled once per device (:class:`_Gpu` caches the pipelines).

What runs on the device, and what is exact
------------------------------------------
* ``histogram`` without weights of uint8/int8/bool (raw value counts, folded into bins
  with :meth:`BinRule.index` on the host: exact for any edges), uint16/int16 (a table
  value -> bin made by :meth:`BinRule.index`, exact), int32/uint32/float32/float16 (the
  rule on order-preserving u32 keys: the host turns the edges into key thresholds
  exactly, whatever the comparison dtype: ``ceil``/``floor`` of the edges for integer
  data, edges rounded up (the closed top edge rounded down) to float32 for float32 data
  compared in float64, so no value is ever rounded into another bin).
* ``histogram2d`` without weights of the same dtypes (8/16-bit axes widened to 32 bits).
* ``bincount`` without weights (int64/uint64 input narrowed to 32 bits: the caller has
  checked ``0 <= x < length``).
* ``cumsum`` of integers (64-bit two's-complement sums: exact, wrapping as NumPy) and
  float32 (the block order every backend shares: bitwise the cpu backend's result).
* ``luma_histogram`` of uint8 RGB/RGBA batches (exact integer Rec. 709 levels).

Delegated to the cpu backend, bit for bit the cpu backend's answer: float64 and 64-bit
integer data (WGSL has no f64, and the data could not be compared exactly in 32 bits),
every weighted sum (float64 or int64 accumulation, and the deterministic fixed-point
words, which need 64-bit integer arithmetic per weight). ``minmax`` and ``max_abs`` are
NumPy reductions on the host (the data are NumPy arrays already).

Counts are exact and 64-bit: workgroups count in u32 (one dispatch reads at most one
storage binding, < 2**31 values) and add their totals into 64-bit global counters:
through the adapter's 64-bit atomics where it has them (``shader-int64-atomic-all-ops``:
Vulkan on NVIDIA, AMD, lavapipe), otherwise into split counters, two u32 words whose
high word takes the carry of whichever atomic add wrapped the low word. Both leave the
same little-endian u64 per counter (``kernels/out_atomic64.wgsl``, ``out_split.wgsl``).

The adapter is the high-performance one unless ``$HOTBIN_WGPU_ADAPTER`` says otherwise:
``low-power``, an index into ``wgpu.gpu.enumerate_adapters_sync()``, or a
case-insensitive substring of the adapter's description (device, vendor, backend,
adapter type), e.g. ``llvmpipe`` or ``nvidia``. The device is requested with the
adapter's own limits (binding size, workgroup storage), and inputs larger than one
binding are processed in chunks.
"""
from __future__ import annotations

import importlib.resources
import os
import threading

import numpy as np

from .. import fixedpoint
from ..binning import MAX_SLACK, BinRule
from . import to_host

NAME = "wgpu"
ENV_ADAPTER = "HOTBIN_WGPU_ADAPTER"
INSTALL = 'pip install "hotbin[wgpu]"'

# --- tuning (benchmarks/wgpu_suite.py justified each; rerun it to retune) -----------
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
#: interleaved copies of the 256 level counters in luma.wgsl
LUMA_COPIES = 4
#: cache slots of hist.wgsl's hist_global (cells too many for workgroup memory)
CACHE_SLOTS = 2048
#: values per invocation in scan.wgsl (a block is WG * SCAN_ITEMS values)
SCAN_ITEMS = 8
#: invocations per workgroup of scan_lanes.wgsl (one per lane block: few, long-running)
SCAN_LANES_WG = {"gpu": 64, "cpu": 4}
#: use the adapter's 64-bit atomics for global counters where present (else split counters)
ATOMIC64 = True
#: upper bound on the bytes of one chunk (one storage binding); the adapter's binding
#: limit lowers it. Tests lower it to force chunking.
CHUNK_BYTES = 1 << 30

_KEY_KINDS = {np.dtype(np.uint32): 0, np.dtype(np.int32): 1, np.dtype(np.float32): 2}
_KIND_LUT16 = 3
_BUF = None  # wgpu.BufferUsage, set on import of wgpu


# --- the device --------------------------------------------------------------------

def _import_wgpu():
    try:
        import wgpu
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"the wgpu backend needs the wgpu package (wgpu-py): {INSTALL}") from exc
    return wgpu


def _describe(adapter) -> str:
    info = adapter.info
    return (f"{info.get('device', '?')} ({info.get('vendor', '')}, "
            f"{info.get('backend_type', '?')}, {info.get('adapter_type', '?')})")


def _pick_adapter(wgpu):
    choice = os.environ.get(ENV_ADAPTER, "").strip()
    if choice in ("", "high-performance", "low-power"):
        return wgpu.gpu.request_adapter_sync(power_preference=choice or "high-performance")
    adapters = wgpu.gpu.enumerate_adapters_sync()
    if choice.isdigit():
        i = int(choice)
        if i >= len(adapters):
            raise RuntimeError(f"${ENV_ADAPTER}={choice}: only {len(adapters)} WebGPU adapters")
        return adapters[i]
    for a in adapters:
        if choice.lower() in _describe(a).lower():
            return a
    names = "; ".join(_describe(a) for a in adapters) or "none"
    raise RuntimeError(f"${ENV_ADAPTER}={choice!r} matches no WebGPU adapter (found: {names})")


_FEATURES = ("shader-int64", "shader-int64-atomic-all-ops")
_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size",
           "max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
           "max-compute-workgroup-size-x", "max-compute-workgroups-per-dimension",
           "max-storage-buffers-per-shader-stage")


class _Gpu:
    """One adapter's device, its limits and its compiled pipelines."""

    def __init__(self):
        global _BUF
        wgpu = _import_wgpu()
        _BUF = wgpu.BufferUsage
        self.wgpu = wgpu
        adapter = _pick_adapter(wgpu)
        if adapter is None:
            raise RuntimeError("no WebGPU adapter found (install a Vulkan driver, e.g. "
                               "Mesa's lavapipe: apt-get install mesa-vulkan-drivers)")
        self.adapter = adapter
        self.name = _describe(adapter)
        lim = adapter.limits
        wanted = [f for f in _FEATURES if f in adapter.features]
        self.device = adapter.request_device_sync(
            required_features=wanted, required_limits={k: lim[k] for k in _LIMITS if k in lim})
        #: 64-bit atomics for the global counters (tests switch it to cover both kernels)
        self.atomic64 = ATOMIC64 and len(wanted) == len(_FEATURES)
        self.has_atomic64 = len(wanted) == len(_FEATURES)
        self.limits = self.device.limits
        kind = "cpu" if str(adapter.info.get("adapter_type", "")).lower() == "cpu" else "gpu"
        self.kind = kind
        self.workgroups = WORKGROUPS[kind]
        self.max_groups = int(self.limits["max-compute-workgroups-per-dimension"])
        self.wg_words = int(self.limits["max-compute-workgroup-storage-size"]) // 4
        self._modules = {}
        self._pipelines = {}
        self._layouts = {}
        self._lock = threading.Lock()

    @property
    def max_binding(self) -> int:
        """Bytes one storage binding may have on this device."""
        return min(int(self.limits["max-storage-buffer-binding-size"]),
                   int(self.limits["max-buffer-size"]))

    def fits(self, ncell: int) -> bool:
        """Whether ``ncell`` 64-bit counters (and their thresholds) fit one binding."""
        return ncell < (1 << 31) and 8 * ncell <= self.max_binding

    @property
    def binding(self) -> int:
        """Bytes one chunk may have: the binding limit (and CHUNK_BYTES), a multiple of 16."""
        b = min(int(self.limits["max-storage-buffer-binding-size"]),
                int(self.limits["max-buffer-size"]), CHUNK_BYTES)
        return max(16, b - b % 16)

    # kernels ----------------------------------------------------------------------
    #: bindings of each kernel file: 0 uniform params, 1..3 read-only storage, 4 output
    _BINDINGS = {"hist": (0, 1, 2, 3, 4), "hist_u8": (0, 2, 4), "luma": (0, 2, 4),
                 "scan": (0, 2, 3, 4), "scan_lanes": (0, 2, 3, 4)}
    #: files prepended to a kernel's own source (shared WGSL functions); "out" is the
    #: 64-bit counter file of this device (out_atomic64 or out_split)
    _PRELUDE = {"hist": ("rule", "out"), "hist_u8": ("out",), "luma": ("out",)}

    def _module(self, name):
        out = "out_atomic64" if self.atomic64 else "out_split"
        key = (name, out)
        if key not in self._modules:
            files = importlib.resources.files("hotbin") / "kernels"
            parts = [(files / f"{out if p == 'out' else p}.wgsl").read_text()
                     for p in self._PRELUDE.get(name, ())]
            parts.append((files / f"{name}.wgsl").read_text())
            self._modules[key] = self.device.create_shader_module(
                label=name, code="\n".join(parts))
        return self._modules[key]

    def _layout(self, name):
        if name not in self._layouts:
            SS = self.wgpu.ShaderStage
            BT = self.wgpu.BufferBindingType
            entries = []
            for b in self._BINDINGS[name]:
                t = BT.uniform if b == 0 else (BT.storage if b == 4 else BT.read_only_storage)
                entries.append({"binding": b, "visibility": SS.COMPUTE, "buffer": {"type": t}})
            bgl = self.device.create_bind_group_layout(entries=entries)
            self._layouts[name] = (bgl, self.device.create_pipeline_layout(bind_group_layouts=[bgl]))
        return self._layouts[name]

    def pipeline(self, name, entry, **constants):
        key = (name, entry, self.atomic64, tuple(sorted(constants.items())))
        with self._lock:
            if key not in self._pipelines:
                _, layout = self._layout(name)
                self._pipelines[key] = self.device.create_compute_pipeline(
                    label=f"{name}.{entry}", layout=layout,
                    compute={"module": self._module(name), "entry_point": entry,
                             "constants": {k: float(v) for k, v in constants.items()}})
        return self._pipelines[key]

    # buffers ----------------------------------------------------------------------
    def storage(self, nbytes):
        """A zeroed storage buffer of at least ``nbytes`` (16 at least, a multiple of 4)."""
        usage = _BUF.STORAGE | _BUF.COPY_SRC | _BUF.COPY_DST
        return self.device.create_buffer(size=max(16, _round4(nbytes)), usage=usage)

    def upload(self, buf, arr):
        """Write a contiguous array at the start of ``buf`` (padded to 4 bytes)."""
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        if raw.size % 4:
            raw = np.concatenate([raw, np.zeros(4 - raw.size % 4, np.uint8)])
        if raw.size:
            self.device.queue.write_buffer(buf, 0, raw)

    def with_data(self, arr):
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        buf = self.storage(raw.size)
        self.upload(buf, raw)
        return buf

    def read(self, buf, nbytes=None):
        return np.frombuffer(self.device.queue.read_buffer(buf, 0, nbytes), np.uint8)

    def run(self, name, pipeline, params, buffers, groups, encoder=None):
        """Dispatch ``pipeline`` with uniform ``params`` (bytes) and storage ``buffers``
        ({binding: buffer}); ``groups`` is (x, y). Records into ``encoder`` if given,
        else submits at once."""
        bgl, _ = self._layout(name)
        ubuf = self.device.create_buffer_with_data(data=params, usage=_BUF.UNIFORM)
        entries = [{"binding": 0, "resource": {"buffer": ubuf, "offset": 0, "size": ubuf.size}}]
        for b, buf in sorted(buffers.items()):
            entries.append({"binding": b, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
        bg = self.device.create_bind_group(layout=bgl, entries=entries)
        enc = encoder or self.device.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(pipeline)
        cp.set_bind_group(0, bg)
        cp.dispatch_workgroups(int(groups[0]), int(groups[1]) if len(groups) > 1 else 1, 1)
        cp.end()
        if encoder is None:
            self.device.queue.submit([enc.finish()])

    def groups(self, units):
        """Workgroups for a grid-stride kernel over ``units`` items of WG invocations."""
        return max(1, min(-(-units // WG), self.workgroups, self.max_groups))


_GPU = None
_GPU_ERROR = None
_GPU_LOCK = threading.Lock()


def _gpu() -> _Gpu:
    global _GPU, _GPU_ERROR
    with _GPU_LOCK:
        if _GPU is None and _GPU_ERROR is None:
            try:
                _GPU = _Gpu()
            except ModuleNotFoundError:
                raise
            except Exception as exc:  # no adapter or device: remember why
                _GPU_ERROR = exc
        if _GPU is None:
            raise RuntimeError(f"wgpu backend: no usable WebGPU device ({_GPU_ERROR})") from _GPU_ERROR
        return _GPU


def _pow2_floor(n):
    return 1 << (max(1, int(n)).bit_length() - 1)


def _round4(n):
    return (int(n) + 3) // 4 * 4


def _cpu():
    from . import cpu
    return cpu


# --- the interface ---------------------------------------------------------------

def available() -> bool:
    try:
        _gpu()
        return True
    except Exception:
        return False


def require() -> None:
    _import_wgpu()
    _gpu()


def devices() -> list[str]:
    return [_gpu().name]


def asarray(a):
    return to_host(a)


def to_output(x, like=None):
    return x


def minmax(a):
    """``(a.min(), a.max())`` by NumPy (NaN when ``a`` holds a NaN): one vectorized host
    pass over data that is on the host anyway, and no numba compilation."""
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    return a.dtype.type(a.min()), a.dtype.type(a.max())


def max_abs(w) -> float:
    return fixedpoint.max_abs(w)


def _native(a: np.ndarray) -> np.ndarray:
    """Contiguous, native byte order, bool as uint8."""
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    return np.ascontiguousarray(a, a.dtype.newbyteorder("="))


def histogram(a, rule: BinRule, weights=None, scale=None):
    a = np.asarray(a)
    if (weights is not None or scale is not None or not _rule_ok(rule)
            or not _gpu().fits(rule.nbins)):
        return _cpu().histogram(a, rule, weights, scale)
    x = _native(a).reshape(-1)
    dt = x.dtype
    if rule.nbins == 0:
        return np.zeros(0, np.int64)
    if dt.itemsize == 1 and dt.kind in "iu":
        values = np.arange(256, dtype=np.uint8).view(dt)
        return _fold(_count_u8(x.view(np.uint8)), rule.index(values), rule.nbins)
    if dt.itemsize == 2 and dt.kind in "iu":
        table = rule.index(np.arange(1 << 16, dtype=np.uint16).view(dt))
        return _hist_lut16(x.view(np.uint16), table.astype(np.int64).astype(np.uint32),
                           rule.nbins)
    keyed = _keyed(x)
    if keyed is None:
        return _cpu().histogram(a, rule)
    data, kind = keyed
    axis = _axis(rule, kind)
    if axis is None:
        return np.zeros(rule.nbins, np.int64)
    return _hist_cells(1, [data], [kind], [axis], rule.nbins, 1).reshape(-1)


def histogram2d(x, y, rx: BinRule, ry: BinRule, weights=None, scale=None):
    nx, ny = rx.nbins, ry.nbins
    kx, ky = _keyed(_widen(_native(x).reshape(-1))), _keyed(_widen(_native(y).reshape(-1)))
    fits = _gpu().fits(nx * ny) and _gpu().fits(nx + ny)
    if (weights is not None or scale is not None or kx is None or ky is None or not fits
            or not (_rule_ok(rx) and _rule_ok(ry))):
        return _cpu().histogram2d(np.asarray(x), np.asarray(y), rx, ry, weights, scale)
    ax = _axis(rx, kx[1]) if nx else None
    ay = _axis(ry, ky[1]) if ny else None
    if ax is None or ay is None:
        return np.zeros((nx, ny), np.int64), 0
    grid = _hist_cells(2, [kx[0], ky[0]], [kx[1], ky[1]], [ax, ay], nx * ny, ny)
    return grid.reshape(nx, ny), int(grid.sum())


def bincount(x, length, weights=None):
    x = np.asarray(x)
    if weights is not None or length == 0:
        return _cpu().bincount(x, length, weights)
    if not _gpu().fits(length):
        return _cpu().bincount(x, length)
    if x.dtype.itemsize == 8:
        x = x.astype(np.int32)  # the caller checked 0 <= x < length
    edges = np.arange(length + 1, dtype=np.int64)
    return histogram(x, BinRule(edges=edges, cmp=edges, uniform=True))


def cumsum(a, axis, od, exclusive=False):
    """Prefix sums as :func:`hotbin.backend.cpu.cumsum` computes them, bit for bit.

    Integers: 64-bit two's-complement words (scan.wgsl: exact, wrapping as NumPy); along
    an axis, the lanes are scanned end to end as one array and each lane then loses the
    sum before it (exact: the words are modular). float32: the shared block order
    (scan_lanes.wgsl). The rest (float64, bool, float16, complex, integers from floats)
    is the cpu backend's.
    """
    a = np.asarray(a)
    od = np.dtype(od)
    kind = _cpu().scan_kind(od)
    if a.size and kind == "int" and a.dtype.kind in "biu":
        return _int_cumsum(a, axis, od, exclusive)
    if a.size and od == np.float32 and a.dtype.kind in "biuf":
        return _float_cumsum(a, axis, exclusive)
    return _cpu().cumsum(a, axis, od, exclusive)


def _int_cumsum(a, axis, od, exclusive):
    if axis is not None and a.ndim > 1:
        return _cpu().int_lanes(lambda x, wide: _int_cumsum(x, None, wide, False), a, axis, od, exclusive)
    x = _native(a).reshape(-1)
    if x.dtype.itemsize <= 4:
        elem = 1 if x.dtype.kind == "i" else 0
        x = x.astype(np.int32 if elem else np.uint32, copy=False)
    else:
        elem = 2
    res = _scan(x, elem, np.dtype(np.int64 if od.kind == "i" else np.uint64), exclusive)
    return res if res.dtype == od else res.astype(od)


def _float_cumsum(a, axis, exclusive):
    """float32 scans in the shared block order: whole lanes per chunk, or one long lane in
    chunks of whole blocks continued from the previous chunk's total (the same offsets)."""
    cpu, g = _cpu(), _gpu()
    x = _native(a).astype(np.float32, copy=False)
    res = np.empty(x.shape if axis is not None else (x.size,), np.float32)
    outer, m, inner = cpu.scan_layout(x.shape, axis)
    src, dst = x.reshape(outer, m, inner), res.reshape(outer, m, inner)
    cap = g.binding // 4  # values per binding
    if m * inner <= cap:
        rows = cap // (m * inner)
        for o in range(0, outer, rows):
            _lanes_device(g, src[o:o + rows], dst[o:o + rows])
    elif outer == inner == 1 and cpu.SCAN_BLOCK <= cap:
        step = cap // cpu.SCAN_BLOCK * cpu.SCAN_BLOCK
        carry = None
        for s in range(0, m, step):
            carry = _lanes_device(g, src[:, s:s + step], dst[:, s:s + step], carry, True)
    else:  # a lane's block wider than a binding: the same bits on the host
        return cpu.cumsum(a, axis, np.float32, exclusive)
    return cpu.shift_exclusive(res, 0 if axis is None else axis) if exclusive else res


def _lanes_device(g, src, dst, carry=None, total=False):
    """Scan the lanes of ``src`` ``(outer, m, inner)`` float32 into ``dst`` from ``carry``
    (scan_lanes.wgsl); returns the lanes' totals (the next carry) when ``total``."""
    block = _cpu().SCAN_BLOCK
    outer, m, inner = src.shape
    nblk = -(-m // block)
    units = outer * nblk * inner
    wg = SCAN_LANES_WG[g.kind]
    consts = dict(WG=wg, BLOCK=block)
    head = np.array([m, inner, nblk, units], np.uint32).tobytes()
    groups = (max(1, min(-(-units // wg), g.max_groups)),)
    buf, out = g.with_data(src), g.storage(src.size * 4)
    sums = np.full((outer, nblk, inner), -0.0, np.float32)
    if nblk > 1 or total:
        sbuf = g.storage(units * 4)
        g.run("scan_lanes", g.pipeline("scan_lanes", "lane_sums", **consts), head,
              {2: buf, 3: g.storage(16), 4: sbuf}, groups)
        sums = g.read(sbuf, units * 4).view(np.float32).reshape(sums.shape)
    offsets, after = _cpu().block_offsets(sums, carry)
    g.run("scan_lanes", g.pipeline("scan_lanes", "lane_scan", **consts), head,
          {2: buf, 3: g.with_data(np.ascontiguousarray(offsets)), 4: out}, groups)
    dst[...] = g.read(out, src.size * 4).view(np.float32).reshape(src.shape)
    return after


def luma_histogram(img) -> np.ndarray:
    """Histograms of exact Rec. 709 luma levels of uint8 RGB(A) images.

    ``img`` is ``(H, W, C)`` or a batch ``(N, H, W, C)`` with ``C`` 3 or 4;
    ``level = (2126 R + 7152 G + 722 B) // 10000`` (alpha ignored). Returns int64
    counts, ``(256,)`` or ``(N, 256)``, exact and deterministic.
    """
    img = np.asarray(img)
    if img.dtype != np.uint8:
        raise TypeError(f"img: expected uint8 pixels, got dtype {img.dtype}")
    if img.ndim not in (3, 4) or img.shape[-1] not in (3, 4):
        raise ValueError(f"img: expected shape (H, W, C) or (N, H, W, C) with C in (3, 4), "
                         f"got {img.shape}")
    batch = img if img.ndim == 4 else img[None]
    out = _luma(np.ascontiguousarray(batch))
    return out if img.ndim == 4 else out[0]


# --- host side of the bin rule ------------------------------------------------------

def _rule_ok(rule: BinRule) -> bool:
    """Rules the kernels take: finite-or-infinite, non-NaN edges, fewer than 2**31 bins."""
    cmp = rule.kernel_cmp
    return rule.nbins < (1 << 31) and not (cmp.dtype.kind == "f" and np.isnan(cmp).any())


def _widen(x: np.ndarray) -> np.ndarray:
    """8/16-bit integers become 32-bit (exact) for the keyed 2-D kernel."""
    if x.dtype.kind in "iu" and x.dtype.itemsize < 4:
        return x.astype(np.int32 if x.dtype.kind == "i" else np.uint32)
    return x


def _keyed(x: np.ndarray):
    """(raw u32 words, key kind) of 32-bit data, None for data no kernel compares exactly."""
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    kind = _KEY_KINDS.get(x.dtype)
    return None if kind is None else (x.view(np.uint32), kind)


def _f32_keys(f: np.ndarray) -> np.ndarray:
    f = np.asarray(f, np.float32) + np.float32(0)  # -0.0 -> +0.0: they compare equal
    bits = f.view(np.uint32)
    return np.where(bits >> 31, ~bits, bits ^ np.uint32(0x80000000)).astype(np.uint32)


def _round_f32(e: np.ndarray, up: bool) -> np.ndarray:
    """Each float64 edge rounded up (down) to a float32: ``e <= v  iff  up(e) <= v``."""
    with np.errstate(over="ignore"):
        f = e.astype(np.float32)
    wrong = f.astype(np.float64) < e if up else f.astype(np.float64) > e
    f[wrong] = np.nextafter(f[wrong], np.float32(np.inf if up else -np.inf))
    return f


def _thresholds(cmp: np.ndarray, kind: int):
    """Key thresholds of a rule's edges for data of key ``kind``.

    Returns ``(th, khi, nsearch)``: ``th[i]`` the lowest key of bin ``i`` (the first
    ``nsearch`` of them reachable), ``khi`` the highest key of the last bin; or None
    when no value of that kind lands in any bin. Exact for every comparison dtype.
    """
    if kind == _KEY_KINDS[np.dtype(np.float32)]:
        if cmp.dtype == np.float32:
            low, top = cmp[:-1], cmp[-1:]
        else:
            e = cmp.astype(np.float64)
            low, top = _round_f32(e[:-1], True), _round_f32(e[-1:], False)
        th, khi = _f32_keys(low), int(_f32_keys(top)[0])
        return (th, khi, th.size) if th[0] <= khi else None
    lo, hi = (-(1 << 31), (1 << 31) - 1) if kind == 1 else (0, (1 << 32) - 1)
    if cmp.dtype.kind == "f":
        e = cmp.astype(np.float64)
        low = np.clip(np.ceil(e[:-1]), lo, hi + 1).astype(np.int64)
        top = int(np.clip(np.floor(e[-1]), lo - 1, hi))
    elif cmp.dtype.kind == "u":
        low = np.minimum(cmp[:-1], np.uint64(hi + 1)).astype(np.int64)
        top = min(int(cmp[-1]), hi)
    else:
        low = np.clip(cmp[:-1].astype(np.int64), lo, hi + 1)
        top = int(np.clip(cmp[-1], lo - 1, hi))
    if low[0] > hi or top < lo or low[0] > top:
        return None
    nsearch = int(np.count_nonzero(low <= hi))
    return (low[:nsearch] - lo).astype(np.uint32), top - lo, nsearch


def _axis(rule: BinRule, kind: int):
    """(thresholds, Axis record fields) of a rule for data of key ``kind``, or None (empty)."""
    t = _thresholds(rule.kernel_cmp, kind)
    if t is None:
        return None
    th, khi, nsearch = t
    lo = _key_to_f32(th[0]) if kind == 2 else np.float32(0)  # ints guess from key offsets
    with np.errstate(over="ignore"):
        scale = np.float32(rule.scale)
    uniform = (rule.uniform and np.isfinite(scale) and np.isfinite(lo)
               and _guess_slack(th, kind, lo, scale) <= MAX_SLACK)
    return th, (float(lo), float(scale), nsearch, khi, int(uniform))


def _guess_slack(th, kind, lo, scale) -> float:
    """How far (in bins) rule.wgsl's float32 guess can land from the bin: ``max |t(th[i]) - i|``
    over each bin's lowest key. ``t`` is monotone, so a value of bin ``i`` is guessed within
    this plus one bin of ``i``; the shader then steps bin by bin, so a rule whose guess is
    worse than :data:`hotbin.binning.MAX_SLACK` (an integer key offset times a large scale,
    float32 rounding) is searched instead: never O(bins) per value.
    """
    with np.errstate(all="ignore"):
        if kind == 2:
            bits = np.where(th >> np.uint32(31), th ^ np.uint32(0x80000000), ~th).astype(np.uint32)
            t = (bits.view(np.float32) - np.float32(lo)) * np.float32(scale)
        else:
            t = (th - th[0]).astype(np.float32) * np.float32(scale)
        return float(np.max(np.abs(t.astype(np.float64) - np.arange(th.size))))


def _key_to_f32(k) -> np.float32:
    k = np.uint32(k)
    bits = k ^ np.uint32(0x80000000) if k >> np.uint32(31) else ~k
    return np.array([bits], np.uint32).view(np.float32)[0]


def _axis_bytes(fields, off) -> bytes:
    lo, scale, nsearch, khi, uniform = fields
    rec = np.zeros(8, np.uint32)
    rec[:2] = np.array([lo, scale], np.float32).view(np.uint32)
    rec[2:6] = [off, nsearch, khi, uniform]
    return rec.tobytes()


def _fold(counts: np.ndarray, idx: np.ndarray, nbins: int) -> np.ndarray:
    """Sum raw value counts into bins: value ``v`` goes to bin ``idx[v]`` (-1: none)."""
    out = np.zeros(nbins, np.int64)
    keep = idx >= 0
    np.add.at(out, idx[keep], counts[keep])
    return out


def _words64(raw: np.ndarray) -> np.ndarray:
    """Split counters (lo, hi u32 words) -> int64."""
    return raw.view(np.uint64).astype(np.int64)


# --- launches -----------------------------------------------------------------------

def _count_u8(x: np.ndarray) -> np.ndarray:
    """Counts of each byte value of a flat uint8 array (int64, 256)."""
    g = _gpu()
    n16 = x.size // 16
    out = g.storage(256 * 8)
    if n16:
        step = g.binding
        buf = g.storage(min(n16 * 16, step))
        for s in range(0, n16 * 16, step):
            chunk = x[s:min(s + step, n16 * 16)]
            g.upload(buf, chunk)
            _launch_u8(g, buf, chunk.size // 16, out)
    counts = _words64(g.read(out))
    tail = x[n16 * 16:]
    return counts + np.bincount(tail, minlength=256) if tail.size else counts


def _launch_u8(g, buf, n16, out, copies=None, unroll=None, wg=None, groups=None, mode=None,
               encoder=None):
    """Count the first ``n16`` 16-byte loads of ``buf`` into ``out``.

    The keyword arguments override the tuning table (benchmarks/wgpu_suite.py sweeps them).
    ``mode`` "atomic": COPIES interleaved copies of workgroup atomic counters; "private":
    u16 counters per invocation, plain increments (WG * 512 bytes of workgroup memory).
    """
    tune = U8[g.kind]
    mode = mode or tune.get("mode", "atomic")
    wg = min(wg or tune["wg"], int(g.limits["max-compute-invocations-per-workgroup"]),
             int(g.limits["max-compute-workgroup-size-x"]))
    unroll = unroll or tune["unroll"]
    if mode == "private":
        while wg > 1 and 128 * wg + 256 > g.wg_words:  # adapter's limit
            wg //= 2
        pipe = g.pipeline("hist_u8", "count_bytes_private", WG=wg, COPIES=1, UNROLL=unroll,
                          PRIV_WORDS=128 * wg)
    else:
        copies = min(copies or tune.get("copies", 8), _pow2_floor(g.wg_words // 256))  # adapter limit
        pipe = g.pipeline("hist_u8", "count_bytes", WG=wg, COPIES=copies, UNROLL=unroll)
    params = np.array([n16, 0, 0, 0], np.uint32).tobytes()
    groups = groups or max(1, min(-(-n16 // wg), tune["groups"], g.max_groups))
    g.run("hist_u8", pipe, params, {2: buf, 4: out}, (groups,), encoder)


def _hist_lut16(x: np.ndarray, table: np.ndarray, nbins: int) -> np.ndarray:
    axis = (table, (0.0, 0.0, 1, 0, 0))
    return _hist_cells(1, [x], [_KIND_LUT16], [axis], nbins, 1).reshape(-1)


def _hist_cells(dims, data, kinds, axes, ncell, ny) -> np.ndarray:
    """Counts (int64, ncell) of the cells of 1-D or 2-D keyed data, chunk by chunk."""
    g = _gpu()
    ths = [a[0] for a in axes]
    offs = np.cumsum([0] + [t.size for t in ths])
    th = g.with_data(np.concatenate(ths).astype(np.uint32))
    head = np.array([0, ny, ncell, 0], np.uint32)
    recs = b"".join(_axis_bytes(a[1], int(o)) for a, o in zip(axes, offs))
    if dims == 1:
        recs += recs
    pow2 = max(64, 1 << (ncell - 1).bit_length())
    if pow2 <= g.wg_words:
        entry, slots = "hist_private", pow2
    else:
        entry, slots = "hist_global", min(2 * CACHE_SLOTS, _pow2_floor(g.wg_words))
    pipe = g.pipeline("hist", entry, WG=WG, SLOTS=slots, DIMS=dims, KIND_X=kinds[0],
                      KIND_Y=kinds[-1])
    out = g.storage(8 * ncell)
    n = data[0].size
    itemsize = 2 if kinds[0] == _KIND_LUT16 else 4
    step = g.binding // itemsize
    bufs = [g.storage(min(n, step) * itemsize) for _ in data]
    for s in range(0, n, step):
        for buf, d in zip(bufs, data):
            g.upload(buf, d[s:s + step])
        head[0] = min(step, n - s)
        g.run("hist", pipe, head.tobytes() + recs,
              {1: th, 2: bufs[0], 3: bufs[-1], 4: out}, (g.groups(int(head[0])),))
    return _words64(g.read(out, 8 * ncell))


def _scan(x: np.ndarray, elem: int, od: np.dtype, exclusive: bool) -> np.ndarray:
    """Prefix sums of flat integers ``x`` (u32/i32/64-bit words by ``elem``) in the 64-bit ``od``."""
    g = _gpu()
    n = x.size
    res = np.empty(n, od)
    if n == 0:
        return res
    block = WG * SCAN_ITEMS
    step = max(block, g.binding // max(x.itemsize, od.itemsize) // block * block)
    src = g.storage(min(n, step) * x.itemsize)
    dst = g.storage(min(n, step) * od.itemsize)
    carry = np.zeros(1, od)
    for s in range(0, n, step):
        chunk = x[s:s + step]
        g.upload(src, chunk)
        _scan_device(g, src, chunk.size, elem, exclusive, carry.view(np.uint32), dst)
        part = g.read(dst, chunk.size * od.itemsize).view(od)
        res[s:s + chunk.size] = part
        carry = part[-1:] + chunk[-1:].astype(od) if exclusive else part[-1:].copy()
    return res


def _scan_device(g, src, n, elem, exclusive, carry, dst):
    """Scan ``n`` values of ``src`` into ``dst`` on the device (reduce, scan totals, scan)."""
    block = WG * SCAN_ITEMS
    nblk = -(-n // block)
    consts = dict(WG=WG, ITEMS=SCAN_ITEMS)
    groups = (max(1, min(nblk, g.workgroups, g.max_groups)),)
    offs = g.storage(nblk * 8)
    if nblk > 1:
        sums = g.storage(nblk * 8)
        head = np.array([n, nblk, 0, 0, 0, 0, 0, 0], np.uint32).tobytes()
        g.run("scan", g.pipeline("scan", "reduce_blocks", ELEM=elem, **consts), head,
              {2: src, 3: offs, 4: sums}, groups)
        _scan_device(g, sums, nblk, 2, True, np.zeros(2, np.uint32), offs)
    head = np.array([n, nblk, int(exclusive), 0, carry[0], carry[1], 0, 0], np.uint32).tobytes()
    g.run("scan", g.pipeline("scan", "scan_blocks", ELEM=elem, **consts), head,
          {2: src, 3: offs, 4: dst}, groups)


def _luma(batch: np.ndarray) -> np.ndarray:
    g = _gpu()
    n, h, w, c = batch.shape
    ppi = h * w
    out = np.zeros((n, 256), np.int64)
    if n == 0 or ppi == 0:
        return out
    if ppi >= (1 << 31):
        return _luma_host(batch)
    flat = batch.reshape(-1)
    total = n * ppi
    step_px = max(4, g.binding // c // 4 * 4)
    max_imgs = max(1, min(g.max_groups, g.binding // 2048))
    copies = min(LUMA_COPIES, _pow2_floor(g.wg_words // 256))
    pipe = g.pipeline("luma", "luma_hist", WG=WG, COPIES=copies, C=c)
    buf = g.storage(min(total, step_px) * c)
    p0 = 0
    while p0 < total:
        img0 = p0 // ppi
        p1 = min(total, p0 + step_px, (img0 + max_imgs) * ppi)
        if p1 < total:  # chunks start on 4-pixel boundaries (4-byte aligned for RGB)
            p1 = max(p1 // 4 * 4, min(total, p0 + 4))
        off0 = p0 - img0 * ppi
        nimg = -(-(off0 + p1 - p0) // ppi)
        g.upload(buf, flat[p0 * c:p1 * c])
        obuf = g.storage(nimg * 256 * 8)
        per = max(1, min(g.workgroups // nimg, -(-ppi // WG), g.max_groups))
        params = np.array([off0, ppi, p1 - p0, 0], np.uint32).tobytes()
        g.run("luma", pipe, params, {2: buf, 4: obuf}, (per, nimg))
        out[img0:img0 + nimg] += _words64(g.read(obuf)).reshape(nimg, 256)
        p0 = p1
    return out


def _luma_host(batch: np.ndarray) -> np.ndarray:
    """Reference luma histograms on the host (images too large for 32-bit pixel indices)."""
    out = np.zeros((batch.shape[0], 256), np.int64)
    for i, im in enumerate(batch):
        px = im.reshape(-1, im.shape[-1]).astype(np.uint32)
        lvl = (2126 * px[:, 0] + 7152 * px[:, 1] + 722 * px[:, 2]) // 10000
        out[i] = np.bincount(lvl, minlength=256)
    return out
