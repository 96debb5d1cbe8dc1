"""Loads a CPU-target artifact (a shared object) into this process and runs it.

The entry point (compiler/codegen/kernel_spec.h, tuner/measure/cpu_backend.cc) is
``extern "C" int SYMBOL(void** args, const int64_t* grid3, char* error, int len)``:
it runs the whole grid (threads of a block emulated as fibers) and returns 0, or
non-zero with a message in ``error``. Tensors are host memory; the generated code
may assume 128-byte alignment (kiln-run's kHostAlign), so misaligned or
non-contiguous tensors are staged through an aligned copy.
"""
import ctypes
import os
import tempfile
import threading

from ._launch import ArgBlock
from ._tensors import ALIGN
from .errors import LaunchError


class CpuModule:
    """``symbols``: the entry points, in launch order (one for a one-kernel program)."""

    def __init__(self, shared_object, symbols):
        if isinstance(symbols, str):
            symbols = (symbols,)
        fd, path = tempfile.mkstemp(prefix="kiln-kernel-", suffix=".so")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(shared_object)
            mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_LOCAL", 0)
            try:
                self._lib = ctypes.CDLL(path, mode=mode)
            except OSError as e:
                raise LaunchError(f"cannot load the kernel's shared object: {e}") from None
        finally:
            os.unlink(path)  # the mapping keeps the code
        self._fns = []
        for symbol in symbols:
            try:
                fn = getattr(self._lib, symbol)
            except AttributeError:
                raise LaunchError(f"the kernel's shared object has no symbol '{symbol}'") from None
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p,
                           ctypes.c_int]
            self._fns.append((symbol, fn))
        self.symbol = symbols[0]
        # The emulated barriers keep per-launch state in the object; one launch at a time.
        self._lock = threading.Lock()

    def launch(self, args, grid, outputs, workspaces=()):
        """``args``: per kernel param (TensorView or int scalar slot); ``grid``: 3 ints,
        or one such per entry point (run in order); ``outputs``: indices of tensors the
        kernel writes (copied back when staged); ``workspaces``: the addresses of the
        program's global workspaces (aligned, zero-filled host memory)."""
        grids = [grid] if len(grid) and isinstance(grid[0], int) else list(grid)
        if len(grids) != len(self._fns):
            raise LaunchError(f"{len(grids)} grids for {len(self._fns)} kernels")
        staged, values = [], []
        for i, a in enumerate(args):
            if isinstance(a, int):
                values.append(a)
                continue
            if a.ptr % ALIGN == 0 and a.contiguous:
                values.append(a.ptr)
                continue
            buf = ctypes.create_string_buffer(a.nbytes + ALIGN)
            addr = ctypes.addressof(buf) + (-ctypes.addressof(buf)) % ALIGN
            _copy(a, addr, to_kernel=True)
            staged.append((i, a, buf, addr))
            values.append(addr)
        block = ArgBlock(values, [], workspaces=workspaces)
        err = ctypes.create_string_buffer(1024)
        with self._lock:
            # In order: each kernel sees what the ones before it wrote.
            for (symbol, fn), g in zip(self._fns, grids):
                grid3 = (ctypes.c_int64 * 3)(*g)
                rc = fn(block.address, grid3, err, len(err))
                if rc != 0:
                    msg = err.value.decode(errors="replace") or "(no message)"
                    raise LaunchError(f"the CPU kernel {symbol} reported an error (code {rc}): "
                                      f"{msg}")
        for i, a, _, addr in staged:
            if i in outputs:
                _copy(a, addr, to_kernel=False)


def _copy(view, addr, to_kernel):
    """Between a (possibly strided) host tensor and a dense buffer at ``addr``."""
    if view.contiguous:
        if to_kernel:
            ctypes.memmove(addr, view.ptr, view.nbytes)
        else:
            ctypes.memmove(view.ptr, addr, view.nbytes)
        return
    import numpy as np
    from ._tensors import numpy_dtype
    dense = np.ctypeslib.as_array((ctypes.c_uint8 * view.nbytes).from_address(addr))
    dense = dense.view(numpy_dtype(view.dtype)).reshape(view.shape)
    host = view.obj.numpy() if view.lib == "torch" else view.obj
    if to_kernel:
        dense[...] = host
    else:
        host[...] = dense
