"""Shared helpers of the GPU scripts (tests/gpu/run_examples.py, bench/gpu_kernels.py).

Compiles a tile program with `kiln-opt` (source -> cubin through NVRTC, plus the launch
metadata as JSON), launches the cubin with CuPy's driver bindings on torch tensors, and
loads an example's NumPy `ref_program` with TileLang stubbed out (nothing of TileLang is
needed). Needs torch and cupy; runs on the GPU machine.

Kernels that load tiles with the TMA (launch JSON with "tensor_maps") take one
CUtensorMap (128 bytes, by value) per entry after their arguments: `Compiled.run`
encodes each with the driver's cuTensorMapEncodeTiled (ctypes on libcuda.so.1) from
the tensor's pointer and actual shape, as compiler/codegen/kernel_spec.h says, and
launches through ctypes' cuLaunchKernel with a kernelParams array (CuPy cannot pass a
128-byte struct by value reliably). `tensor_map_encoding` is the driver-free part;
`python3 tests/gpu/kiln_gpu.py --self-test` checks it without a GPU (ctest
scripts/kiln_gpu_tensor_maps), `--gpu-self-test` launches a TMA kernel on an sm_90 GPU.
"""

import ctypes
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tempfile
import types

def torch_dtype(name):
    import torch

    return {
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
        "float32": torch.float32,
        "float64": torch.float64,
        "int8": torch.int8,
        "int32": torch.int32,
        "int64": torch.int64,
        "uint8": torch.uint8,
        "bool": torch.bool,
        "float8_e4m3": torch.float8_e4m3fn,
        "float8_e5m2": torch.float8_e5m2,
    }[name]


def bind_args(binds):
    out = []
    for k, v in binds.items():
        out += ["--bind", f"{k}={v}"]
    return out


def read_bind_line(path, kind):
    """The `# kiln: bind` or `# kiln: test-bind` line of an example as a dict."""
    tag = f"# kiln: {kind} "
    with open(path) as f:
        for line in f:
            if line.startswith(tag):
                return dict(w.split("=", 1) for w in line[len(tag):].split())
    raise ValueError(f"{path} has no '{tag.strip()}' line")


# --- Tensor maps (Hopper TMA) ------------------------------------------------

# cuda.h's enum values.
_TMA_DATA_TYPE_BY_BYTES = {1: 0, 2: 1, 4: 2, 8: 4}  # CU_TENSOR_MAP_DATA_TYPE_UINT8/16/32/64
_TMA_SWIZZLE_BY_BYTES = {0: 0, 32: 1, 64: 2, 128: 3}  # CU_TENSOR_MAP_SWIZZLE_NONE/32B/64B/128B
_TMA_INTERLEAVE_NONE = 0
_TMA_L2_PROMOTION_128B = 2
_TMA_OOB_FILL_NONE = 0  # out-of-bounds elements read as zero
_TMA_MAX_RANK = 5
_TMA_MAX_BOX = 256
_TMA_ALIGN = 16


