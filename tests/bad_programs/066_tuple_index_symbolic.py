# EXPECT: 12:15: sequence index must be a compile-time integer, got symbolic int32 expr
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        sizes = (16, 32)
        A[bx, sizes[bx]] = 0
