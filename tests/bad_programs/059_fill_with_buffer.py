# EXPECT: 13:19: T.fill value must be a number or expression, got buffer
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        a = T.alloc_fragment((block,), T.float32)
        b = T.alloc_fragment((block,), T.float32)
        T.fill(a, b)
