"""@kiln.jit end to end on the CPU target: the examples compiled by a real kilnd,
loaded into this process and run on NumPy arrays, checked against their NumPy
ref_program."""
import numpy as np
import pytest

import kiln
from conftest import bind_line, load_example

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float16):
    return RNG.standard_normal(shape).astype(dtype)


def close(got, want, tol=2e-2):
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    scale = max(1.0, float(np.abs(want).max()))
    err = float(np.abs(got - want).max())
    assert err <= tol * scale, f"max error {err} (scale {scale})"


def test_factory_form_binds_shapes_from_tensors(client):
    ex = load_example("elementwise/add.py")
    add = kiln.jit(ex.add)
    assert add.info.form == "factory"
    A, B = rand(77, 130), rand(77, 130)
    C = add(A, B, block_M=16, block_N=64)        # C allocated (zeros) and returned
    assert C.shape == (77, 130) and C.dtype == np.float16
    np.testing.assert_array_equal(C, ex.ref_program(A, B))
    out = np.full((77, 130), 9, np.float16)      # all three passed: written in place
    assert add(A, B, out, block_M=16, block_N=64) is None
    np.testing.assert_array_equal(out, C)


def test_factory_form_tilelang_style(client):
    ex = load_example("elementwise/add.py")
    kernel = kiln.jit(ex.add)(77, 130, 16, 64)   # TileLang: factory arguments first
    assert isinstance(kernel, kiln.Kernel)
    A, B = rand(77, 130), rand(77, 130)
    C = np.zeros_like(A)
    kernel(A, B, C)
    np.testing.assert_array_equal(C, ex.ref_program(A, B))
    np.testing.assert_array_equal(kernel(A, B), C)  # the output left off: allocated
    with pytest.raises(kiln.BindingError, match="shape"):
        kernel(rand(70, 130), rand(70, 130))


@pytest.mark.parametrize("shape,tiles", [
    ((100, 72, 40), dict(block_M=64, block_N=32, block_K=16)),        # the test-bind line
    ((37, 130, 70), dict(block_M=32, block_N=64, block_K=32, num_stages=2)),  # ragged
])
def test_gemm_jit_form(client, shape, tiles):
    ex = load_example("gemm/gemm.py")
    gemm = kiln.jit(ex.gemm)
    assert gemm.info.form == "jit" and gemm.info.consts == ["M", "N", "K"]
    M, N, K = shape
    A, B = rand(M, K), rand(K, N)
    C = gemm(A, B, **tiles)
    assert C.shape == (M, N) and C.dtype == np.float16
    close(C, ex.ref_program(A, B))


def test_gemm_float32_binds_the_dtype_parameter(client):
    ex = load_example("gemm/gemm.py")
    gemm = kiln.jit(ex.gemm)
    A, B = rand(50, 24, dtype=np.float32), rand(24, 40, dtype=np.float32)
    C = gemm(A, B, block_M=32, block_N=32, block_K=8)   # dtype=float32 from the arrays
    assert C.dtype == np.float32
    close(C, A.astype(np.float64) @ B.astype(np.float64), tol=1e-2)


def test_softmax_jit_form(client):
    ex = load_example("softmax/softmax.py")
    softmax = kiln.jit(ex.softmax, bind={"block_M": 4})
    X = rand(37, 300)
    Y = softmax(X, block_N=128)
    close(Y, ex.ref_program(X), tol=1e-2)


def test_flash_attention_factory_form(client):
    ex = load_example("attention/flash_attention_fwd.py")
    attn = kiln.jit(ex.flash_attention_fwd)
    b = bind_line("attention/flash_attention_fwd.py")
    Q, K, V = (rand(b["batch"], b["heads"], b["seq_len"], b["dim"]) for _ in range(3))
    # batch, heads, seq_len and dim come from Q's shape through `shape = (...)`.
    O = attn(Q, K, V, is_causal=True, block_M=b["block_M"], block_N=b["block_N"])
    close(O, ex.ref_program(Q, K, V))


