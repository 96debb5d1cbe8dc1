# EXPECT: 12:9: 'T.cumulative_magic' is not supported (unknown TileLang name)
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_shared((block, block), T.float16)
        T.cumulative_magic(s)
