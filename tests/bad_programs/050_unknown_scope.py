# EXPECT: 11:13: unknown scope 'shared.weird'
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_buffer((block,), T.float16, scope="shared.weird")
