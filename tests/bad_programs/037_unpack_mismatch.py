# EXPECT: 10:5: cannot unpack 3 values into 2 names
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    bm, bn = block, block, 16
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        A[bx, 0] = 0
