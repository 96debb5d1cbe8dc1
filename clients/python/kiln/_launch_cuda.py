"""Loads cubins and launches them with the CUDA driver API, on the caller's stream.

Three ways to reach the driver, tried in this order (KILN_CUDA_DRIVER=cuda-python,
cupy or ctypes picks one): cuda-python (``cuda.bindings.driver``, or ``cuda.cuda``
in releases before 12.6), cupy's ``cupy.cuda.driver``, and libcuda.so.1 through
ctypes. All three see the same primary context the CUDA runtime (torch, cupy) uses.

A module is loaded once per (context, artifact) and kept for the life of the
process. Kernels needing more than 48 KiB of dynamic shared memory get
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set once, at load.

Kernels that load tiles with TMA take CUtensorMaps after their symbols
(_tensor_map.py): each backend encodes them with cuTensorMapEncodeTiled through
its own binding (cupy has none: it uses libcuda.so.1 through ctypes, the same
driver), once per launch, since they hold the tensors' pointers.
"""
import ctypes
import os
import threading

from ._tensor_map import TENSOR_MAP_ALIGN, TENSOR_MAP_BYTES, encode_failed
from .errors import LaunchError

_ATTR_MAX_DYNAMIC_SMEM = 8      # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_ATTR_CC_MAJOR = 75             # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
_ATTR_CC_MINOR = 76
_DEFAULT_SMEM_LIMIT = 48 * 1024


