# EXPECT: 13:9: T.copy shape mismatch: source 's' region [64, 32] vs destination 't' r
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_shared((block, 32), T.float16)
        t = T.alloc_shared((32, block), T.float16)
        T.copy(s, t)
