"""Unit tests of the TileLang corpus runner (tests/compat/tilelang_corpus.py): kernel and
binding discovery on small example sources written here, the feature buckets, and the
runner end to end against a stand-in kiln-opt (so no compiler build is needed).

Run: python3 -m unittest tests/compat/test_tilelang_corpus.py
(ctest: compat/tilelang_corpus_runner).
"""
import io
import json
import os
import stat
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tilelang_corpus as corpus  # noqa: E402


def discover(source):
    mod = corpus.Module(textwrap.dedent(source), "example.py")
    mod.discover()
    return mod


JIT_WITH_ARGPARSE = """
import argparse
import tilelang
import tilelang.language as T

@tilelang.jit(out_idx=[-1])
def matmul(A, B, block_M, block_N, dtype=T.float16):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)
    return C

def main(scale=2):
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--block-n", dest="bn", type=int, default=64)
    args, _ = parser.parse_known_args()
    kernel = matmul.compile(M=args.m * scale, N=128, K=args.m, block_M=args.m // 4,
                            block_N=args.bn, dtype=T.bfloat16)

if __name__ == "__main__":
    main()
"""

FACTORY_POSITIONAL = """
import tilelang as tl
from tilelang import language as T

SIZES = (512, 256)

def add(M, N, block, threads=128, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block), threads=threads) as bx:
            pass
    return main

def run(M, N, block):
    kernel = tl.compile(add(M, N, block, dtype="float32"), out_idx=[1])

def test_add():
    m, n = SIZES
    for block in [32, 64]:
        run(m, n, block)
"""

AUTOTUNE_AND_NESTED = """
import itertools
import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune

def get_configs():
    params = dict(block_N=[16, 32], threads=[128, 256], num_stages=[0, 2])
    return [dict(zip(params, v)) for v in itertools.product(*params.values())]

@autotune(configs=get_configs())
@tilelang.jit
def gemv(A, block_N=None, threads=None, num_stages=3):
    N = T.const("N")
    A: T.Tensor((N,), T.float16)
    return A

@tilelang.jit
def never_called(A, block_N):
    A: T.Tensor((8,), T.float16)
    return A

def tune_driver(M):
    def kernel(block):
        @T.prim_func
        def main(A: T.Tensor((M,), "float16")):
            pass
        return main
    return kernel

def main():
    gemv.compile(N=4096)
"""

AUTOGRAD_AND_REFS = """
import torch
import tilelang
import tilelang.language as T

def fwd(batch, heads, seq_len, dim, is_causal):
    @T.prim_func
    def main(Q: T.Tensor((batch, seq_len, heads, dim), "float16")):
        pass
    return main

def bwd(batch, heads, seq_len, dim, is_causal):
    @T.prim_func
    def main(Q: T.Tensor((batch, seq_len, heads, dim), "float16")):
        pass
    return main

def small(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float16")):
        pass
    return main

def large(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float16")):
        pass
    return main

def tiny(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float16")):
        pass
    return main

class _attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, causal):
        B, S, H, D = q.shape
        ctx.causal = causal
        ctx.save_for_backward(q)
        return fwd(B, H, S, D, causal)(q)

    @staticmethod
    def backward(ctx, do):
        (q,) = ctx.saved_tensors
        B, S, H, D = q.shape
        return bwd(B, H, S, D, ctx.causal)(q, do)

attention = _attention.apply
KERNELS = {"small": small, "large": large}

def main(variant="small", big=False):
    q = torch.randn(2, 128, 4, 64, device="cuda", dtype=torch.float16).requires_grad_()
    out = attention(q, True)
    fn = KERNELS[variant]
    fn(tilelang.cdiv(1000, 10))
    if big:
        tiny(7)
        kernel = small
    else:
        kernel = large
    kernel(9)
"""


