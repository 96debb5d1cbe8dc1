# EXPECT: 12:15: a 'while' loop on a value only known at run time is not supported by Kiln yet
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        i = 0
        while i < bx:
            i += 1
