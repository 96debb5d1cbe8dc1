"""The CUtensorMap arguments of a CUDA launch (Hopper TMA).

A kernel whose LaunchInfo has ``tensor_maps`` takes, after its params and symbols,
one CUtensorMap (128 bytes, by value) per entry, encoded by the launcher with the
driver's cuTensorMapEncodeTiled from the named tensor's actual shape and pointer
(compiler/codegen/kernel_spec.h, TensorMapSpec; docs/api.md has a worked example).

``encoding()`` is the whole computation of the call's arguments, with no driver:
it checks what the driver would refuse (and a few things it would accept but the
kernel cannot use) and says which parameter is at fault. The driver backends of
_launch_cuda.py turn an encoding into the 128 bytes (``encode_tensor_map``).

Errors: BindingError for the caller's tensor (not contiguous, a misaligned pointer
or row), LaunchError for metadata the driver cannot encode (rank, box, swizzle).
"""
import dataclasses

from .errors import BindingError, LaunchError

TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)
TENSOR_MAP_ALIGN = 64   # alignof(CUtensorMap): the kernel reads it as a __grid_constant__
MAX_RANK = 5
MAX_BOX = 256           # elements per box dimension
MAX_DIM = 1 << 32       # elements per global dimension
MAX_STRIDE = 1 << 40    # bytes of a global stride (exclusive)

# cuda.h's enums (CUtensorMapDataType, ..., CUtensorMapFloatOOBfill).
DATA_TYPE_BY_BYTES = {1: 0, 2: 1, 4: 2, 8: 4}  # UINT8, UINT16, UINT32, UINT64
SWIZZLE_BY_BYTES = {0: 0, 32: 1, 64: 2, 128: 3}  # NONE, 32B, 64B, 128B
INTERLEAVE_NONE = 0
L2_PROMOTION_128B = 2
OOB_FILL_NONE = 0


@dataclasses.dataclass(frozen=True)
class TensorMapEncoding:
    """The arguments of one cuTensorMapEncodeTiled call, in the driver's order
    (dimensions innermost first)."""
    param: str             # the tensor parameter (for error messages)
    data_type: int         # CUtensorMapDataType
    rank: int
    global_address: int
    global_dim: tuple      # rank entries, innermost first
    global_strides: tuple  # bytes, rank - 1 entries: dims 1..rank-1, innermost first
    box_dim: tuple         # rank entries, innermost first
    element_strides: tuple
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int


def encoding(param, shape, element_bytes, address, box, swizzle_bytes, contiguous=True):
    """The cuTensorMapEncodeTiled arguments for the tensor parameter ``param`` of
    ``shape`` (outermost first, row-major), ``element_bytes`` per element, at device
    ``address``, for the LaunchInfo entry's ``box`` (outermost first) and
    ``swizzle_bytes``. Raises BindingError or LaunchError naming ``param``."""
    where = f"tensor map of {param}"
    shape = tuple(int(s) for s in shape)
    box = tuple(int(b) for b in box)
    rank = len(shape)
    if not 1 <= rank <= MAX_RANK:
        raise LaunchError(f"{where}: rank {rank}; TMA takes tensors of rank 1 to {MAX_RANK}")
    if len(box) != rank:
        raise LaunchError(f"{where}: box {list(box)} has {len(box)} dimensions, the tensor "
                          f"{rank} (shape {list(shape)})")
    for i, b in enumerate(box):
        if not 1 <= b <= MAX_BOX:
            raise LaunchError(f"{where}: box[{i}] is {b}; TMA boxes are 1 to {MAX_BOX} "
                              "elements per dimension")
    if element_bytes not in DATA_TYPE_BY_BYTES:
        raise LaunchError(f"{where}: elements of {element_bytes} bytes; TMA copies elements "
                          "of 1, 2, 4 or 8 bytes")
    if swizzle_bytes not in SWIZZLE_BY_BYTES:
        raise LaunchError(f"{where}: swizzle_bytes {swizzle_bytes} is not 0, 32, 64 or 128")
    if not contiguous:
        raise BindingError(f"{param} is not contiguous, and its tensor map needs a row-major "
                           "tensor; pass .contiguous()")
    if address % 16:
        raise BindingError(f"{param} starts at 0x{address:x}, not 16-byte aligned, which its "
                           "tensor map needs; pass a copy (.clone())")
    for i, s in enumerate(shape):
        if not 1 <= s <= MAX_DIM:
            raise BindingError(f"{param}.shape[{i}] is {s}; a tensor map takes extents of 1 "
                               "to 2^32")
    dims = shape[::-1]
    strides, stride = [], element_bytes
    for i in range(1, rank):
        stride *= dims[i - 1]
        if stride % 16:
            raise BindingError(
                f"{param}: the stride of dimension {rank - 1 - i} is {stride} bytes, not a "
                f"multiple of 16, which its tensor map needs (shape {list(shape)}, "
                f"{element_bytes}-byte elements)")
        if stride >= MAX_STRIDE:
            raise BindingError(f"{param}: the stride of dimension {rank - 1 - i} is {stride} "
                               "bytes; a tensor map takes strides below 2^40")
        strides.append(stride)
    inner = box[-1] * element_bytes
    if inner % 16:
        raise LaunchError(f"{where}: the box's inner dimension is {inner} bytes "
                          f"({box[-1]} elements), not a multiple of 16")
    if swizzle_bytes and inner > swizzle_bytes:
        raise LaunchError(f"{where}: the box's inner dimension is {inner} bytes, more than "
                          f"its {swizzle_bytes}-byte swizzle span")
    return TensorMapEncoding(
        param=param, data_type=DATA_TYPE_BY_BYTES[element_bytes], rank=rank,
        global_address=int(address), global_dim=dims, global_strides=tuple(strides),
        box_dim=box[::-1], element_strides=(1,) * rank, interleave=INTERLEAVE_NONE,
        swizzle=SWIZZLE_BY_BYTES[swizzle_bytes], l2_promotion=L2_PROMOTION_128B,
        oob_fill=OOB_FILL_NONE)


def encode_failed(enc, error):
    """The LaunchError of a refused encode: the driver's error and the arguments."""
    return LaunchError(
        f"cuTensorMapEncodeTiled for {enc.param}: {error} (data type {enc.data_type}, rank "
        f"{enc.rank}, address 0x{enc.global_address:x}, dims {list(enc.global_dim)}, strides "
        f"{list(enc.global_strides)}, box {list(enc.box_dim)}, swizzle {enc.swizzle})")


def launch_encodings(launch_info, values, tensor_maps=None):
    """The encodings of ``launch_info.tensor_maps`` (client.LaunchInfo), or of
    ``tensor_maps`` (another kernel's of the same program), in order, for the launch's
    argument ``values``: one per param, a _tensors.TensorView for each tensor
    (anything else for a scalar)."""
    from ._values import DTYPE_BYTES
    index = {p.name: i for i, p in enumerate(launch_info.params)}
    out = []
    for m in launch_info.tensor_maps if tensor_maps is None else tensor_maps:
        i = index.get(m.param)
        if i is None or launch_info.params[i].is_scalar:
            raise LaunchError(f"the launch metadata has a tensor map for '{m.param}', which is "
                              "not a tensor parameter of the kernel")
        v = values[i]
        out.append(encoding(m.param, v.shape, DTYPE_BYTES.get(v.dtype, 0), v.ptr, m.box,
                            m.swizzle_bytes, v.contiguous))
    return out
