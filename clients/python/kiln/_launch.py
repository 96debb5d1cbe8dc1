"""The argument block of one launch (compiler/codegen/kernel_spec.h's convention,
shared by both targets): the kernel's params in order (a tensor as the address of
its first element, a scalar by value), then one int32 per dynamic symbol, then the
address of each global workspace (LaunchInfo.workspaces), then (CUDA kernels that use
TMA) one 128-byte CUtensorMap per LaunchInfo.tensor_maps entry;
``argv`` is a void*[] whose i-th entry points at the i-th value, as cuLaunchKernel's
kernelParams and the CPU entry point take it."""
import ctypes
import struct

from ._tensor_map import TENSOR_MAP_ALIGN as _MAP_ALIGN
from ._tensor_map import TENSOR_MAP_BYTES as _MAP_BYTES

_PACK = {"bool": "<?", "int8": "<b", "int16": "<h", "int32": "<i", "int64": "<q",
         "uint8": "<B", "uint16": "<H", "uint32": "<I", "uint64": "<Q", "float16": "<e",
         "float32": "<f", "float64": "<d"}


def pack_scalar(value, dtype):
    """The 8-byte little-endian slot of a by-value scalar."""
    if dtype == "bfloat16":
        raw = struct.pack("<f", float(value))[2:]
    elif dtype in _PACK:
        v = float(value) if dtype.startswith("float") else (bool(value) if dtype == "bool"
                                                            else int(value))
        raw = struct.pack(_PACK[dtype], v)
    else:
        raise TypeError(f"no by-value scalar of dtype {dtype}")
    return int.from_bytes(raw.ljust(8, b"\0"), "little")


class ArgBlock:
    """Slots (8 bytes each), the tensor maps (each 128 bytes at a 64-byte aligned
    address, as the kernel's `const __grid_constant__ CUtensorMap` is laid out) and
    the pointer array into them; keep the object alive until the launch has read its
    arguments (cuLaunchKernel copies them at once)."""

    def __init__(self, pointers_and_scalars, symbol_values, tensor_maps=(), workspaces=()):
        n = len(pointers_and_scalars) + len(symbol_values) + len(workspaces)
        self.slots = (ctypes.c_uint64 * max(n, 1))()
        for i, v in enumerate(pointers_and_scalars):
            self.slots[i] = v & 0xFFFFFFFFFFFFFFFF
        base = len(pointers_and_scalars)
        for j, s in enumerate(symbol_values):
            self.slots[base + j] = int(s) & 0xFFFFFFFF  # int32 in the low half
        base += len(symbol_values)
        for j, w in enumerate(workspaces):  # T.alloc_global addresses, after the symbols
            self.slots[base + j] = w & 0xFFFFFFFFFFFFFFFF
        addr = ctypes.addressof(self.slots)
        pointers = [addr + 8 * i for i in range(n)]
        # ctypes buffers are only 16-byte aligned: over-allocate and align by hand.
        self.maps = (ctypes.c_uint8 * (_MAP_BYTES * len(tensor_maps) + _MAP_ALIGN))()
        first = -ctypes.addressof(self.maps) % _MAP_ALIGN + ctypes.addressof(self.maps)
        for k, raw in enumerate(tensor_maps):
            if len(raw) != _MAP_BYTES:
                raise ValueError(f"tensor map {k} is {len(raw)} bytes, not {_MAP_BYTES}")
            ctypes.memmove(first + _MAP_BYTES * k, bytes(raw), _MAP_BYTES)
            pointers.append(first + _MAP_BYTES * k)
        self.argv = (ctypes.c_void_p * max(len(pointers), 1))(*pointers)

    @property
    def address(self):
        return ctypes.addressof(self.argv)
