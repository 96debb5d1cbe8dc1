# EXPECT: 13:32: T.reduce_max: dim 2 is out of range for the 2-d source 'c'
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        c = T.alloc_fragment((block, block), T.float32)
        m = T.alloc_fragment((block,), T.float32)
        T.reduce_max(c, m, dim=2)