NESTED_DRIVERS = """
import tilelang
import tilelang.language as T
from tilelang.autotuner import AutoTuner

def get_configs():
    return [{"block": b, "dtype": "float32"} for b in (64, 128)]

def get_best(M, N, dtype="float16", rep=20):
    def kernel(block=None, dtype=None):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype)):
            pass
        return main
    tuner = AutoTuner.from_kernel(kernel=kernel, configs=get_configs()).set_compile_args(
        out_idx=[-1])
    return tuner.run(warmup=3, rep=rep)

def make():
    def kernel(block=None):
        @T.prim_func
        def main(A: T.Tensor((128,), "float16")):
            pass
        return main
    return kernel

def direct(scale):
    @tilelang.jit
    def kernel(A, block):
        A: T.Tensor((8,), T.float16)
        return A
    return kernel(block=16)

def outer(n):
    def mid():
        def kernel(block=32):
            @T.prim_func
            def main(A: T.Tensor((n,), "float16")):
                pass
            return main
        return kernel
    return mid

def uncalled(M):
    def kernel(block=None):
        @T.prim_func
        def main(A: T.Tensor((M,), "float16")):
            pass
        return main
    return AutoTuner.from_kernel(kernel, [{"block": 16}])

class Holder:
    def build(self):
        def kernel(block):
            @T.prim_func
            def main(A: T.Tensor((8,), "float16")):
                pass
            return main
        return kernel

def main():
    get_best(1024, 512)
    AutoTuner.from_kernel(kernel=make(), configs=[{"block": 128}])
    direct(3)
    outer(8)
"""


