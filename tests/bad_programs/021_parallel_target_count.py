# EXPECT: 11:13: T.Parallel has 1 extent but the loop binds 2 variables
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i, j in T.Parallel(block):
            A[i, j] = 0
