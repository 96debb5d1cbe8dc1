# EXPECT: 10:9: T.alloc_shared is only allowed inside a T.Kernel block
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    s = T.alloc_shared((block, block), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        A[bx, 0] = 0