def tensor_map_encoding(name, address, shape, element_bytes, box, swizzle_bytes):
    """The cuTensorMapEncodeTiled arguments (a dict; dimensions innermost first) for
    tensor `name` at device `address`, row-major with `shape` (outermost first),
    loaded in boxes of `box` (outermost first) with `swizzle_bytes` of swizzle.
    Raises ValueError("tensor map for 'NAME': ...") for what the TMA cannot take."""
    shape = [int(x) for x in shape]
    box = [int(x) for x in box]
    rank = len(shape)

    def fail(detail):
        raise ValueError(f"tensor map for '{name}' (shape {shape}, box {box}, "
                         f"{element_bytes}-byte elements): {detail}")

    if not 1 <= rank <= _TMA_MAX_RANK:
        fail(f"rank {rank} is outside 1..{_TMA_MAX_RANK}, what the TMA takes")
    if len(box) != rank:
        fail(f"the box has {len(box)} dimensions for a tensor of rank {rank}")
    if element_bytes not in _TMA_DATA_TYPE_BY_BYTES:
        fail("the element size is not 1, 2, 4 or 8 bytes")
    if swizzle_bytes not in _TMA_SWIZZLE_BY_BYTES:
        fail(f"swizzle of {swizzle_bytes} bytes is not 0, 32, 64 or 128")
    if address % _TMA_ALIGN:
        fail(f"the pointer 0x{address:x} is not {_TMA_ALIGN}-byte aligned")
    dims, strides, boxes = [], [], []
    stride = element_bytes
    for i in range(rank):  # innermost first
        d = rank - 1 - i
        if not 1 <= shape[d] <= 1 << 32:
            fail(f"extent {shape[d]} of dimension {d} is outside 1..2^32")
        if not 1 <= box[d] <= _TMA_MAX_BOX:
            fail(f"box extent {box[d]} of dimension {d} is outside 1..{_TMA_MAX_BOX}")
        if i > 0:
            if stride >= 1 << 40:
                fail(f"the stride of dimension {d} is 2^40 bytes or more, over the TMA's limit")
            if stride % _TMA_ALIGN:
                fail(f"the stride of dimension {d} is {stride} bytes, not a multiple of "
                     f"{_TMA_ALIGN}")
            strides.append(stride)
        dims.append(shape[d])
        boxes.append(box[d])
        stride *= shape[d]
    inner_box_bytes = box[-1] * element_bytes
    if inner_box_bytes % _TMA_ALIGN:
        fail(f"the innermost box row is {inner_box_bytes} bytes, not a multiple of {_TMA_ALIGN}")
    if swizzle_bytes and inner_box_bytes > swizzle_bytes:
        fail(f"the innermost box row is {inner_box_bytes} bytes, wider than the "
             f"{swizzle_bytes}-byte swizzle")
    return {
        "data_type": _TMA_DATA_TYPE_BY_BYTES[element_bytes],
        "rank": rank,
        "global_address": address,
        "global_dim": dims,
        "global_strides": strides,
        "box_dim": boxes,
        "element_strides": [1] * rank,
        "interleave": _TMA_INTERLEAVE_NONE,
        "swizzle": _TMA_SWIZZLE_BY_BYTES[swizzle_bytes],
        "l2_promotion": _TMA_L2_PROMOTION_128B,
        "oob_fill": _TMA_OOB_FILL_NONE,
    }


