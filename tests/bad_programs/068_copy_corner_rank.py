# EXPECT: 12:16: T.copy: the 2-d start corner of 'A' cannot take the extents [2, 64, 64
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_shared((2, block, block), T.float16)
        T.copy(A[bx * block, 0], s)
