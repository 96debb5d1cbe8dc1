# EXPECT: 7:1: 'kern' defines no T.Kernel
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    x = block * 2
    return A
