"""The CUtensorMap arguments of a CUDA launch (kiln/_tensor_map.py), without a GPU:
what cuTensorMapEncodeTiled gets for each LaunchInfo.tensor_maps entry
(compiler/codegen/kernel_spec.h, TensorMapSpec), every refusal naming the
parameter, where the maps go in the argument block, and a driver's refusal."""
import ctypes

import pytest

import kiln
from kiln import _launch, _launch_cuda, _tensor_map
from kiln._proto.v1 import program_pb2, service_pb2
from kiln._tensor_map import encoding
from kiln._tensors import TensorView


def test_rank2_fp16_gemm_operand():
    # docs/api.md's example: A (M, K) fp16, box [128, 64], 128-byte swizzle.
    e = encoding("A", (1000, 512), 2, 0x7f0000000000, [128, 64], 128)
    assert e.param == "A"
    assert e.data_type == 1  # CU_TENSOR_MAP_DATA_TYPE_UINT16
    assert e.rank == 2
    assert e.global_address == 0x7f0000000000
    assert e.global_dim == (512, 1000)  # innermost first
    assert e.global_strides == (1024,)  # bytes of a row
    assert e.box_dim == (64, 128)  # box reversed
    assert e.element_strides == (1, 1)
    assert e.interleave == 0  # NONE
    assert e.swizzle == 3  # CU_TENSOR_MAP_SWIZZLE_128B
    assert e.l2_promotion == 2  # CU_TENSOR_MAP_L2_PROMOTION_L2_128B
    assert e.oob_fill == 0  # NONE: out-of-bounds elements read as zero


def test_rank3_fp32_batched():
    e = encoding("X", (4, 256, 64), 4, 4096, (1, 64, 32), 128)
    assert e.data_type == 2  # UINT32
    assert e.rank == 3
    assert e.global_dim == (64, 256, 4)
    assert e.global_strides == (64 * 4, 256 * 64 * 4)
    assert e.box_dim == (32, 64, 1)
    assert e.element_strides == (1, 1, 1)


def test_rank1_has_no_strides():
    e = encoding("v", (4096,), 1, 0, (256,), 0)
    assert (e.rank, e.global_dim, e.global_strides, e.box_dim, e.swizzle) == \
        (1, (4096,), (), (256,), 0)


@pytest.mark.parametrize("nbytes,data_type", [(1, 0), (2, 1), (4, 2), (8, 4)])
def test_data_type_by_element_size(nbytes, data_type):
    e = encoding("T", (8, 16), nbytes, 0, (8, 16), 0)
    assert e.data_type == data_type
    assert e.global_strides == (16 * nbytes,)


@pytest.mark.parametrize("swizzle_bytes,enum", [(0, 0), (32, 1), (64, 2), (128, 3)])
def test_swizzle_enum_from_bytes(swizzle_bytes, enum):
    # An inner box of 16 bytes fits every swizzle span.
    assert encoding("B", (64, 64), 2, 0, (8, 8), swizzle_bytes).swizzle == enum


