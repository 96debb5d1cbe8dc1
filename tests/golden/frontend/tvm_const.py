# TVM's typed constants (tvm.tirx.const(value, dtype); int32 / float32 / bool
# without a dtype) and tilelang.DataType (TileLang re-exports TVM's), as
# TileLang's dequantize examples use them.
# RUN: kiln-opt %s --entry unpack --emit=ir | FileCheck %s
# RUN: not kiln-opt %s --entry bad --emit=ir 2>&1 | FileCheck %s --check-prefix=BAD
import tilelang
import tilelang.language as T
from tilelang import DataType
from tvm import tirx


def unpack(N=16):
    bits = DataType(T.float16).bits

    @T.prim_func
    def main(A: T.Tensor((N,), T.uint8), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                A[i] = (A[i] >> tirx.const(4, T.uint8)) & tirx.const(bits - 1, T.uint8)
                B[i] = tirx.const(0.5) + tirx.const(2)

    return main

# CHECK: A[i] = A[i] >> uint8(4) & uint8(15)
# CHECK-NEXT: B[i] = 0.5 + 2.0


def bad(N=16):
    @T.prim_func
    def main(A: T.Tensor((N,), T.uint8)):
        with T.Kernel(1, threads=32) as bx:
            A[0] = tirx.const(A[1], T.uint8)

    return main

# BAD: tvm_const.py:32:20: tvm.tirx.const expects a number, got