class _CudaDriver:
    """cuTensorMapEncodeTiled and cuLaunchKernel through ctypes on libcuda.so.1 (the
    context is the primary one CuPy and torch make current)."""

    _instance = None

    @classmethod
    def get(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        u32, u64, vp = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
        if not hasattr(self.lib, "cuTensorMapEncodeTiled"):
            self.encode = None
        else:
            self.encode = self.lib.cuTensorMapEncodeTiled
            self.encode.restype = ctypes.c_int
            self.encode.argtypes = [vp, ctypes.c_int, u32, vp, ctypes.POINTER(u64),
                                    ctypes.POINTER(u64), ctypes.POINTER(u32), ctypes.POINTER(u32),
                                    ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self.launch = self.lib.cuLaunchKernel
        self.launch.restype = ctypes.c_int
        self.launch.argtypes = [vp, u32, u32, u32, u32, u32, u32, u32, vp, ctypes.POINTER(vp), vp]
        self.lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]

    def error(self, what, code):
        name = ctypes.c_char_p()
        self.lib.cuGetErrorName(code, ctypes.byref(name))
        return f"{what}: {name.value.decode() if name.value else 'CUDA error'} ({code})"

    def encode_tensor_map(self, name, e):
        """The 128-byte CUtensorMap of encoding `e`, 64-byte aligned: (keep-alive
        buffer, address)."""
        if self.encode is None:
            raise RuntimeError(f"tensor map for '{name}': this CUDA driver has no "
                               "cuTensorMapEncodeTiled (CUDA 12.0 or newer is needed)")
        buf = ctypes.create_string_buffer(128 + 64)
        address = ctypes.addressof(buf) + (-ctypes.addressof(buf)) % 64
        rank = e["rank"]
        arr = lambda t, v: (t * max(len(v), 1))(*v)  # noqa: E731
        code = self.encode(address, e["data_type"], rank, e["global_address"],
                           arr(ctypes.c_uint64, e["global_dim"]),
                           arr(ctypes.c_uint64, e["global_strides"]),
                           arr(ctypes.c_uint32, e["box_dim"]),
                           arr(ctypes.c_uint32, e["element_strides"]), e["interleave"],
                           e["swizzle"], e["l2_promotion"], e["oob_fill"])
        if code != 0:
            raise ValueError(self.error(f"tensor map for '{name}': cuTensorMapEncodeTiled", code)
                             + f"; dims {e['global_dim']}, strides {e['global_strides']}, "
                             f"box {e['box_dim']} (innermost first)")
        return buf, address


def _element_bytes(t):
    return t.element_size() if hasattr(t, "element_size") else t.itemsize


class Compiled:
    def __init__(self, cubin_path, launch, compile_s):
        self.cubin_path = cubin_path
        self.launch = launch
        self.compile_s = compile_s
        self._fn = None

    def function(self):
        if self._fn is None:
            import cupy as cp

            module = cp.RawModule(path=self.cubin_path)
            fn = module.get_function(self.launch["symbol"])
            smem = self.launch["dynamic_smem_bytes"]
            if smem > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = smem
            self._module = module
            self._fn = fn
        return self._fn

    def handle(self):
        """The kernel's CUfunction as an int (for cuLaunchKernel): CuPy's RawKernel keeps
        it on its compiled Function (`.kernel.ptr`)."""
        fn = self.function()
        ptr = getattr(fn, "ptr", None)
        return int(ptr if ptr is not None else fn.kernel.ptr)

    def run(self, tensors, stream=None, smem=None):
        """Launches once on torch tensors (in argument order; ints for symbols), on
        CuPy's current stream, or for a kernel with tensor maps on `stream` (a
        CUstream handle) when given. `smem` overrides the dynamic shared memory
        bytes (more than the kernel needs keeps other CTAs off the SM); the
        kernel's attribute must allow it (function().max_dynamic_shared_size_bytes)."""
        grid = tuple(int(g) for g in self.launch["grid"])
        block = tuple(self.launch["block"])
        smem = int(self.launch["dynamic_smem_bytes"] if smem is None else smem)
        if self.launch.get("tensor_maps"):
            self._run_with_tensor_maps(tensors, grid, block, stream, smem)
            return
        import numpy as np

        # Raw device pointers by value: works for every dtype (CuPy has no bfloat16).
        args = tuple(np.uint64(t.data_ptr()) if hasattr(t, "data_ptr") else np.int32(t) for t in tensors)
        self.function()(grid, block, args, shared_mem=smem)

    def tensor_map_encodings(self, tensors):
        """One cuTensorMapEncodeTiled argument dict per launch["tensor_maps"] entry,
        for the tensor it names among `tensors` (argument order)."""
        out = []
        for m in self.launch["tensor_maps"]:
            i = int(m["arg"])
            t = tensors[i] if 0 <= i < len(tensors) else None
            name = m.get("name", str(i))
            if not hasattr(t, "data_ptr"):
                raise ValueError(f"tensor map for '{name}': argument {i} is not a tensor")
            if hasattr(t, "is_contiguous") and not t.is_contiguous():
                raise ValueError(f"tensor map for '{name}': the tensor is not contiguous")
            out.append(tensor_map_encoding(name, int(t.data_ptr()), list(t.shape),
                                           _element_bytes(t), m["box"], int(m["swizzle_bytes"])))
        return out

    def _run_with_tensor_maps(self, tensors, grid, block, stream, smem):
        handle = self.handle()  # loads the module and sets the shared-memory attribute
        drv = _CudaDriver.get()
        keep = []  # every value kernelParams points at stays alive until the launch returns
        params = []
        for t in tensors:
            v = ctypes.c_uint64(t.data_ptr()) if hasattr(t, "data_ptr") else ctypes.c_int32(int(t))
            keep.append(v)
            params.append(ctypes.addressof(v))
        for m, e in zip(self.launch["tensor_maps"], self.tensor_map_encodings(tensors)):
            buf, address = drv.encode_tensor_map(m.get("name", str(m["arg"])), e)
            keep.append(buf)
            params.append(address)
        argv = (ctypes.c_void_p * len(params))(*params)
        if stream is None:
            import cupy as cp

            stream = cp.cuda.get_current_stream().ptr
        code = drv.launch(handle, *grid, *block, smem,
                          stream or None, argv, None)
        if code != 0:
            raise RuntimeError(drv.error(f"cuLaunchKernel({self.launch['symbol']})", code))


def compile_program(kiln_opt, path, binds, arch="sm_90", workdir=None):
    workdir = workdir or tempfile.mkdtemp(prefix="kiln_gpu_")
    stem = os.path.splitext(os.path.basename(path))[0]
    tag = arch + "_" + "_".join(f"{k}{v}" for k, v in sorted(binds.items()))[:120]
    cubin = os.path.join(workdir, f"{stem}_{tag}.cubin")
    launch = os.path.join(workdir, f"{stem}_{tag}.json")
    import time

    t0 = time.perf_counter()
    r = subprocess.run(
        [kiln_opt, path, *bind_args(binds), "--emit=cubin", "--target", f"cuda:{arch}", "-o", cubin,
         "--launch-json", launch, *(["--gemm=wgmma"] if arch == "sm_90a" else []),
         # Extra kiln-opt flags for every sm_90a compile (e.g. --pipeline=cp.async), so
         # the GPU scripts can sweep the older paths.
         *(os.environ.get("KILN_GPU_SM90A_FLAGS", "").split() if arch == "sm_90a" else [])],
        capture_output=True,
        text=True,
    )
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"kiln-opt failed for {path} {binds}:\n{r.stderr}")
    with open(launch) as f:
        meta = json.load(f)
    return Compiled(cubin, meta, dt)