@pytest.mark.parametrize("kwargs,error,words", [
    (dict(contiguous=False), kiln.BindingError, ["A is not contiguous", ".contiguous()"]),
    (dict(address=0x1008), kiln.BindingError, ["A starts at 0x1008", "16-byte aligned"]),
    # fp16 rows of 100 elements: 200 bytes.
    (dict(shape=(64, 100), box=(64, 8)), kiln.BindingError,
     ["A: the stride of dimension 0 is 200 bytes", "multiple of 16"]),
    # Rank 3, uint8 rows of 8 bytes: dimension 1's stride.
    (dict(shape=(3, 5, 8), nbytes=1, box=(1, 1, 16)), kiln.BindingError,
     ["A: the stride of dimension 1 is 8 bytes"]),
    (dict(shape=(2, 1 << 20, 1 << 21), nbytes=1, box=(1, 1, 16)), kiln.BindingError,
     ["the stride of dimension 0 is 2199023255552 bytes", "below 2^40"]),
    (dict(shape=((1 << 32) + 1, 16)), kiln.BindingError, ["A.shape[0] is 4294967297"]),
    (dict(shape=(0, 16)), kiln.BindingError, ["A.shape[0] is 0"]),
    (dict(shape=(), box=()), kiln.LaunchError, ["tensor map of A: rank 0", "1 to 5"]),
    (dict(shape=(2,) * 6, box=(1,) * 6), kiln.LaunchError, ["rank 6", "1 to 5"]),
    (dict(box=(128,)), kiln.LaunchError, ["box [128] has 1 dimensions, the tensor 2"]),
    (dict(box=(0, 64)), kiln.LaunchError, ["box[0] is 0", "1 to 256"]),
    (dict(box=(257, 64)), kiln.LaunchError, ["box[0] is 257", "1 to 256"]),
    (dict(box=(128, 512)), kiln.LaunchError, ["box[1] is 512"]),
    (dict(nbytes=3), kiln.LaunchError, ["elements of 3 bytes"]),
    (dict(swizzle=16), kiln.LaunchError, ["swizzle_bytes 16 is not 0, 32, 64 or 128"]),
    (dict(box=(128, 4)), kiln.LaunchError, ["inner dimension is 8 bytes", "multiple of 16"]),
    (dict(box=(128, 128)), kiln.LaunchError, ["inner dimension is 256 bytes",
                                              "128-byte swizzle span"]),
    (dict(box=(128, 32), swizzle=32), kiln.LaunchError, ["64 bytes", "32-byte swizzle"]),
])
def test_refusals_name_the_parameter(kwargs, error, words):
    args = dict(shape=(1024, 512), nbytes=2, address=0x10000, box=(128, 64), swizzle=128,
                contiguous=True)
    args.update(kwargs)
    with pytest.raises(error) as e:
        encoding("A", args["shape"], args["nbytes"], args["address"], args["box"],
                 args["swizzle"], args["contiguous"])
    for w in words:
        assert w in str(e.value)


def launch_info(maps, params=None):
    m = service_pb2.LaunchInfo(kernel_symbol="k", grid=["1", "1", "1"], block=[128, 1, 1])
    for name, dtype, scalar, shape in params or [
            ("A", program_pb2.DTYPE_FLOAT16, False, ["M", "K"]),
            ("alpha", program_pb2.DTYPE_FLOAT32, True, []),
            ("B", program_pb2.DTYPE_FLOAT16, False, ["K", "N"])]:
        m.params.add(name=name, dtype=dtype, is_scalar=scalar, shape=shape)
    m.symbols.extend(["M"])
    for param, box, swizzle in maps:
        m.tensor_maps.add(param=param, box=box, swizzle_bytes=swizzle)
    return kiln.LaunchInfo.from_proto(service_pb2.LaunchInfo.FromString(m.SerializeToString()))


def test_launch_info_carries_the_maps():
    info = launch_info([("B", [64, 256], 128), ("A", [128, 64], 64)])
    assert info.tensor_maps == (kiln.TensorMap("B", (64, 256), 128),
                                kiln.TensorMap("A", (128, 64), 64))
    assert launch_info([]).tensor_maps == ()


def view(shape, ptr, dtype="float16", contiguous=True):
    return TensorView(None, "torch", ("cuda", 0), shape, dtype, ptr, contiguous)


def test_launch_encodings_follow_the_metadata_order():
    info = launch_info([("B", [32, 64], 128), ("A", [128, 64], 128)])
    values = [view((300, 512), 0x10000), 0, view((512, 1024), 0x90000)]
    a, b = _tensor_map.launch_encodings(info, values)[::-1]
    assert (b.param, b.global_address, b.global_dim, b.box_dim) == \
        ("B", 0x90000, (1024, 512), (64, 32))
    assert (a.param, a.global_address, a.global_dim, a.global_strides) == \
        ("A", 0x10000, (512, 300), (1024,))


def test_launch_encodings_refuse_a_map_of_no_tensor():
    values = [view((300, 512), 0x10000), 0, view((512, 1024), 0x90000)]
    for name in ("C", "alpha"):
        with pytest.raises(kiln.LaunchError, match=f"tensor map for '{name}'"):
            _tensor_map.launch_encodings(launch_info([(name, [8], 0)]), values)
    with pytest.raises(kiln.BindingError, match="A is not contiguous"):
        _tensor_map.launch_encodings(
            launch_info([("A", [128, 64], 128)]),
            [view((300, 512), 0x10000, contiguous=False), 0, values[2]])


