"""@kiln.jit on a CUDA GPU with torch tensors: the GEMM example against torch.matmul
and flash attention against torch's scaled_dot_product_attention, through each way
of reaching the driver that is installed (cuda-python, cupy, ctypes), plus cupy
arrays and a timing line of the 4096^3 GEMM next to torch.matmul.

Skipped (with the reason) without torch or without a CUDA device; ctest label gpu.
Run on a GPU machine with tests/python/run_h200.sh.
"""
import importlib.util
import sys

import pytest

import kiln
from conftest import bind_line, load_example

torch = pytest.importorskip("torch", reason="the GPU tests launch on torch tensors")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible to torch", allow_module_level=True)

from kiln import _launch_cuda  # noqa: E402


def available_drivers():
    names = []
    for name, probe in (("cuda-python", "cuda"), ("cupy", "cupy"), ("ctypes", None)):
        if probe is None or importlib.util.find_spec(probe) is not None:
            names.append(name)
    return names


@pytest.fixture(params=available_drivers())
def driver(request):
    try:
        _launch_cuda.set_driver(request.param)
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"the {request.param} driver backend does not load: {e}")
    yield request.param
    _launch_cuda._driver = None
    _launch_cuda._modules.clear()
    _launch_cuda._primary.clear()


def rel_err(got, want):
    got, want = got.float(), want.float()
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-6)).item()


GEMM_TILES = dict(block_M=128, block_N=128, block_K=32, num_stages=3, threads=128)


@pytest.mark.parametrize("M,N,K", [(1024, 1024, 1024), (1000, 1000, 1000), (333, 517, 200)])
def test_gemm_matches_torch_matmul(client, driver, M, N, K):
    gemm = kiln.jit(load_example("gemm/gemm.py").gemm)
    A = torch.randn(M, K, dtype=torch.float16, device="cuda")
    B = torch.randn(K, N, dtype=torch.float16, device="cuda")
    C = gemm(A, B, **GEMM_TILES)
    ref = torch.matmul(A, B)
    torch.cuda.synchronize()
    assert C.shape == (M, N) and C.dtype == torch.float16 and C.device == A.device
    assert rel_err(C, ref) < 1e-2, f"{driver}: max relative error {rel_err(C, ref)}"


def test_gemm_on_a_side_stream(client):
    gemm = kiln.jit(load_example("gemm/gemm.py").gemm)
    A = torch.randn(512, 256, dtype=torch.float16, device="cuda")
    B = torch.randn(256, 384, dtype=torch.float16, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        C = gemm(A, B, **GEMM_TILES)   # launched on s, allocated on s
    s.synchronize()
    assert rel_err(C, A @ B) < 1e-2


def test_gemm_large_dynamic_shared_memory(client):
    # The bind line's tiles: 128x256x64, 4 stages, well past 48 KiB of shared memory.
    b = bind_line("gemm/gemm.py", "bind")
    tiles = {k: b[k] for k in ("block_M", "block_N", "block_K", "num_stages", "threads")}
    gemm = kiln.jit(load_example("gemm/gemm.py").gemm)
    A = torch.randn(2048, 1024, dtype=torch.float16, device="cuda")
    B = torch.randn(1024, 2048, dtype=torch.float16, device="cuda")
    C = gemm(A, B, **tiles)
    major, minor = torch.cuda.get_device_capability()
    art = gemm.compile(f"cuda:sm_{major}{minor}", dict(M=2048, N=2048, K=1024, **tiles))
    assert art.launch.dynamic_shared_bytes > 48 << 10  # cuFuncSetAttribute was needed
    assert rel_err(C, A @ B) < 1e-2


@pytest.mark.parametrize("causal", [True, False])
def test_flash_attention_matches_sdpa(client, causal):
    attn = kiln.jit(load_example("attention/flash_attention_fwd.py").flash_attention_fwd)
    batch, heads, seq, dim = 2, 8, 1000, 128
    Q, K, V = (torch.randn(batch, heads, seq, dim, dtype=torch.float16, device="cuda")
               for _ in range(3))
    O = attn(Q, K, V, is_causal=causal, block_M=128, block_N=128, num_stages=2, threads=256)
    ref = torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=causal)
    torch.cuda.synchronize()
    assert rel_err(O, ref) < 2e-2, f"causal={causal}: max relative error {rel_err(O, ref)}"


def test_cupy_arrays(client):
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    ex = load_example("elementwise/add.py")
    add = kiln.jit(ex.add)
    A = cupy.random.standard_normal((777, 1300)).astype(cupy.float16)
    B = cupy.random.standard_normal((777, 1300)).astype(cupy.float16)
    C = add(A, B, block_M=32, block_N=256)
    cupy.cuda.get_current_stream().synchronize()
    assert isinstance(C, cupy.ndarray)
    assert float(cupy.abs(C - (A + B)).max()) == 0.0


def test_gemm_4096_timing_next_to_torch(client, capsys):
    gemm = kiln.jit(load_example("gemm/gemm.py").gemm)
    b = bind_line("gemm/gemm.py", "bind")
    tiles = {k: b[k] for k in ("block_M", "block_N", "block_K", "num_stages", "threads")}
    n = 4096
    A = torch.randn(n, n, dtype=torch.float16, device="cuda")
    B = torch.randn(n, n, dtype=torch.float16, device="cuda")
    C = torch.empty(n, n, dtype=torch.float16, device="cuda")

    def timed(fn, reps=20):
        for _ in range(3):
            fn()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) / reps

    kiln_ms = timed(lambda: gemm(A, B, C=C, **tiles))
    torch_ms = timed(lambda: torch.matmul(A, B, out=C))
    assert rel_err(gemm(A, B, **tiles), A @ B) < 1e-2
    tflops = lambda ms: 2 * n ** 3 / (ms * 1e-3) / 1e12  # noqa: E731
    with capsys.disabled():
        sys.stderr.write(
            f"\n[kiln-timing] gemm {n}^3 fp16 on {torch.cuda.get_device_name()}: kiln.jit "
            f"{kiln_ms:.3f} ms ({tflops(kiln_ms):.0f} TFLOP/s, per call incl. Python launch), "
            f"torch.matmul {torch_ms:.3f} ms ({tflops(torch_ms):.0f} TFLOP/s), "
            f"driver {_launch_cuda.driver().name}\n")
