"""Loads cubins and launches them with the CUDA driver API, on the caller's stream.

Three ways to reach the driver, tried in this order (KILN_CUDA_DRIVER=cuda-python,
cupy or ctypes picks one): cuda-python (``cuda.bindings.driver``, or ``cuda.cuda``
in releases before 12.6), cupy's ``cupy.cuda.driver``, and libcuda.so.1 through
ctypes. All three see the same primary context the CUDA runtime (torch, cupy) uses.

A module is loaded once per (context, artifact) and kept for the life of the
process. Kernels needing more than 48 KiB of dynamic shared memory get
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set once, at load.
"""
import ctypes
import os
import threading

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

    def _check(self, result, what):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            _, text = self.d.cuGetErrorString(err)
            text = text.decode() if isinstance(text, bytes) else text
            raise LaunchError(f"{what}: {getattr(err, 'name', err)} ({text})")
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


class _Cupy:
    name = "cupy"

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


class _Ctypes:
    name = "ctypes"

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise LaunchError(f"cannot load libcuda.so.1: {e}") from None
        vp, u, i = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
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
        }
        for name, args in sig.items():
            f = getattr(self.lib, name)
            f.argtypes, f.restype = args, i
        self._check(self.lib.cuInit(0), "cuInit")

    def _check(self, rc, what):
        if rc != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(rc, ctypes.byref(text))
            raise LaunchError(f"{what}: CUDA error {rc} ({(text.value or b'?').decode()})")

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


_modules = {}  # (context, artifact key) -> (module, function)
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


def launch(artifact_key, image_fn, launch_info, ordinal, args, grid, stream):
    """Launches the artifact's kernel on device ``ordinal``. ``image_fn()`` returns the
    cubin bytes (fetched only when the module is not loaded yet); ``args`` are ints
    (device addresses and scalar slots) followed by the symbols' values."""
    from ._launch import ArgBlock
    drv = driver()
    with _OnContext(drv, ordinal) as ctx:
        key = (drv.name, ctx, artifact_key)
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
        block = ArgBlock(params, symbols)
        drv.launch(entry[1], grid, launch_info.block, launch_info.dynamic_shared_bytes, stream,
                   block.address)
