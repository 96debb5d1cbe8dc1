# EXPECT: 11:9: a program has at most 16 kernels (T.Kernel blocks)
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    for k in range(17):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            A[bx, k] = 0