class DiscoveryTest(unittest.TestCase):

    def test_jit_form_binds_from_argparse_defaults_and_arithmetic(self):
        mod = discover(JIT_WITH_ARGPARSE)
        self.assertEqual(list(mod.kernels), ["matmul"])
        self.assertEqual(mod.kernels["matmul"].form, "jit")
        binds, reason = mod.bindings_for("matmul")
        self.assertIsNone(reason)
        # A and B are tensors (annotated in the body): never bound.
        self.assertEqual(binds, {"M": "512", "N": "128", "K": "256", "block_M": "64",
                                 "block_N": "64", "dtype": "T.bfloat16"})

    def test_factory_form_positional_call_through_helper_and_loop(self):
        mod = discover(FACTORY_POSITIONAL)
        # The nested @T.prim_func is the factory's kernel, not a second one.
        self.assertEqual(list(mod.kernels), ["add"])
        self.assertEqual(mod.kernels["add"].form, "factory")
        binds, reason = mod.bindings_for("add")
        self.assertIsNone(reason)
        self.assertEqual(binds, {"M": "512", "N": "256", "block": "32", "dtype": "float32"})

    def test_autotune_first_config_fills_none_defaults_only(self):
        mod = discover(AUTOTUNE_AND_NESTED)
        binds, reason = mod.bindings_for("gemv")
        self.assertIsNone(reason)
        # num_stages keeps its own default (3), not the config's 0.
        self.assertEqual(binds, {"N": "4096", "block_N": "16", "threads": "128"})

    def test_uncalled_and_nested_kernels_are_reported(self):
        mod = discover(AUTOTUNE_AND_NESTED)
        _, reason = mod.bindings_for("never_called")
        self.assertIn("block_N", reason)
        self.assertIn("never calls it", reason)
        self.assertTrue(mod.kernels["tune_driver.kernel"].nested)
        self.assertEqual(mod.kernels["tune_driver.kernel"].form, "factory")

    def test_autograd_function_tensor_shapes_kernel_refs_and_untaken_branch(self):
        mod = discover(AUTOGRAD_AND_REFS)
        fwd, reason = mod.bindings_for("fwd")
        self.assertIsNone(reason)
        self.assertEqual(fwd, {"batch": "2", "heads": "4", "seq_len": "128", "dim": "64",
                               "is_causal": "True"})
        bwd, reason = mod.bindings_for("bwd")  # backward runs with forward's ctx
        self.assertIsNone(reason)
        self.assertEqual(bwd, fwd)
        # `large` is reached through the table though main's default picks `small`.
        self.assertEqual(mod.bindings_for("large"), ({"n": "100"}, None))
        # `tiny` is called only in the branch main's defaults do not take.
        self.assertEqual(mod.bindings_for("tiny"), ({"n": "7"}, None))
        # `kernel` holds `large`, or `small` in the other branch: both are called.
        self.assertEqual([c[0] for c in mod.calls["small"]], [{"n": "100"}, {"n": "9"}])
        self.assertEqual([c[0] for c in mod.calls["large"]], [{"n": "100"}, {"n": "9"}])

    def test_const_symbols_from_tensor_shapes_modules_and_namespaces(self):
        mod = discover("""
            import argparse
            import torch
            import tilelang
            import tilelang.language as T

            @tilelang.jit
            def topk(logits, k, blk_m):
                M, N = T.const("M, N")
                logits: T.Tensor([M, N], T.float32)
                with T.Kernel(M // blk_m) as bx:
                    pass

            @tilelang.jit
            def scale(x, factor):
                R, C = T.const("R, C")
                x: T.Tensor[(R, C), T.float16]
                with T.Kernel(R) as bx:
                    pass

            class Scaler(torch.nn.Module):
                def __init__(self, factor):
                    super().__init__()
                    self.factor = factor

                def forward(self, x):
                    return scale(x, self.factor)

            def run(args):
                logits = torch.rand((args.M, args.N), device="cuda")
                topk(logits, args.k, blk_m=64)
                Scaler(args.factor)(torch.randn(32, 48))

            def main():
                args = argparse.Namespace(M=320, N=128)
                args.k = 6
                args.factor = 2
                run(args)

            if __name__ == "__main__":
                main()
            """)
        # T.const symbols take the passed tensor's shape; the module's forward runs
        # when the instance is called; a Namespace keeps later attribute writes.
        self.assertEqual(mod.bindings_for("topk"),
                         ({"k": "6", "blk_m": "64", "M": "320", "N": "128"}, None))
        self.assertEqual(mod.bindings_for("scale"),
                         ({"factor": "2", "R": "32", "C": "48"}, None))

    def test_never_called_kernel_takes_same_named_module_values(self):
        mod = discover("""
            import tilelang
            import tilelang.language as T

            @tilelang.jit
            def splitk(A, blk_m, blk_k):
                M, N = T.const("M, N")
                A: T.Tensor((M, N), T.float32)
                with T.Kernel(M // blk_m) as bx:
                    pass

            @tilelang.jit
            def other(A, blk_q):
                A: T.Tensor((8,), T.float32)
                with T.Kernel(1) as bx:
                    pass

            if __name__ == "__main__":
                M, N, blk_m, blk_k = 8192, 4096, 1, 512
            """)
        self.assertEqual(mod.bindings_for("splitk"),
                         ({"blk_m": "1", "blk_k": "512", "M": "8192", "N": "4096"}, None))
        binds, reason = mod.bindings_for("other")
        self.assertEqual(binds, {})
        self.assertIn("never calls it", reason)

    def test_config_object_and_closure(self):
        mod = discover("""
            from dataclasses import dataclass
            import tilelang
            import tilelang.language as T

            @tilelang.jit
            def mm(A, block_M, block_K):
                A: T.Tensor((8, 8), T.float16)
                return A

            @dataclass
            class Config:
                block_M: int = 64
                block_K: int = 32

                @property
                def half_k(self):
                    return self.block_K // 2

            def bench(fn):
                pass

            def main():
                cfg = Config(block_M=128)
                def run():
                    mm(None, cfg.block_M, cfg.half_k)
                bench(run)
            """)
        self.assertEqual(mod.bindings_for("mm"), ({"block_M": "128", "block_K": "16"}, None))

    def test_int_list_and_tuple_arguments_are_bound(self):
        mod = discover("""
            import tilelang.language as T
            def grouped(sizes, block, shape):
                @T.prim_func
                def main(A: T.Tensor((8,), "float16")):
                    pass
                return main
            sizes = [64, 128]
            grouped(sizes, 32, (3,))
            """)
        binds, reason = mod.bindings_for("grouped")
        self.assertEqual(binds, {"sizes": "[64, 128]", "block": "32", "shape": "(3,)"})
        self.assertIsNone(reason)

    def test_fp8_dtype_helper_binds_cuda_fp8_types(self):
        mod = discover("""
            import tilelang.language as T
            from tilelang.language.fp8 import determine_fp8_type
            def mm(M, dtype):
                @T.prim_func
                def main(A: T.Tensor((8,), "float16")):
                    pass
                return main
            mm(16, determine_fp8_type())
            mm(32, determine_fp8_type("e5m2"))
            """)
        binds, reason = mod.bindings_for("mm")
        self.assertEqual(binds, {"M": "16", "dtype": "T.float8_e4m3fn"})
        self.assertIsNone(reason)

    def test_list_argument_is_named_as_unbindable(self):
        mod = discover("""
            import tilelang.language as T
            def grouped(sizes, block):
                @T.prim_func
                def main(A: T.Tensor((8,), "float16")):
                    pass
                return main
            grouped([64, 1.5], 32)
            """)
        binds, reason = mod.bindings_for("grouped")
        self.assertEqual(binds, {"block": "32"})
        self.assertIn("passes sizes as a list or tuple that kiln-opt --bind cannot carry", reason)

    def test_get_tir_binds_like_compile(self):
        mod = discover("""
import tilelang
import tilelang.language as T

@tilelang.jit
def kernel(A, block_M, threads):
    M = T.const("M")
    A: T.Tensor((M,), T.float16)
    with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
        pass

def main():
    f = kernel.get_tir(block_M=128, threads=256)
""")
        self.assertEqual(mod.bindings_for("kernel"), ({"block_M": "128", "threads": "256"}, None))

    def test_triton_jit_is_not_a_kernel(self):
        mod = discover("""
            import triton
            import triton.language as tl
            @triton.jit
            def k(x):
                pass
            """)
        self.assertEqual(mod.kernels, {})

    def test_nested_kernel_binds_both_levels(self):
        # TileLang's autotune drivers: the kernel function closes over the driver's
        # parameters, and AutoTuner.from_kernel's first config binds its tunables.
        mod = discover(NESTED_DRIVERS)
        k = mod.kernels["get_best.kernel"]
        self.assertTrue(k.nested)
        self.assertEqual([f.name for f in k.chain], ["get_best"])
        binds, reason = mod.bindings_for("get_best.kernel")
        self.assertIsNone(reason)
        # M and N from main's call of get_best, block from the first config; dtype is
        # declared by both levels: the kernel function's config value wins.
        self.assertEqual(binds, {"M": "1024", "N": "512", "block": "64", "dtype": "float32"})
        self.assertEqual(list(binds)[:2], ["M", "N"])  # the enclosing level's first

    def test_nested_kernel_through_a_factory_and_a_direct_call(self):
        mod = discover(NESTED_DRIVERS)
        # make() returns the kernel function, which from_kernel receives.
        self.assertEqual(mod.bindings_for("make.kernel"), ({"block": "128"}, None))
        # A call of the nested kernel function binds it like a module-level kernel's.
        self.assertEqual(mod.bindings_for("direct.kernel"),
                         ({"scale": "3", "block": "16"}, None))

    def test_nested_path_names_every_level(self):
        mod = discover(NESTED_DRIVERS)
        # Named by the functions that define it, as kiln-opt --entry takes it.
        self.assertIn("outer.mid.kernel", mod.kernels)
        self.assertNotIn("outer.kernel", mod.kernels)
        self.assertEqual([f.name for f in mod.kernels["outer.mid.kernel"].chain],
                         ["outer", "mid"])
        binds, reason = mod.bindings_for("outer.mid.kernel")
        self.assertEqual(binds, {"n": "8"})  # block keeps its default
        self.assertIsNone(reason)

    def test_nested_kernel_without_enclosing_bindings_or_in_a_class(self):
        mod = discover(NESTED_DRIVERS)
        binds, reason = mod.bindings_for("uncalled.kernel")
        self.assertEqual(binds, {"block": "16"})
        self.assertEqual(reason, "no binding discovered for M of uncalled (the file's calls "
                                 "of it give no literal value)")
        _, reason = mod.bindings_for("Holder.build.kernel")
        self.assertEqual(reason, "kernel defined inside class Holder: Kiln compiles "
                                 "module-level functions and functions defined in them")

    def test_binding_text(self):
        self.assertEqual(corpus.binding_text(True), "True")
        self.assertEqual(corpus.binding_text(3), "3")
        self.assertEqual(corpus.binding_text(1e-5), "1e-05")
        self.assertEqual(corpus.binding_text(corpus.DType("torch.float16")), "torch.float16")
        self.assertEqual(corpus.binding_text([1, 2]), "[1, 2]")
        self.assertEqual(corpus.binding_text((7,)), "(7,)")
        self.assertEqual(corpus.binding_text(()), "()")
        self.assertIsNone(corpus.binding_text([1, True]))
        self.assertIsNone(corpus.binding_text([1, [2]]))
        self.assertIsNone(corpus.binding_text([0] * (corpus.MAX_BINDING_LIST_ITEMS + 1)))
        self.assertIsNone(corpus.binding_text(corpus.UNKNOWN))


