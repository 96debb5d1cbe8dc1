# EXPECT: 22:17: expression too large
import tilelang
import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(128):
            x = A[i]
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            x = x + x
            A[i] = x
