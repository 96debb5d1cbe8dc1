# EXPECT: 11:18: for loops inside T.Kernel must iterate over T.Parallel, T.Pipelined, T
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in [0, 1, 2]:
            A[bx, i] = 0
