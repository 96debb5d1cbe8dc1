# EXPECT: 6:41: parameter 'B' of a @T.prim_func needs a type annotation such as T.Tens
import tilelang
import tilelang.language as T

@T.prim_func
def main(A: T.Tensor((64,), T.float32), B):
    with T.Kernel(1, threads=32):
        A[0] = 0