def test_compiles_once_per_process(counting_client):
    ex = load_example("elementwise/add.py")
    add = kiln.jit(ex.add, client=counting_client)
    A, B = rand(77, 130), rand(77, 130)
    add(A, B, block_M=16, block_N=64)
    add(A, B, block_M=16, block_N=64)
    add(rand(77, 130), rand(77, 130), block_M=16, block_N=64)
    assert counting_client.compiles <= 1  # 0 when an earlier test compiled it first
    again = kiln.jit(ex.add, client=counting_client)   # another wrapper, same kernel
    again(A, B, block_M=16, block_N=64)
    assert counting_client.compiles <= 1


def test_dynamic_symbols_one_binary_for_every_size(counting_client):
    ex = load_example("gemm/gemm.py")
    gemm = kiln.jit(ex.gemm, dynamic=("M",), client=counting_client,
                    bind=dict(block_M=32, block_N=32, block_K=16))
    for M in (45, 7):
        A, B = rand(M, 24), rand(24, 40)
        close(gemm(A, B), ex.ref_program(A, B))
    assert counting_client.compiles == 1
    art = gemm.compile("cpu", {"N": 40, "K": 24})
    assert art.launch.symbols == ("M",)
    assert "M" in art.launch.params[0].shape


def test_binding_errors_are_caught_before_compiling(counting_client):
    ex = load_example("gemm/gemm.py")
    gemm = kiln.jit(ex.gemm, client=counting_client)
    tiles = dict(block_M=64, block_N=32, block_K=16)
    with pytest.raises(kiln.BindingError, match="K"):
        gemm(rand(100, 40), rand(39, 72), **tiles)            # inner dimensions differ
    with pytest.raises(kiln.BindingError, match="dtype"):
        gemm(rand(100, 40), rand(40, 72, dtype=np.float32), **tiles)
    with pytest.raises(kiln.BindingError, match="block_K"):
        gemm(rand(100, 40), rand(40, 72), block_M=64, block_N=32)
    with pytest.raises(kiln.BindingError, match="dimensions"):
        gemm(rand(100, 40, 2), rand(40, 72), **tiles)
    with pytest.raises(kiln.BindingError, match="no parameter"):
        gemm(rand(100, 40), rand(40, 72), blockM=3, **tiles)
    with pytest.raises(kiln.BindingError, match="not a tensor"):
        gemm([[1.0]], rand(40, 72), **tiles)
    assert counting_client.compiles == 0


def test_server_diagnostics_reach_the_caller(client, tmp_path):
    src = tmp_path / "broken.py"
    src.write_text(
        "import tilelang\nimport tilelang.language as T\n\n"
        "def scale(M, block):\n"
        "    @T.prim_func\n"
        "    def main(A: T.Tensor((M,), T.float32)):\n"
        "        with T.Kernel(T.ceildiv(M, block), threads=32) as bx:\n"
        "            A[bx] = A[bx] * no_such_name\n"
        "    return main\n")
    kiln.install_tilelang_shim()
    ns = {}
    exec(compile(src.read_text(), str(src), "exec"), ns)
    k = kiln.jit(ns["scale"])
    with pytest.raises(kiln.CompileError) as info:
        k(np.zeros(64, np.float32), block=32)
    d = info.value.diagnostics[0]
    assert (d.file, d.line) == (str(src), 8)
    assert "no_such_name" in d.message


def test_aligned_and_misaligned_arrays_give_the_same_result(client):
    ex = load_example("elementwise/add.py")
    add = kiln.jit(ex.add, bind=dict(block_M=16, block_N=64))
    A = rand(77, 130)
    raw = np.zeros(77 * 130 + 1, np.float16)
    B = raw[1:].reshape(77, 130)     # 2 bytes past an allocation: misaligned
    B[...] = rand(77, 130)
    C = np.zeros((77, 130), np.float16)
    add(A, B, C)
    np.testing.assert_array_equal(C, ex.ref_program(A, B))
    Ct = np.zeros((130, 77), np.float16).T   # a non-contiguous output
    add(A, B, Ct)
    np.testing.assert_array_equal(Ct, C)