class _CudaPython:
    name = "cuda-python"

    def __init__(self):
        try:
            from cuda.bindings import driver
        except ImportError:
            from cuda import cuda as driver  # cuda-python < 12.6
        self.d = driver
        self._check(driver.cuInit(0), "cuInit")

    def _describe(self, err):
        _, text = self.d.cuGetErrorString(err)
        text = text.decode() if isinstance(text, bytes) else text
        return f"{getattr(err, 'name', err)} = {int(err)} ({text})"

    def _check(self, result, what):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise LaunchError(f"{what}: {self._describe(err)}")
        return rest[0] if len(rest) == 1 else rest

    def primary_context(self, ordinal):
        dev = self._check(self.d.cuDeviceGet(ordinal), "cuDeviceGet")
        return int(self._check(self.d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain"))

    def current_context(self):
        return int(self._check(self.d.cuCtxGetCurrent(), "cuCtxGetCurrent"))

    def set_current(self, ctx):
        self._check(self.d.cuCtxSetCurrent(self.d.CUcontext(ctx)), "cuCtxSetCurrent")

    def capability(self, ordinal):
        dev = self._check(self.d.cuDeviceGet(ordinal), "cuDeviceGet")
        a = self.d.CUdevice_attribute
        major = self._check(self.d.cuDeviceGetAttribute(
            a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
        minor = self._check(self.d.cuDeviceGetAttribute(
            a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
        return int(major), int(minor)

    def load(self, image, symbol):
        module = self._check(self.d.cuModuleLoadData(image), "cuModuleLoadData")
        func = self._check(self.d.cuModuleGetFunction(module, symbol.encode()),
                           "cuModuleGetFunction")
        return module, func

    def set_max_dynamic_smem(self, func, nbytes):
        attr = self.d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self._check(self.d.cuFuncSetAttribute(func, attr, nbytes), "cuFuncSetAttribute")

    def launch(self, func, grid, block, smem, stream, argv):
        self._check(self.d.cuLaunchKernel(func, *grid, *block, smem, self.d.CUstream(stream),
                                          argv, 0), "cuLaunchKernel")

    def encode_tensor_map(self, enc):
        d = self.d
        u64, u32 = d.cuuint64_t, d.cuuint32_t
        err, tmap = d.cuTensorMapEncodeTiled(
            d.CUtensorMapDataType(enc.data_type), enc.rank, enc.global_address,
            [u64(x) for x in enc.global_dim], [u64(x) for x in enc.global_strides],
            [u32(x) for x in enc.box_dim], [u32(x) for x in enc.element_strides],
            d.CUtensorMapInterleave(enc.interleave), d.CUtensorMapSwizzle(enc.swizzle),
            d.CUtensorMapL2promotion(enc.l2_promotion),
            d.CUtensorMapFloatOOBfill(enc.oob_fill))
        if int(err) != 0:
            raise encode_failed(enc, self._describe(err))
        if hasattr(tmap, "getPtr"):
            return ctypes.string_at(int(tmap.getPtr()), TENSOR_MAP_BYTES)
        return b"".join(int(w).to_bytes(8, "little") for w in tmap.opaque)


class _Cupy:
    name = "cupy"
    _libcuda = None  # _Ctypes, for what cupy's driver module lacks

    def __init__(self):
        import cupy
        from cupy.cuda import driver, runtime
        self.cupy, self.d, self.rt = cupy, driver, runtime
        self.rt.getDeviceCount()  # initializes the runtime (and the driver)

    def _call(self, what, fn, *args):
        try:
            return fn(*args)
        except self.d.CUDADriverError as e:
            raise LaunchError(f"{what}: {e}") from None

    def primary_context(self, ordinal):
        # cupy has no primary-context call; cudaFree(0) on the device makes the
        # runtime attach its primary context, which is the one wanted.
        with self.cupy.cuda.Device(ordinal):
            self.rt.free(0)
            return int(self.d.ctxGetCurrent())

    def current_context(self):
        return int(self.d.ctxGetCurrent())

    def set_current(self, ctx):
        self._call("cuCtxSetCurrent", self.d.ctxSetCurrent, ctx)

    def capability(self, ordinal):
        cc = self.cupy.cuda.Device(ordinal).compute_capability  # "90"
        return int(cc[:-1]), int(cc[-1])

    def load(self, image, symbol):
        module = self._call("cuModuleLoadData", self.d.moduleLoadData, image)
        return module, self._call("cuModuleGetFunction", self.d.moduleGetFunction, module, symbol)

    def set_max_dynamic_smem(self, func, nbytes):
        self._call("cuFuncSetAttribute", self.d.funcSetAttribute, func, _ATTR_MAX_DYNAMIC_SMEM,
                   nbytes)

    def launch(self, func, grid, block, smem, stream, argv):
        self._call("cuLaunchKernel", self.d.launchKernel, func, *grid, *block, smem, stream,
                   argv, 0)

    def encode_tensor_map(self, enc):
        # cupy.cuda.driver has no cuTensorMapEncodeTiled: call the driver cupy uses.
        if self._libcuda is None:
            self._libcuda = _Ctypes()
        return self._libcuda.encode_tensor_map(enc)


class _Ctypes:
    """libcuda.so.1 through ctypes, with the signatures this module calls."""
    name = "ctypes"

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise LaunchError(f"cannot load libcuda.so.1: {e}") from None
        vp, u, i = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
        u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
        sig = {
            "cuInit": [u], "cuDeviceGet": [ctypes.POINTER(i), i],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(vp), i],
            "cuCtxGetCurrent": [ctypes.POINTER(vp)], "cuCtxSetCurrent": [vp],
            "cuDeviceGetAttribute": [ctypes.POINTER(i), i, i],
            "cuModuleLoadData": [ctypes.POINTER(vp), ctypes.c_char_p],
            "cuModuleGetFunction": [ctypes.POINTER(vp), vp, ctypes.c_char_p],
            "cuFuncSetAttribute": [vp, i, i],
            "cuLaunchKernel": [vp, u, u, u, u, u, u, u, vp, vp, vp],
            "cuGetErrorString": [i, ctypes.POINTER(ctypes.c_char_p)],
            "cuTensorMapEncodeTiled": [vp, i, u, vp, u64p, u64p, u32p, u32p, i, i, i, i],
        }
        for name, args in sig.items():
            f = getattr(self.lib, name, None)
            if f is None:  # a driver older than CUDA 12 has no tensor maps
                continue
            f.argtypes, f.restype = args, i
        self._check(self.lib.cuInit(0), "cuInit")

    def _describe(self, rc):
        text = ctypes.c_char_p()
        self.lib.cuGetErrorString(rc, ctypes.byref(text))
        return f"CUDA error {rc} ({(text.value or b'?').decode()})"

    def _check(self, rc, what):
        if rc != 0:
            raise LaunchError(f"{what}: {self._describe(rc)}")

    def encode_tensor_map(self, enc):
        fn = getattr(self.lib, "cuTensorMapEncodeTiled", None)
        if fn is None:
            raise encode_failed(enc, "this libcuda.so.1 has no cuTensorMapEncodeTiled "
                                "(a driver older than CUDA 12)")
        # The driver writes a CUtensorMap, which is 64-byte aligned in cuda.h.
        raw = (ctypes.c_uint8 * (TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN))()
        out = ctypes.addressof(raw) + (-ctypes.addressof(raw) % TENSOR_MAP_ALIGN)

        def array(ctype, values):
            return (ctype * max(len(values), 1))(*values)
        rc = fn(out, enc.data_type, enc.rank, enc.global_address,
                array(ctypes.c_uint64, enc.global_dim), array(ctypes.c_uint64, enc.global_strides),
                array(ctypes.c_uint32, enc.box_dim), array(ctypes.c_uint32, enc.element_strides),
                enc.interleave, enc.swizzle, enc.l2_promotion, enc.oob_fill)
        if rc != 0:
            raise encode_failed(enc, self._describe(rc))
        return ctypes.string_at(out, TENSOR_MAP_BYTES)

    def primary_context(self, ordinal):
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        self._check(self.lib.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev.value),
                    "cuDevicePrimaryCtxRetain")
        return ctx.value or 0

    def current_context(self):
        ctx = ctypes.c_void_p()
        self._check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        return ctx.value or 0

    def set_current(self, ctx):
        self._check(self.lib.cuCtxSetCurrent(ctx or None), "cuCtxSetCurrent")

    def capability(self, ordinal):
        dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self._check(self.lib.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
        self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(major), _ATTR_CC_MAJOR, dev.value),
                    "cuDeviceGetAttribute")
        self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(minor), _ATTR_CC_MINOR, dev.value),
                    "cuDeviceGetAttribute")
        return major.value, minor.value

    def load(self, image, symbol):
        module, func = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.lib.cuModuleLoadData(ctypes.byref(module), image), "cuModuleLoadData")
        self._check(self.lib.cuModuleGetFunction(ctypes.byref(func), module, symbol.encode()),
                    "cuModuleGetFunction")
        return module, func

    def set_max_dynamic_smem(self, func, nbytes):
        self._check(self.lib.cuFuncSetAttribute(func, _ATTR_MAX_DYNAMIC_SMEM, nbytes),
                    "cuFuncSetAttribute")

    def launch(self, func, grid, block, smem, stream, argv):
        self._check(self.lib.cuLaunchKernel(func, *grid, *block, smem, stream or None, argv,
                                            None), "cuLaunchKernel")


