"""TileLang's host API under the shim (kiln/_compiled.py, kiln/shim.py), on the CPU target
with a real kilnd: fn.compile(...) gives a callable kernel with get_kernel_source() and
get_profiler() (assert_allclose, do_bench), a factory's kernel has them too, the shim's
modules stand in for what kernel files import (tvm.DataType, tilelang.profiler,
tilelang.testing, tilelang.__file__), and TileLang's own gemv example runs its main()
checks unchanged (skipped, with the reason, without TileLang's examples folder)."""
import importlib.util
import inspect
import os
import pathlib
import sys

import numpy as np
import pytest

import kiln
from conftest import REPO, load_example

RNG = np.random.default_rng(11)


def test_jit_form_compile_returns_a_tilelang_kernel(client):
    ex = load_example("gemm/gemm.py")
    kernel = ex.gemm.compile(M=64, N=48, K=32, block_M=64, block_N=16, block_K=16)
    assert isinstance(kernel, kiln.CompiledKernel) and kernel.target == "cpu"
    assert len(kernel.key) == 64 and [p.name for p in kernel.launch.params] == ["A", "B", "C"]
    A = RNG.standard_normal((64, 32)).astype(np.float16)
    B = RNG.standard_normal((32, 48)).astype(np.float16)
    C = kernel(A, B)
    np.testing.assert_allclose(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32),
                               rtol=2e-2, atol=2e-2)
    with pytest.raises(kiln.BindingError, match="shape"):
        kernel(A[:32], B)  # the compiled M is 64
    assert "kiln" in kernel.get_kernel_source()

    profiler = kernel.get_profiler(tensor_supply_type=kiln.TensorSupplyType.Normal)
    profiler.assert_allclose(lambda a, b: a.astype(np.float32) @ b.astype(np.float32),
                             rtol=2e-2, atol=2e-2)
    with pytest.raises(AssertionError, match="elements differ"):
        profiler.assert_allclose(lambda a, b: a.astype(np.float32) @ b.astype(np.float32) + 1)
    assert profiler.do_bench(warmup=1, rep=5) > 0
    assert profiler.do_bench(lambda a, b: a @ b, n_warmup=1, n_repeat=2) > 0


def test_factory_kernel_has_the_profiler_too(client):
    ex = load_example("elementwise/add.py")
    kernel = kiln.jit(ex.add)(77, 130, 16, 64)
    profiler = kernel.get_profiler(kiln.TensorSupplyType.Integer)
    profiler.assert_allclose(ex.ref_program, rtol=0, atol=0)
    out = profiler.run_once()
    assert out.shape == (77, 130) and out.dtype == np.float16
    assert kernel.compile().get_kernel_source() == kernel.get_kernel_source()


def test_shim_modules_stand_in_for_what_kernel_files_import(client):
    assert kiln.install_tilelang_shim()
    import tilelang
    import tvm
    from tilelang.profiler import do_bench
    assert os.path.exists(tilelang.__file__)
    assert inspect.getmodule(test_shim_modules_stand_in_for_what_kernel_files_import) is \
        sys.modules[__name__]  # inspect walks every module, the shim's included
    with pytest.raises(AttributeError):
        tilelang.__wrapped__  # noqa: B018 (dunder probes fail as for any module)
    if getattr(tvm, "__kiln_shim__", False):
        assert tvm.DataType("float16").bits == 16 and tvm.DataType("int8").bits == 8
    assert tilelang.cdiv(7, 2) == 4 and tilelang.math.next_power_of_2(33) == 64
    assert do_bench(lambda: None, n_warmup=1, n_repeat=3) >= 0
    ran = []
    namespace = {"test_one": lambda: ran.append(1), "helper": lambda: ran.append(2),
                 "main": tilelang.testing.main}
    exec("main()", namespace)
    assert ran == [1]


def _tilelang_examples():
    d = os.environ.get("KILN_TILELANG_EXAMPLES") or str(
        REPO.parent / "shared" / "tilelang-a35008a" / "examples")
    return pathlib.Path(d)


def test_tilelang_gemv_example_main_passes_its_own_checks(client):
    path = _tilelang_examples() / "gemv" / "example_gemv.py"
    if not path.exists():
        pytest.skip(f"{path} not found (TileLang's examples sit beside the checkout)")
    kiln.install_tilelang_shim()
    spec = importlib.util.spec_from_file_location("tl_example_gemv", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    argv = sys.argv
    sys.argv = [str(path), "--n", "256", "--k", "512"]
    try:
        mod.main(do_bench=False)  # six kernels, each checked by its profiler against A @ B.T
    finally:
        sys.argv = argv


OUT_IDX_SOURCE = '''
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-3, -1])
def scale_shift(N, block=32):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"),
             Bias: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                Y[bx * block + i] = X[bx * block + i] * 2
                Z[bx * block + i] = X[bx * block + i] + Bias[bx * block + i]
    return main


@tilelang.jit
def window_sum(X, block=16):
    R, K = T.const("R, K")
    KH, KW = K, K
    X: T.Tensor((R, KH, KW), "float32")
    Y = T.empty((R,), "float32")
    with T.Kernel(T.ceildiv(R, block), threads=32) as bx:
        for i in T.Parallel(block):
            acc = T.alloc_var("float32")
            acc = 0
            for a in T.serial(KH):
                for b in T.serial(KW):
                    acc += X[bx * block + i, a, b]
            Y[bx * block + i] = acc
    return Y
'''


def test_out_idx_and_shape_aliases(client, tmp_path):
    kiln.install_tilelang_shim()
    path = tmp_path / "out_idx_kernels.py"
    path.write_text(OUT_IDX_SOURCE)
    spec = importlib.util.spec_from_file_location("out_idx_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # out_idx=[-3, -1]: Y and Z are left off the call, allocated and returned in order.
    kernel = mod.scale_shift(64)
    X = RNG.standard_normal(64).astype(np.float32)
    Bias = RNG.standard_normal(64).astype(np.float32)
    Y, Z = kernel(X, Bias)
    np.testing.assert_array_equal(Y, X * 2)
    np.testing.assert_array_equal(Z, X + Bias)
    # KH, KW = K, K: the tensor's shape binds K through the aliases.
    X3 = RNG.standard_normal((48, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(mod.window_sum(X3), X3.sum(axis=(1, 2)), rtol=1e-5)
