# EXPECT: 11:9: 'try' statements are not supported
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        try:
            A[bx, 0] = 0
        except Exception:
            pass