class ClassifyTest(unittest.TestCase):
    CASES = [
        ("a.py:1:2: 'T.alloc_barrier' is not supported (unknown TileLang name)", False, "hopper"),
        ("a.py:1:2: 'T.tcgen05_gemm' is not supported (unknown TileLang name)", False, "hopper"),
        ("a.py:3:4: 'tilelang.carver.arch.driver.get_num_sms' is not supported in kernel code",
         False, "device_query"),
        ("a.py:3:4: 'torch.cuda' is not supported in kernel code", False, "device_query"),
        ("a.py:3:4: 'tilelang.math.next_power_of_2' is not supported in kernel code", False,
         "host_helpers"),
        ("a.py:5:6: 'T.Layout' is not supported (unknown TileLang name)", False, "layout"),
        ("a.py:5:6: 'T.clamp' is not supported (unknown TileLang name)", False, "small_ops"),
        ("a.py:5:6: 'T.parallel' is not supported (unknown TileLang name)", False, "small_ops"),
        ("a.py:7:8: 'while' loops are not supported", False, "python_subset"),
        ("a.py:7:8: a 'while' loop on a value only known at run time is not supported by "
         "Kiln yet", False, "python_subset"),
        # The frontend's newer wording of a missing name.
        ("a.py:5:6: 'T.clamp' is not supported by Kiln yet (use T.max(T.min(...)))", False,
         "small_ops"),
        ("a.py:3:4: 'torch.rand' is not supported in kernel code", False, "host_helpers"),
        ("a.py:3:4: 'torch.cuda.get_device_properties' is not supported in kernel code", False,
         "device_query"),
        ("a.py:7:8: 'str' has no attribute 'join'", False, "python_subset"),
        ("a.py:7:8: 'math.gcd' is not supported in kernel code", False, "python_subset"),
        ("a.py:9:1: calling 'tilelang.cuda.intrinsics.macro.X.TensorCoreIntrinEmitter' is not "
         "supported", False, "internals"),
        ("a.py:35:43: 'dtype' object is not iterable", False, "python_subset"),
        ("a.py:8:9: unknown PassConfigKey 'TL_LAYOUT_VISUALIZATION_ENABLE'", False, "internals"),
        ("a.py:9:1: dtype 'T.tfloat32' is not supported by Kiln yet", False, "dtypes"),
        ("a.py:9:1: calling 'tilelang.DataType' is not supported", False, "tvm_multifile"),
        ("a.py:9:1: 'T.float4_e2m1fn' is not supported (unknown TileLang name)", False, "dtypes"),
        ("a.py:9:1: 'tvm.tirx.const' is not supported in kernel code", False, "tvm_multifile"),
        ("a.py:9:1: 'T.attr' is not supported (unknown TileLang name)", False, "tvm_multifile"),
        ("a.py:9:1: only one T.Kernel per program is supported", False, "tvm_multifile"),
        # Kiln's own restrictions are lowering gaps even when the frontend reports them;
        # the hint's "T.fill" must not make it a small op.
        ("a.py:2:2: fragment 'm' can only be indexed inside a T.Parallel loop (use T.copy, "
         "T.fill or a reduction outside)", False, "lowering"),
        ("a.py:2:2: fragments and local buffers need at least 325 registers per thread", True,
         "lowering"),
        ("a.py:2:2: something new the lowering refuses", True, "lowering"),
        ("a.py:2:2: something new the frontend refuses", False, "other"),
        ("a.py:2:2: unsupported operand types for *: 'None' and 'int'", False, "unbound"),
        ("no binding discovered for block_M (the file never calls it)", False, "unbound"),
        ("kernel defined inside f(): Kiln compiles only module-level functions", False, "nested"),
        ("timed out after 60 s: kiln-opt x.py", False, "timeout"),
        ("kiln-opt died with status -11: kiln-opt x.py: (no message)", False, "timeout"),
        # A path that contains a bucket's words does not decide the bucket.
        ("gemm_tcgen05/while_mbarrier.py:1:1: something new the frontend refuses", False,
         "other"),
    ]

    def test_buckets(self):
        for message, frontend_ok, bucket in self.CASES:
            with self.subTest(message=message):
                self.assertEqual(corpus.classify(message, frontend_ok), bucket)

    def test_every_bucket_has_a_title(self):
        keys = [k for k, _, _ in corpus.BUCKETS]
        self.assertEqual(len(keys), len(set(keys)))
        for _, title, patterns in corpus.BUCKETS:
            self.assertTrue(title)
            self.assertIsInstance(patterns, list)


