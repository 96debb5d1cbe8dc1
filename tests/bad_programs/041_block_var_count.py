# EXPECT: 10:41: T.Kernel has 2 grid dimensions but 3 block variables are bound
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(4, 4, threads=128) as (bx, by, bz):
        A[bx, by] = 0
