"""Uniform views of the tensors @kiln.jit accepts: NumPy arrays, torch tensors (CPU
or CUDA), cupy arrays, and anything with __cuda_array_interface__ or
__array_interface__; and allocation of outputs "like" a given tensor."""
import dataclasses

from ._values import DTYPE_BYTES, dtype_name

_TORCH_NAMES = {"float8_e4m3": "float8_e4m3fn"}
_TYPESTR = {"b1": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
            "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "f2": "float16",
            "f4": "float32", "f8": "float64"}


@dataclasses.dataclass
class TensorView:
    obj: object
    lib: str        # "numpy", "torch", "cupy", "cai" (CUDA array interface)
    device: object  # "cpu" or ("cuda", ordinal)
    shape: tuple
    dtype: str      # Kiln's dtype name
    ptr: int
    contiguous: bool

    @property
    def nbytes(self):
        n = DTYPE_BYTES[self.dtype]
        for d in self.shape:
            n *= d
        return n

    @property
    def on_cuda(self):
        return self.device != "cpu"


def _module_root(obj):
    return type(obj).__module__.split(".", 1)[0]


def is_tensor(obj):
    return view(obj) is not None


def view(obj):
    """A TensorView of ``obj``, or None when it is not a tensor."""
    root = _module_root(obj)
    if root == "torch" and hasattr(obj, "data_ptr"):
        name = dtype_name(obj.dtype)
        dev = "cpu" if obj.device.type == "cpu" else (obj.device.type, obj.device.index or 0)
        return TensorView(obj, "torch", dev, tuple(obj.shape), name or str(obj.dtype),
                          obj.data_ptr(), obj.is_contiguous())
    if root == "cupy" and hasattr(obj, "data") and hasattr(obj, "device"):
        return TensorView(obj, "cupy", ("cuda", obj.device.id), tuple(obj.shape),
                          dtype_name(obj.dtype) or str(obj.dtype), obj.data.ptr,
                          obj.flags.c_contiguous)
    if root == "numpy" and hasattr(obj, "ctypes") and hasattr(obj, "flags"):
        return TensorView(obj, "numpy", "cpu", tuple(obj.shape),
                          dtype_name(obj.dtype) or str(obj.dtype), obj.ctypes.data,
                          obj.flags.c_contiguous)
    for attr, dev in (("__cuda_array_interface__", ("cuda", None)), ("__array_interface__", "cpu")):
        iface = getattr(obj, attr, None)
        if isinstance(iface, dict) and "shape" in iface and "data" in iface:
            typestr = iface.get("typestr", "")
            name = _TYPESTR.get(typestr[1:], typestr)
            strides = iface.get("strides")
            return TensorView(obj, "cai" if dev != "cpu" else "numpy", dev, tuple(iface["shape"]),
                              name, int(iface["data"][0]), strides is None)
    return None


def zeros_like(ref, shape, dtype):
    """Zero-filled tensor of ``shape``/``dtype`` from ``ref``'s library and device (NumPy
    arrays aligned for the CPU kernel's vector loads)."""
    shape = tuple(int(s) for s in shape)
    if ref.lib == "torch":
        import torch
        tdt = getattr(torch, _TORCH_NAMES.get(dtype, dtype))
        dev = "cpu" if ref.device == "cpu" else ref.obj.device
        return torch.zeros(shape, dtype=tdt, device=dev)
    if ref.lib in ("cupy", "cai"):
        import cupy
        with cupy.cuda.Device(ref.device[1] or 0):
            return cupy.zeros(shape, dtype=numpy_dtype(dtype))
    return aligned_zeros(shape, dtype)


def numpy_dtype(name):
    import numpy as np
    if name == "bfloat16" or name.startswith("float8"):
        try:
            import ml_dtypes  # noqa: F401 (registers the types with NumPy)
            return np.dtype(getattr(ml_dtypes, _TORCH_NAMES.get(name, name)))
        except (ImportError, AttributeError):
            raise TypeError(f"NumPy has no {name}; install ml_dtypes, or use torch tensors") \
                from None
    return np.dtype(name if name != "bool" else np.bool_)


ALIGN = 128  # compiler/tools/kernel_inputs.h: kHostAlign


def aligned_zeros(shape, dtype):
    import numpy as np
    dt = numpy_dtype(dtype)
    count = 1
    for s in shape:
        count *= s
    nbytes = max(count * dt.itemsize, 1)
    raw = np.zeros(nbytes + ALIGN, dtype=np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    return raw[off:off + count * dt.itemsize].view(dt).reshape(shape)
