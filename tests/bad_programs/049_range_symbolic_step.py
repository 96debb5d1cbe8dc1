# EXPECT: 11:18: range step must be a non-zero compile-time integer
# BIND: block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in range(0, block, N):
            A[bx, i] = 0
