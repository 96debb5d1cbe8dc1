# EXPECT: 10:5: print() is not supported
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    print(block)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        A[bx, 0] = 0
