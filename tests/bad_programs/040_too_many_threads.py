# EXPECT: 10:30: thread count must be in [1, 1024], got 2048
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(4, threads=2048) as bx:
        A[bx, 0] = 0
