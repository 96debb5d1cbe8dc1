# EXPECT: 13:13: buffer 's' has 2 dimensions but 1 index was given
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_fragment((block, block), T.float32)
        for i in T.Parallel(block):
            s[i] = 0