def _exec_kernel_module(tmp_path, name, text):
    src = tmp_path / name
    src.write_text(text)
    kiln.install_tilelang_shim()
    ns = {}
    exec(compile(text, str(src), "exec"), ns)
    return ns


def test_parameters_named_like_ir_words_bind_by_keyword(client, tmp_path):
    # `max`, `exp` and `out` are words of the tile IR's text and `in` (a T.const:
    # Python does not allow it as a parameter) is one of Python's: the compiler
    # renames them inside, the launch metadata and the keywords keep the user's names.
    ns = _exec_kernel_module(tmp_path, "names.py", """\
import tilelang
import tilelang.language as T


@tilelang.jit
def scale(max, exp, block=32):
    n = T.const("in")
    max: T.Tensor((n,), "float32")
    exp: T.Tensor((n,), "float32")
    out = T.empty((n,), "float32")
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                out[bx * block + i] = max[bx * block + i] * 2.0 + exp[bx * block + i]
    return out


def copy(N, block=32):
    @T.prim_func
    def main(min: T.Tensor((N,), "float32"), out: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    out[bx * block + i] = min[bx * block + i] + 1.0
    return main
""")
    a = np.arange(70, dtype=np.float32) - 20
    b = np.linspace(0, 1, 70, dtype=np.float32)
    scale = kiln.jit(ns["scale"], dynamic=("in",))
    got = scale(max=a, exp=b)
    np.testing.assert_array_equal(got, a * 2 + b)
    np.testing.assert_array_equal(scale(exp=b[:33], max=a[:33]), a[:33] * 2 + b[:33])
    art = scale.compile("cpu", {})
    assert [p.name for p in art.launch.params] == ["max", "exp", "out"]
    assert art.launch.symbols == ("in",)
    assert art.launch.grid[0] == "(in + 31) // 32"

    copy = kiln.jit(ns["copy"])
    out = np.zeros(70, np.float32)
    assert copy(min=a, out=out) is None            # the output by keyword, written in place
    np.testing.assert_array_equal(out, a + 1)
    art = copy.compile("cpu", {"N": 70})
    assert [(p.name, p.is_output) for p in art.launch.params] == [("min", False), ("out", True)]


def test_launch_expressions_read_the_users_names_as_symbols():
    # Grid and shape expressions name symbols as the user did: Python keywords
    # and words the expression syntax uses are symbols unless a call follows.
    from kiln._expr import evaluate
    assert evaluate("(in + 63) // 64", {"in": 130}) == 3
    assert evaluate("max(max, 4) * min", {"max": 3, "min": 5}) == 20
    assert evaluate("cast<int64>(if) + true", {"if": 2}) == 3
    assert evaluate("true + 1", {"true": 5}) == 6
    assert evaluate("!(n != 2) && x2 > 1", {"n": 2, "x2": 3}) == 1
    with pytest.raises(ValueError, match="'in', which has no value"):
        evaluate("in + 1", {})


def test_program_of_several_kernels_and_workspaces(client):
    """A program of three kernels over two T.alloc_global workspaces
    (tests/programs/split_k_row_sums.py; docs/design/multi-kernel.md): the launch runs
    every kernel in order with the workspaces zeroed and passed after the symbols. Run
    without the later kernels, `out` would stay zero."""
    ex = load_example("../tests/programs/split_k_row_sums.py")
    f = kiln.jit(ex.split_k_row_sums)
    X = RNG.standard_normal((40, 96)).astype(np.float32)
    out = f(X, splits=3, block_M=8)
    assert out.shape == (40, 96)
    close(out, ex.ref_program(X), tol=1e-4)