FAKE_KILN_OPT = """#!{python}
# Stands in for kiln-opt: the entry name says what to do.
import os, signal, sys, time
args = sys.argv[1:]
entry = args[args.index("--entry") + 1]
emit = [a for a in args if a.startswith("--emit=")][0]
binds = [args[i + 1] for i, a in enumerate(args) if a == "--bind"]
loc = args[0] + ":3:5: "
if entry == "good":
    if "block=32" not in binds:
        sys.stderr.write(loc + "parameter 'block' has no binding and no default\\n")
        sys.exit(1)
    print("// cuda")
elif entry == "lower_bad":
    if emit == "--emit=cuda":
        sys.stderr.write(loc + "reduce: source and destination must be fragments\\n")
        sys.exit(1)
elif entry == "fe_bad":
    sys.stderr.write("note\\n" + loc + "'T.clamp' is not supported (unknown TileLang name)\\n")
    sys.exit(1)
elif entry == "hang":
    time.sleep(30)
elif entry == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
elif entry == "nest.kernel":
    if binds != ["n=1024", "block=64"]:
        sys.stderr.write(loc + "parameter 'block' has no binding (its default is None)\\n")
        sys.exit(1)
    print("// cuda")
elif entry in ("varlen", "varlen_bad"):
    dyn = [args[i + 1] for i, a in enumerate(args) if a == "--dynamic"]
    if entry == "varlen_bad":
        sys.stderr.write(loc + "shared.dyn buffer 'S' needs a constant shape\\n")
        sys.exit(1)
    if dyn != ["n"] or "block=32" not in binds:
        sys.stderr.write(loc + "parameter 'n' has no binding and no default\\n")
        sys.exit(1)
    print("// cuda")
"""

