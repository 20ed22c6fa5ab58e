"""The WebGPU device: adapter choice, limits, compiled pipelines, buffers and dispatches.

The adapter is the high-performance one unless ``$HOTBIN_WGPU_ADAPTER`` says otherwise:
``low-power``, an index into ``wgpu.gpu.enumerate_adapters_sync()``, or a
case-insensitive substring of the adapter's description (device, vendor, backend,
adapter type), e.g. ``llvmpipe`` or ``nvidia``. The device is requested with the
adapter's own limits (binding size, workgroup storage); callers split inputs larger
than one binding into chunks of :attr:`Gpu.binding` bytes.
"""
from __future__ import annotations

import importlib.resources
import os
import threading
import weakref

import numpy as np

from .memory import LOAD_BYTES, Memory
from .tuning import ATOMIC64, BIND_CACHE, CHUNK_BYTES, SPIN_S, WG, WORKGROUPS

ENV_ADAPTER = "HOTBIN_WGPU_ADAPTER"
INSTALL = 'pip install "hotbin[wgpu]"'

#: bindings of each kernel file: 0 uniform params, 4 and 7 outputs, the others read-only
#: storage (1 thresholds, 2 and 3 data, 5 category codes, 6 weights)
BINDINGS = {"hist": (0, 1, 2, 3, 4, 5), "extreme": (0, 1, 2, 3, 4, 5, 6, 7),
            "fixed": (0, 1, 2, 3, 4, 5, 6, 7),
            "hist_u8": (0, 2, 4), "luma": (0, 2, 4), "scan": (0, 2, 3, 4),
            "scan_lanes": (0, 2, 3, 4)}
#: the bindings kernels write
OUTPUTS = (4, 7)
#: files prepended to a kernel's own source (shared WGSL functions); "out" is the
#: 64-bit counter file of this device (out_atomic64 or out_split)
PRELUDE = {"hist": ("rule", "cell", "slots", "out"), "extreme": ("rule", "cell", "slots", "runs", "out"),
           "fixed": ("rule", "cell", "slots", "runs", "out"),
           "hist_u8": ("out",), "luma": ("out",)}

_FEATURES = ("shader-int64", "shader-int64-atomic-all-ops")
_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size",
           "max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
           "max-compute-workgroup-size-x", "max-compute-workgroups-per-dimension",
           "max-storage-buffers-per-shader-stage")


def import_wgpu():
    try:
        import wgpu
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"the wgpu backend needs the wgpu package (wgpu-py): {INSTALL}") from exc
    return wgpu


def describe(adapter) -> str:
    info = adapter.info
    return (f"{info.get('device', '?')} ({info.get('vendor', '')}, "
            f"{info.get('backend_type', '?')}, {info.get('adapter_type', '?')})")


def pick_adapter(wgpu):
    """The adapter ``$HOTBIN_WGPU_ADAPTER`` names (default: the high-performance one)."""
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
        if choice.lower() in describe(a).lower():
            return a
    names = "; ".join(describe(a) for a in adapters) or "none"
    raise RuntimeError(f"${ENV_ADAPTER}={choice!r} matches no WebGPU adapter (found: {names})")


