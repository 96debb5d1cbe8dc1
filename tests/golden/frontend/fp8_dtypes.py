# TileLang's fp8 helpers as its fp8 examples import them: determine_fp8_type()
# gives CUDA's fp8 dtype of a format (e4m3 by default, e5m2), and the warp
# policy from its home module is T.GemmWarpPolicy.
# RUN: kiln-opt %s --entry cast --emit=ir | FileCheck %s
# RUN: not kiln-opt %s --entry bad --emit=ir 2>&1 | FileCheck %s --check-prefix=BAD
import tilelang
import tilelang.language as T
from tilelang.language.fp8 import determine_fp8_type
from tilelang.tileop.base import GemmWarpPolicy


def cast(N=64):
    e4m3 = determine_fp8_type()
    e5m2 = determine_fp8_type("e5m2")
    policy = GemmWarpPolicy.FullRow  # resolves (an unknown name would be an error)

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), e4m3), C: T.Tensor((N,), e5m2)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(N):
                B[i] = A[i]
                C[i] = A[i]

    return main

# CHECK: param B: global float8_e4m3[64]
# CHECK-NEXT: param C: global float8_e5m2[64]


def bad(N=64):
    fmt = determine_fp8_type(fp8_format="e3m4")

    @T.prim_func
    def main(A: T.Tensor((N,), fmt)):
        with T.Kernel(1, threads=64) as bx:
            A[0] = 0

    return main

# BAD: fp8_dtypes.py:31:41: determine_fp8_type: fp8_format must be 'e4m3' or 'e5m2', got 'e3m4'
