# EXPECT: 7:5: store to buffer 'A' is only allowed inside a T.Kernel block
import tilelang
import tilelang.language as T

@T.prim_func
def main(A: T.Tensor((64,), T.float32)):
    A[0] = 1
    with T.Kernel(1, threads=32):
        A[1] = 0
