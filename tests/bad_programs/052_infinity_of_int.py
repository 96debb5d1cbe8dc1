# EXPECT: 12:19: T.infinity needs a float dtype, got int32
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        c = T.alloc_fragment((block,), T.int32)
        T.fill(c, T.infinity(T.int32))