class _Permissive:
    def __getattr__(self, name):
        return _Permissive()

    def __call__(self, *args, **kwargs):
        if args and callable(args[0]) and not kwargs:
            return args[0]
        return _Permissive()


def load_example_module(path):
    """Imports an example with `tilelang` stubbed, for its ref_program."""
    tl = types.ModuleType("tilelang")
    tl.__getattr__ = lambda name: _Permissive()
    tl.jit = lambda *a, **k: a[0] if a and callable(a[0]) else (lambda fn: fn)
    tll = types.ModuleType("tilelang.language")
    tll.__getattr__ = lambda name: _Permissive()
    tl.language = tll
    sys.modules["tilelang"] = tl
    sys.modules["tilelang.language"] = tll
    spec = importlib.util.spec_from_file_location("kiln_example_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def num_inputs(mod):
    return len(inspect.signature(mod.ref_program).parameters)


def make_tensors(launch, n_inputs, seed=0):
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    out = []
    tensor_index = 0
    for a in launch["args"]:
        if a["scalar"]:
            raise ValueError(f"scalar argument {a['name']} needs a value")
        shape = [int(s) for s in a["shape"]]
        dt = torch_dtype(a["dtype"])
        if tensor_index < n_inputs:
            if dt.is_floating_point:
                t = (torch.rand(shape, generator=g, device="cuda", dtype=torch.float32) * 2 - 1).to(dt)
            else:
                t = torch.randint(-8, 8, shape, generator=g, device="cuda").to(dt)
        else:
            t = torch.zeros(shape, device="cuda", dtype=dt)
        out.append(t)
        tensor_index += 1
    return out


def time_kernel(fn, warmup=5, reps=30, flush_l2=True):
    """Median and min milliseconds of fn() over reps, CUDA events, L2 flushed between reps."""
    import torch

    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        if flush is not None:
            flush.zero_()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2], times[0]


