# T.reinterpret(value, dtype) (also TVM's dtype-first order) and
# tvm.tirx.reinterpret(dtype, value): the bits as another dtype of the same
# width, as TileLang's topk selector and dequantize examples use them.
# RUN: kiln-opt %s --entry bits --emit=ir | FileCheck %s
# RUN: not kiln-opt %s --entry bits --bind to=T.uint16 --emit=ir 2>&1 | FileCheck %s --check-prefix=WIDTH
import tilelang
import tilelang.language as T
from tvm import tirx


def bits(N=8, to=T.uint32):
    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), U: T.Tensor((N,), T.uint32), H: T.Tensor((N,), T.uint8)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                U[i] = T.reinterpret(X[i], to)
                X[i] = T.reinterpret(T.float32, U[i] | T.uint32(1))
                H[i] = tirx.reinterpret(T.uint8, T.cast(X[i], T.int8))

    return main

# CHECK: U[i] = reinterpret<uint32>(X[i])
# CHECK-NEXT: X[i] = reinterpret<float32>(U[i] | uint32(1))
# CHECK-NEXT: H[i] = reinterpret<uint8>(cast<int8>(X[i]))
# WIDTH: reinterpret.py:16:24: T.reinterpret needs dtypes of the same width (not bool): float32 has 32 bits, uint16 16
