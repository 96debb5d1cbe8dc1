# EXPECT: 12:25: <lambda>() takes 1 positional arguments but 2 were given
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        f = lambda x: x + 1
        A[bx, 0] = f(1, 2)
