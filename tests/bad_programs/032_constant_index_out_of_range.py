# EXPECT: 12:14: index 4 is out of range for dimension 1 of 's' (extent 4)
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_fragment((block, 4), T.float32)
        s[0, 4] = 1
