# EXPECT: 7:13: parameter 'block' has no binding and no default
# BIND: N=256
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_shared((block, block), T.float16)
