# EXPECT: 11:48: memory_order other than "relaxed" is not supported
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        T.atomic_add(A[bx, 0], 1, memory_order="acquire")
