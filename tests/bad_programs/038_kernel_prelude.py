# EXPECT: 10:35: T.Kernel prelude is not supported
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(4, threads=128, prelude="#include <x>") as bx:
        A[bx, 0] = 0