def test_arg_block_puts_aligned_maps_after_the_symbols():
    maps = [bytes(range(128)), bytes(range(128, 256))]
    for _ in range(8):  # several allocations: the alignment is not luck
        block = _launch.ArgBlock([0xAAAA, 7], [300, 12], maps)
        argv = ctypes.cast(block.address, ctypes.POINTER(ctypes.c_void_p))
        assert ctypes.c_uint64.from_address(argv[0]).value == 0xAAAA
        assert ctypes.c_int32.from_address(argv[2]).value == 300
        assert ctypes.c_int32.from_address(argv[3]).value == 12
        for k in range(2):
            assert argv[4 + k] % 64 == 0
            assert ctypes.string_at(argv[4 + k], 128) == maps[k]
    assert len(_launch.ArgBlock([1], [], maps).argv) == 3
    assert len(_launch.ArgBlock([1], []).argv) == 1
    with pytest.raises(ValueError, match="64 bytes, not 128"):
        _launch.ArgBlock([1], [], [bytes(64)])


class RefusingLibcuda:
    """libcuda's two calls the ctypes backend makes to encode, refusing."""

    def __init__(self, rc):
        self.rc, self.calls = rc, []

    def cuTensorMapEncodeTiled(self, *args):
        self.calls.append(args)
        return self.rc

    def cuGetErrorString(self, rc, out):
        ctypes.cast(out, ctypes.POINTER(ctypes.c_char_p))[0] = b"invalid argument"
        return 0


def test_a_refused_encode_names_the_parameter_and_the_drivers_code():
    drv = object.__new__(_launch_cuda._Ctypes)  # no libcuda.so.1 needed
    drv.lib = RefusingLibcuda(1)
    enc = encoding("A", (1000, 512), 2, 0x10000, (128, 64), 128)
    with pytest.raises(kiln.LaunchError) as e:
        drv.encode_tensor_map(enc)
    text = str(e.value)
    assert "cuTensorMapEncodeTiled for A: CUDA error 1 (invalid argument)" in text
    assert "dims [512, 1000]" in text and "box [64, 128]" in text
    (args,) = drv.lib.calls
    assert args[0] % 64 == 0  # the driver writes into a 64-byte aligned CUtensorMap
    assert args[1:4] == (1, 2, 0x10000)
    assert list(args[4]) == [512, 1000] and list(args[5])[:1] == [1024]
    assert list(args[6]) == [64, 128] and list(args[7]) == [1, 1]
    assert args[8:] == (0, 3, 2, 0)


def test_jit_cuda_launch_passes_the_encodings(monkeypatch):
    # @kiln.jit's CUDA path up to the driver: the params' pointers and scalars, the
    # symbols, and one encoding per tensor map, in the metadata's order.
    import importlib
    jit_module = importlib.import_module("kiln.jit")  # kiln.jit is also the decorator
    seen = {}
    monkeypatch.setattr(_launch_cuda, "current_stream", lambda v: 0)
    monkeypatch.setattr(_launch_cuda, "launch",
                        lambda key, image, info, ordinal, args, grid, stream, maps, workspaces=():
                        seen.update(args=args, grid=grid, maps=maps, workspaces=workspaces))

    class Compiled:
        launch = launch_info([("B", [32, 64], 128), ("A", [128, 64], 128)])
        artifact = type("Artifact", (), {"key": "k"})()

    kernel = type("Kernel", (), {"name": "gemm"})()
    values = [view((300, 512), 0x10000), 5, view((512, 1024), 0x90000)]
    jit_module.JitKernel._launch_cuda(kernel, Compiled, ("cuda", 0), values, [300], (3, 1, 1))
    assert seen["args"] == ([0x10000, 5, 0x90000], [300])
    assert tuple(seen["workspaces"]) == ()  # a one-kernel program has none
    assert [(m.param, m.global_address) for m in seen["maps"]] == [("B", 0x90000),
                                                                  ("A", 0x10000)]
    values[2] = view((512, 1001), 0x90000)  # rows of 2002 bytes: no tensor map
    with pytest.raises(kiln.BindingError, match=r"^gemm\(\): B: the stride of dimension 0 is "
                                                "2002 bytes"):
        jit_module.JitKernel._launch_cuda(kernel, Compiled, ("cuda", 0), values, [300],
                                          (3, 1, 1))
