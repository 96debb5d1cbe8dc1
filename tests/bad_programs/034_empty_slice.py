# EXPECT: 12:16: empty slice (extent 0) in dimension 0 of 'A'
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_shared((block, block), T.float16)
        T.copy(A[8:8, 0:block], s)
