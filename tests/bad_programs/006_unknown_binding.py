# EXPECT: 7:1: unknown binding 'blok' for 'kern'; valid names: N, block
# BIND: N=256 block=64 blok=32
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_shared((block, block), T.float16)
        T.copy(A[bx * block, 0], s)