class Gpu(Memory):
    """One adapter's device, its limits and its compiled pipelines; its buffers and transfers
    are :class:`.memory.Memory`'s."""

    def __init__(self):
        wgpu = import_wgpu()
        self.wgpu = wgpu
        self.usage = wgpu.BufferUsage
        adapter = pick_adapter(wgpu)
        if adapter is None:
            raise RuntimeError("no WebGPU adapter found (install a Vulkan driver, e.g. "
                               "Mesa's lavapipe: apt-get install mesa-vulkan-drivers)")
        self.adapter = adapter
        self.name = describe(adapter)
        lim = adapter.limits
        wanted = [f for f in _FEATURES if f in adapter.features]
        self.device = adapter.request_device_sync(
            required_features=wanted, required_limits={k: lim[k] for k in _LIMITS if k in lim})
        self.has_atomic64 = len(wanted) == len(_FEATURES)
        #: 64-bit atomics for the global counters (tests switch it to cover both kernels)
        self.atomic64 = ATOMIC64 and self.has_atomic64
        self.limits = self.device.limits
        self.kind = "cpu" if str(adapter.info.get("adapter_type", "")).lower() == "cpu" else "gpu"
        self.workgroups = WORKGROUPS[self.kind]
        #: bytes of one chunk at most (tests lower it to force chunking)
        self.chunk_bytes = CHUNK_BYTES
        self.max_groups = int(self.limits["max-compute-workgroups-per-dimension"])
        self.wg_words = int(self.limits["max-compute-workgroup-storage-size"]) // 4
        self._modules = {}
        self._pipelines = {}
        self._layouts = {}
        #: bind groups by (kernel file, params, buffers) and their keys by buffer: _bind_group
        self._binds = {}
        self._bound = {}
        #: keep bind groups for repeated dispatches (benchmarks switch it off to compare)
        self.cache_binds = True
        #: seconds a read-back polls the device in the calling thread (see memory.map_read)
        self.spin_s = SPIN_S[self.kind]
        self._lock = threading.RLock()  # re-entered when a collected buffer drops its bind groups
        self._init_memory()

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
        """Bytes one chunk may have: the binding limit (and chunk_bytes), whole 16-byte loads."""
        b = min(self.max_binding, self.chunk_bytes)
        return max(LOAD_BYTES, b - b % LOAD_BYTES)

    def groups(self, units):
        """Workgroups for a grid-stride kernel over ``units`` items of WG invocations."""
        return max(1, min(-(-units // WG), self.workgroups, self.max_groups))

    # kernels ----------------------------------------------------------------------
    def _module(self, name):
        out = "out_atomic64" if self.atomic64 else "out_split"
        key = (name, out)
        if key not in self._modules:
            files = importlib.resources.files("hotbin") / "kernels"
            parts = [(files / f"{out if p == 'out' else p}.wgsl").read_text()
                     for p in PRELUDE.get(name, ())]
            parts.append((files / f"{name}.wgsl").read_text())
            self._modules[key] = self.device.create_shader_module(
                label=name, code="\n".join(parts))
        return self._modules[key]

    def _layout(self, name):
        if name not in self._layouts:
            SS = self.wgpu.ShaderStage
            BT = self.wgpu.BufferBindingType
            entries = []
            for b in BINDINGS[name]:
                t = BT.uniform if b == 0 else (BT.storage if b in OUTPUTS else BT.read_only_storage)
                entries.append({"binding": b, "visibility": SS.COMPUTE, "buffer": {"type": t}})
            bgl = self.device.create_bind_group_layout(entries=entries)
            self._layouts[name] = (bgl, self.device.create_pipeline_layout(bind_group_layouts=[bgl]))
        return self._layouts[name]

    def pipeline(self, name, entry, **constants):
        """The compute pipeline of ``entry`` in ``kernels/<name>.wgsl``, WGSL overrides set."""
        key = (name, entry, self.atomic64, tuple(sorted(constants.items())))
        with self._lock:
            if key not in self._pipelines:
                _, layout = self._layout(name)
                self._pipelines[key] = self.device.create_compute_pipeline(
                    label=f"{name}.{entry}", layout=layout,
                    compute={"module": self._module(name), "entry_point": entry,
                             "constants": {k: float(v) for k, v in constants.items()}})
        return self._pipelines[key]

    def run(self, name, pipeline, params, buffers, groups, encoder=None):
        """Dispatch ``pipeline`` with uniform ``params`` (bytes) and storage ``buffers``
        ({binding: buffer}); ``groups`` is (x, y). Records into ``encoder`` if given,
        else submits at once."""
        bg = self._bind_group(name, bytes(params), buffers)
        enc = encoder or self.device.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(pipeline)
        cp.set_bind_group(0, bg)
        cp.dispatch_workgroups(int(groups[0]), int(groups[1]) if len(groups) > 1 else 1, 1)
        cp.end()
        if encoder is None:
            self.device.queue.submit([enc.finish()])

    def _bind_group(self, name, params: bytes, buffers):
        """The bind group of uniform ``params`` and storage ``buffers``: made once and kept while
        every buffer lives (at most :data:`~.tuning.BIND_CACHE` of them), so a call that
        repeats one on the same buffers makes no uniform buffer and no bind group."""
        key = (name, params, tuple((b, id(buf)) for b, buf in sorted(buffers.items())))
        hit = self._binds.get(key) if self.cache_binds else None
        if hit is not None and all(r() is not None for r in hit[0]):
            return hit[1]
        bgl, _ = self._layout(name)
        ubuf = self.device.create_buffer_with_data(data=params, usage=self.usage.UNIFORM)
        entries = [{"binding": 0, "resource": {"buffer": ubuf, "offset": 0, "size": ubuf.size}}]
        for b, buf in sorted(buffers.items()):
            entries.append({"binding": b, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
        bg = self.device.create_bind_group(layout=bgl, entries=entries)
        if self.cache_binds:
            with self._lock:
                while len(self._binds) >= BIND_CACHE:
                    self._unbind(next(iter(self._binds)))  # the oldest
                self._binds[key] = (tuple(weakref.ref(buf) for buf in buffers.values()), bg)
                for buf in set(buffers.values()):
                    keys = self._bound.get(id(buf))
                    if keys is None:  # first sight: when the buffer goes, its bind groups go
                        keys = self._bound[id(buf)] = set()
                        weakref.finalize(buf, self._forget, id(buf))
                    keys.add(key)
        return bg

    def _unbind(self, key):
        """Drop the bind group ``key`` (the lock held)."""
        self._binds.pop(key, None)
        for _, bid in key[2]:
            keys = self._bound.get(bid)
            if keys is not None:
                keys.discard(key)

    def _forget(self, bid):
        """A buffer was collected: drop its bind groups, which hold its device memory."""
        with self._lock:
            for key in self._bound.pop(bid, ()):
                self._unbind(key)


_GPU = None
_GPU_ERROR = None
_GPU_LOCK = threading.Lock()


def gpu() -> Gpu:
    """The process's device, made on first use (a failure is remembered and re-raised)."""
    global _GPU, _GPU_ERROR
    with _GPU_LOCK:
        if _GPU is None and _GPU_ERROR is None:
            try:
                _GPU = Gpu()
            except ModuleNotFoundError:
                raise
            except Exception as exc:  # no adapter or device: remember why
                _GPU_ERROR = exc
        if _GPU is None:
            raise RuntimeError(f"wgpu backend: no usable WebGPU device ({_GPU_ERROR})") from _GPU_ERROR
        return _GPU


def native(a) -> np.ndarray:
    """``a`` as uploads take it: contiguous, native byte order, bool as uint8."""
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    return np.ascontiguousarray(a, a.dtype.newbyteorder("="))


def words64(raw: np.ndarray) -> np.ndarray:
    """64-bit counters as read back (little-endian u64, split or atomic) -> int64: the same
    bits (a view of the new array the read-back made, no copy)."""
    return raw.view(np.int64)


def pow2_floor(n):
    return 1 << (max(1, int(n)).bit_length() - 1)
