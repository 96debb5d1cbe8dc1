# EXPECT: 10:5: assertion failed: block must be a multiple of 32
# BIND: N=256 block=48
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    assert block % 32 == 0, "block must be a multiple of 32"
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        A[bx, 0] = 0
