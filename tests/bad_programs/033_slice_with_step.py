# EXPECT: 12:16: slices with a step are not supported in buffer regions
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_shared((32, block), T.float16)
        T.copy(A[0:block:2, 0:block], s)
