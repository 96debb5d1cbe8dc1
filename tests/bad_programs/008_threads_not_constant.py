# EXPECT: 7:30: threads must be compile-time integers, got symbolic int32 expression
import tilelang
import tilelang.language as T

@T.prim_func
def main(A: T.Tensor((128,), T.float32), n: T.int32):
    with T.Kernel(4, threads=n) as bx:
        A[bx] = 0
