# EXPECT: 11:43: T.use_swizzle order must be "row" or "column"
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        T.use_swizzle(panel_size=8, order="mlx")
        A[bx, 0] = 0
