# EXPECT: 10:8: if condition is not known at compile time (only allowed inside T.Kerne
# BIND: block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    if N > 128:
        block = 128
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        A[bx, 0] = 0