EXAMPLE_FOR_RUNNER = """
import tilelang
import tilelang.language as T

def {name}(n, block):
    @T.prim_func
    def main(A: T.Tensor((n,), "float16")):
        pass
    return main

{name}(1024, 32)
"""


class RunnerTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        self.examples = os.path.join(root, "examples")
        for sub, name in (("a", "good"), ("a", "lower_bad"), ("b", "fe_bad"), ("b", "hang"),
                          ("c", "crash")):
            os.makedirs(os.path.join(self.examples, sub), exist_ok=True)
            with open(os.path.join(self.examples, sub, f"{name}.py"), "w") as f:
                f.write(EXAMPLE_FOR_RUNNER.format(name=name))
        with open(os.path.join(self.examples, "a", "not_a_kernel.py"), "w") as f:
            f.write("print('hello')\n")
        with open(os.path.join(self.examples, "a", "broken.py"), "w") as f:
            f.write("def f(:\n")
        self.kiln_opt = os.path.join(root, "kiln-opt")
        with open(self.kiln_opt, "w") as f:
            f.write(FAKE_KILN_OPT.format(python=sys.executable))
        os.chmod(self.kiln_opt, os.stat(self.kiln_opt).st_mode | stat.S_IXUSR)
        self.json = os.path.join(root, "out", "r.json")
        self.md = os.path.join(root, "out", "r.md")

    def tearDown(self):
        self.tmp.cleanup()

    def run_main(self, *extra):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = corpus.main(["--examples", self.examples, "--kiln-opt", self.kiln_opt,
                              "--json", self.json, "--markdown", self.md, "--timeout", "2",
                              *extra])
        return rc, out.getvalue(), err.getvalue()

    def test_statuses_buckets_reports_and_gate(self):
        rc, out, _ = self.run_main("--min-emitted", "1")
        self.assertEqual(rc, 0, out)
        with open(self.json) as f:
            doc = json.load(f)
        by_entry = {k["entry"]: k for k in doc["kernels"]}
        self.assertEqual(set(by_entry), {"good", "lower_bad", "fe_bad", "hang", "crash"})
        self.assertEqual(by_entry["good"]["status"], "emitted")
        self.assertEqual(by_entry["good"]["bindings"], {"n": "1024", "block": "32"})
        self.assertEqual(by_entry["good"]["command"],
                         "kiln-opt a/good.py --entry good --bind n=1024 --bind block=32 "
                         "--emit=cuda --target cuda:sm_90")
        self.assertEqual(by_entry["lower_bad"]["status"], "lowering_failed")
        self.assertTrue(by_entry["lower_bad"]["frontend"])
        self.assertEqual(by_entry["lower_bad"]["bucket"], "lowering")
        self.assertEqual(by_entry["fe_bad"]["status"], "frontend_rejected")
        self.assertEqual(by_entry["fe_bad"]["bucket"], "small_ops")
        # The located line, not the first line, and the path relative to the examples.
        self.assertEqual(by_entry["fe_bad"]["message"],
                         "b/fe_bad.py:3:5: 'T.clamp' is not supported (unknown TileLang name)")
        self.assertEqual(by_entry["hang"]["status"], "timeout")
        self.assertTrue(by_entry["hang"]["message"].startswith("timed out after 2 s"))
        self.assertEqual(by_entry["crash"]["status"], "timeout")
        self.assertIn("died with status -11", by_entry["crash"]["message"])
        self.assertEqual(doc["totals"], {"kernels": 5, "files": 5, "frontend_accepted": 2,
                                         "cuda_emitted": 1, "files_fully_accepted": 1,
                                         "cuda_emitted_dynamic": 0})
        with open(self.md) as f:
            md = f.read()
        self.assertIn("| all | 5 | 5 | 2 | 1 | 1 |", md)
        self.assertIn("### Small ops", md)
        self.assertIn("### Timeouts and crashes of kiln-opt (2)", md)
        self.assertIn("could not parse (their kernels are not counted): `a/broken.py`", md)
        self.assertEqual([u["file"] for u in doc["unparsed_files"]], ["a/broken.py"])
        # The gate: one kernel emits, two are demanded.
        rc, _, err = self.run_main("--min-emitted", "2", "--only", "^a/")
        self.assertEqual(rc, 1)
        self.assertIn("fewer than --min-emitted 2", err)

    def test_run_time_values_compile_as_dynamic_parameters(self):
        # The file passes n a value of run time (a tensor's shape): kiln-opt gets
        # --dynamic n; a kernel that still fails stays "unbound" and says why.
        os.makedirs(os.path.join(self.examples, "d"))
        for name in ("varlen", "varlen_bad"):
            with open(os.path.join(self.examples, "d", f"{name}.py"), "w") as f:
                f.write(EXAMPLE_FOR_RUNNER.format(name=name).replace(
                    f"{name}(1024, 32)", f"x = torch.load(path)\n{name}(x.shape[0], 32)"))
        rc, out, _ = self.run_main("--only", "^d/")
        self.assertEqual(rc, 0, out)
        with open(self.json) as f:
            doc = json.load(f)
        by_entry = {k["entry"]: k for k in doc["kernels"]}
        good, bad = by_entry["varlen"], by_entry["varlen_bad"]
        self.assertEqual(good["status"], "emitted")
        self.assertEqual(good["dynamic"], ["n"])
        self.assertEqual(good["command"], "kiln-opt d/varlen.py --entry varlen --bind block=32 "
                         "--dynamic n --emit=cuda --target cuda:sm_90")
        self.assertEqual(bad["status"], "unbound")
        self.assertEqual(bad["bucket"], "unbound")
        self.assertIn("no binding discovered for n (the file's calls of it give no literal "
                      "value); compiled with n dynamic: d/varlen_bad.py:3:5: shared.dyn", bad["message"])
        self.assertEqual(doc["totals"]["cuda_emitted_dynamic"], 1)
        with open(self.md) as f:
            md = f.read()
        self.assertIn("| d/varlen.py | varlen | block=32 n=dynamic |", md)
        self.assertIn("Of the kernels that emit CUDA, 1 take parameters", md)

    def test_nested_kernel_compiles_with_a_dotted_entry(self):
        os.makedirs(os.path.join(self.examples, "n"))
        with open(os.path.join(self.examples, "n", "nest.py"), "w") as f:
            f.write(textwrap.dedent("""
                import tilelang.language as T
                from tilelang.autotuner import AutoTuner

                def nest(n):
                    def kernel(block=None):
                        @T.prim_func
                        def main(A: T.Tensor((n,), "float16")):
                            pass
                        return main
                    return AutoTuner.from_kernel(kernel=kernel, configs=[{"block": 64}])

                nest(1024)
                """))
        rc, out, _ = self.run_main("--only", "^n/")
        self.assertEqual(rc, 0, out)
        with open(self.json) as f:
            doc = json.load(f)
        (k,) = doc["kernels"]
        self.assertEqual(k["entry"], "nest.kernel")
        self.assertEqual(k["status"], "emitted")
        self.assertEqual(k["command"], "kiln-opt n/nest.py --entry nest.kernel --bind n=1024 "
                         "--bind block=64 --emit=cuda --target cuda:sm_90")

    def test_markdown_spliced_between_marks(self):
        os.makedirs(os.path.dirname(self.md), exist_ok=True)
        with open(self.md, "w") as f:
            f.write(f"# Page\n\nintro\n\n{corpus.BEGIN_MARK}\nstale\n{corpus.END_MARK}\n\nend\n")
        rc, _, _ = self.run_main("--only", r"^a/good\.py$")
        self.assertEqual(rc, 0)
        with open(self.md) as f:
            md = f.read()
        self.assertTrue(md.startswith("# Page\n\nintro\n\n" + corpus.BEGIN_MARK))
        self.assertTrue(md.endswith(corpus.END_MARK + "\n\nend\n"))
        self.assertNotIn("stale", md)
        self.assertIn("| all | 1 | 1 | 1 | 1 | 1 |", md)

    def test_only_filters_files(self):
        rc, _, _ = self.run_main("--only", r"^a/good\.py$")
        self.assertEqual(rc, 0)
        with open(self.json) as f:
            self.assertEqual([k["entry"] for k in json.load(f)["kernels"]], ["good"])

    def test_missing_examples_folder(self):
        self.examples = os.path.join(self.tmp.name, "absent")
        rc, _, err = self.run_main("--skip-if-missing")
        self.assertEqual(rc, 77)
        self.assertIn("not found", err)
        rc, _, _ = self.run_main()
        self.assertEqual(rc, 2)

    def test_usage_errors(self):
        rc, _, err = self.run_main("--jobs", "3")
        self.assertEqual(rc, 2)
        self.assertIn("--jobs", err)
        self.kiln_opt = os.path.join(self.tmp.name, "no-such-kiln-opt")
        rc, _, err = self.run_main()
        self.assertEqual(rc, 2)
        self.assertIn("not an executable", err)


if __name__ == "__main__":
    unittest.main()