# --- Self-tests ---------------------------------------------------------------


def _expect_error(fn, text):
    try:
        fn()
    except ValueError as e:
        assert "tensor map for 'A'" in str(e) and text in str(e), str(e)
        return
    raise AssertionError(f"no error containing {text!r}")


def self_test():
    """The encode arguments without a GPU: rank 2 and 3, every refusal."""
    e = tensor_map_encoding("A", 0x7F0000001000, [300, 72], 2, [128, 64], 128)
    assert e["data_type"] == 1 and e["rank"] == 2 and e["swizzle"] == 3, e
    assert e["global_dim"] == [72, 300] and e["global_strides"] == [144], e
    assert e["box_dim"] == [64, 128] and e["element_strides"] == [1, 1], e
    assert (e["interleave"], e["l2_promotion"], e["oob_fill"]) == (0, 2, 0), e
    e = tensor_map_encoding("B", 0x1000, [3, 20, 12], 4, [1, 16, 8], 0)
    assert e["data_type"] == 2 and e["swizzle"] == 0, e
    assert e["global_dim"] == [12, 20, 3] and e["global_strides"] == [48, 960], e
    assert e["box_dim"] == [8, 16, 1], e
    ok = 0x1000
    for args, text in [
        ((ok + 8, [64, 64], 2, [64, 64], 0), "is not 16-byte aligned"),
        ((ok, [64, 35], 2, [64, 8], 0), "the stride of dimension 0 is 70 bytes, not a multiple of 16"),
        ((ok, [], 2, [], 0), "rank 0 is outside 1..5"),
        ((ok, [1] * 5 + [8], 2, [1] * 5 + [8], 0), "rank 6 is outside 1..5"),
        ((ok, [64, 64], 2, [64], 0), "the box has 1 dimensions for a tensor of rank 2"),
        ((ok, [64, 64], 2, [0, 64], 0), "box extent 0 of dimension 0 is outside 1..256"),
        ((ok, [512, 64], 2, [257, 8], 0), "box extent 257 of dimension 0 is outside 1..256"),
        ((ok, [0, 64], 2, [8, 64], 0), "extent 0 of dimension 0 is outside 1..2^32"),
        ((ok, [64, 64], 3, [8, 16], 0), "element size is not 1, 2, 4 or 8"),
        ((ok, [64, 64], 2, [8, 64], 16), "swizzle of 16 bytes"),
        ((ok, [64, 64], 2, [8, 12], 0), "the innermost box row is 24 bytes, not a multiple of 16"),
        ((ok, [64, 128], 2, [8, 128], 128), "256 bytes, wider than the 128-byte swizzle"),
        ((ok, [2, 1 << 28, 1024], 4, [1, 1, 8], 0), "the stride of dimension 0 is 2^40 bytes or more"),
    ]:
        _expect_error(lambda: tensor_map_encoding("A", *args), text)

    # Which tensor of a launch each map takes, and that kernels without maps keep CuPy's path.
    class FakeTensor:
        def __init__(self, shape, ptr, size=2):
            self.shape, self._ptr, self._size = shape, ptr, size

        def data_ptr(self):
            return self._ptr

        def element_size(self):
            return self._size

    launch = {"symbol": "k", "grid": [1, 1, 1], "block": [128, 1, 1], "dynamic_smem_bytes": 0,
              "args": [], "tensor_maps": [{"arg": 1, "name": "B", "box": [8, 64], "swizzle_bytes": 128}]}
    encs = Compiled(None, launch, 0).tensor_map_encodings([FakeTensor([4, 4], 0x100),
                                                           FakeTensor([13, 72], 0x2000), 7])
    assert len(encs) == 1 and encs[0]["global_address"] == 0x2000, encs
    assert encs[0]["global_dim"] == [72, 13] and encs[0]["global_strides"] == [144], encs
    try:
        Compiled(None, dict(launch, tensor_maps=[dict(launch["tensor_maps"][0], arg=2)]), 0) \
            .tensor_map_encodings([FakeTensor([4], 0), FakeTensor([4], 0), 7])
        raise AssertionError("a map over a scalar argument was accepted")
    except ValueError as e:
        assert "argument 2 is not a tensor" in str(e), str(e)
    print("kiln_gpu self-test: tensor map encodings OK")


