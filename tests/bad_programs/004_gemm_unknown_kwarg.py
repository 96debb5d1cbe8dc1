# EXPECT: 13:25: T.gemm() got an unexpected keyword argument 'trans_A'
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_shared((block, block), T.float16)
        c = T.alloc_fragment((block, block), T.float32)
        T.gemm(s, s, c, trans_A=True)
