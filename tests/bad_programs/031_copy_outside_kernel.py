# EXPECT: 8:5: T.copy is only allowed inside a T.Kernel block
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@T.prim_func
def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
    T.copy(A, B)
    with T.Kernel(1, threads=32):
        B[0] = A[0]