BACKENDS = {"cuda-python": _CudaPython, "cupy": _Cupy, "ctypes": _Ctypes}
_driver = None
_driver_lock = threading.Lock()


def driver():
    """The driver backend of this process (KILN_CUDA_DRIVER, else the first that loads)."""
    global _driver
    with _driver_lock:
        if _driver is None:
            wanted = os.environ.get("KILN_CUDA_DRIVER", "")
            names = [wanted] if wanted else list(BACKENDS)
            if wanted and wanted not in BACKENDS:
                raise LaunchError(f"KILN_CUDA_DRIVER={wanted}: not one of {sorted(BACKENDS)}")
            failures = []
            for name in names:
                try:
                    _driver = BACKENDS[name]()
                    break
                except Exception as e:  # noqa: BLE001 (an absent or broken package: try the next)
                    failures.append(f"{name}: {e}")
            if _driver is None:
                raise LaunchError("no way to reach the CUDA driver (" + "; ".join(failures) + ")")
        return _driver


def set_driver(name):
    """Switches the backend (tests run the GPU checks through each one available)."""
    global _driver
    with _driver_lock:
        _driver = BACKENDS[name]()
    _modules.clear()
    _primary.clear()
    return _driver


def current_stream(view):
    """The handle of the caller's current stream on the tensor's device."""
    if view.lib == "torch":
        import torch
        return int(torch.cuda.current_stream(view.obj.device).cuda_stream)
    if view.lib == "cupy":
        import cupy
        return int(cupy.cuda.get_current_stream().ptr)
    return 0  # the legacy default stream


_modules = {}  # (driver, context, artifact key, symbol) -> (module, function)
_modules_lock = threading.Lock()


_primary = {}  # (backend, ordinal) -> the device's primary context (retained for good)


class _OnContext:
    """Makes the device's primary context current for the block and restores the
    caller's afterwards (torch's current device stays what it was)."""

    def __init__(self, drv, ordinal):
        key = (drv.name, ordinal)
        if key not in _primary:
            _primary[key] = drv.primary_context(ordinal)
        self.drv, self.ctx = drv, _primary[key]

    def __enter__(self):
        self.prev = self.drv.current_context()
        if self.prev != self.ctx:
            self.drv.set_current(self.ctx)
        return self.ctx

    def __exit__(self, *exc):
        if self.prev != self.ctx:
            self.drv.set_current(self.prev)


def capability(ordinal):
    return driver().capability(ordinal)


def launch(artifact_key, image_fn, launch_info, ordinal, args, grid, stream, tensor_maps=(),
           workspaces=()):
    """Launches one kernel of the artifact on device ``ordinal``: ``launch_info`` is a
    client.LaunchInfo or one of its ``sequence()`` entries (a KernelLaunch).
    ``image_fn()`` returns the cubin bytes (fetched only when the module is not loaded
    yet); ``args`` are ints (device addresses and scalar slots) followed by the
    symbols' values; ``workspaces`` the device addresses of the global workspaces,
    passed after the symbols; ``tensor_maps`` the TensorMapEncodings
    (_tensor_map.encoding) of the kernel's tensor maps, in order, encoded here and
    passed last."""
    from ._launch import ArgBlock
    drv = driver()
    with _OnContext(drv, ordinal) as ctx:
        key = (drv.name, ctx, artifact_key, launch_info.kernel_symbol)
        entry = _modules.get(key)
        if entry is None:
            with _modules_lock:
                entry = _modules.get(key)
                if entry is None:
                    module, func = drv.load(image_fn(), launch_info.kernel_symbol)
                    if launch_info.dynamic_shared_bytes > _DEFAULT_SMEM_LIMIT:
                        drv.set_max_dynamic_smem(func, launch_info.dynamic_shared_bytes)
                    entry = _modules[key] = (module, func)
        params, symbols = args
        maps = [drv.encode_tensor_map(enc) for enc in tensor_maps]
        block = ArgBlock(params, symbols, maps, workspaces)
        drv.launch(entry[1], grid, launch_info.block, launch_info.dynamic_shared_bytes, stream,
                   block.address)