_TMA_TEST_KERNEL = r"""
struct alignas(64) TensorMap { unsigned long long v[16]; };
__device__ unsigned SharedAddress(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
extern "C" __global__ void tma_tile(const unsigned short* in, unsigned short* out,
                                    const __grid_constant__ TensorMap map) {
  __shared__ __align__(1024) unsigned short tile[512];
  __shared__ __align__(8) unsigned long long barrier;
  const unsigned bar = SharedAddress(&barrier);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(1024)
                 : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(SharedAddress(tile)), "l"(&map), "r"(blockIdx.x * 64), "r"(blockIdx.y * 8),
                    "r"(bar) : "memory");
  }
  unsigned done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;"
                 " selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar), "r"(0) : "memory");
  } while (!done);
  const int block = blockIdx.y * gridDim.x + blockIdx.x;
  for (int i = threadIdx.x; i < 512; i += blockDim.x) out[block * 512 + i] = tile[i];
}
"""


def gpu_self_test():
    """On an sm_90 GPU: a hand-written TMA kernel launched by Compiled.run with a
    tensor map (ragged 13 x 72 uint16 matrix, 8 x 64 boxes, 128-byte swizzle)."""
    import torch
    from cupy.cuda import nvrtc

    if torch.cuda.get_device_capability() != (9, 0):
        print("kiln_gpu GPU self-test: skipped (needs a compute capability 9.0 GPU)")
        return
    prog = nvrtc.createProgram(_TMA_TEST_KERNEL, "tma_tile.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["--gpu-architecture=sm_90a", "-std=c++17"])
    except Exception:
        print(nvrtc.getProgramLog(prog))
        raise
    workdir = tempfile.mkdtemp(prefix="kiln_gpu_tma_")
    cubin = os.path.join(workdir, "tma_tile.cubin")
    with open(cubin, "wb") as f:
        f.write(nvrtc.getCUBIN(prog))
    rows, cols = 13, 72
    a = (torch.arange(rows * cols, device="cuda", dtype=torch.int32) + 1).to(torch.int16).view(rows, cols)
    out = torch.full((4 * 512,), -1, device="cuda", dtype=torch.int16)
    launch = {"symbol": "tma_tile", "grid": [2, 2, 1], "block": [128, 1, 1], "dynamic_smem_bytes": 0,
              "args": [], "tensor_maps": [{"arg": 0, "name": "in", "box": [8, 64], "swizzle_bytes": 128}]}
    Compiled(cubin, launch, 0).run([a, out])
    torch.cuda.synchronize()
    got = out.cpu().tolist()
    host = a.cpu().tolist()
    bad = 0
    for by in range(2):
        for bx in range(2):
            for r in range(8):
                for c in range(8):
                    for e in range(8):
                        row, col = by * 8 + r, bx * 64 + c * 8 + e
                        want = host[row][col] if row < rows and col < cols else 0
                        have = got[(by * 2 + bx) * 512 + r * 64 + (c ^ (r % 8)) * 8 + e]
                        if have != want:
                            bad += 1
                            if bad <= 10:
                                print(f"block ({bx}, {by}) row {r} chunk {c} element {e}: "
                                      f"got {have}, want {want}")
    assert bad == 0, f"{bad} elements differ"
    print("kiln_gpu GPU self-test: TMA launch with a tensor map OK")


if __name__ == "__main__":
    if "--self-test" in sys.argv[1:]:
        self_test()
    elif "--gpu-self-test" in sys.argv[1:]:
        gpu_self_test()
    else:
        sys.exit("usage: kiln_gpu.py --self-test | --gpu-self-test (a library otherwise)")
