# EXPECT: 13:19: name 'undefined_thing' is not defined
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        s = T.alloc_shared((block, block), T.float16)
        T.copy(A[bx * block, 0], s)
        s[0, 0] = undefined_thing + 1
