# EXPECT: 10:9: T.Kernel must be used as 'with T.Kernel(...) as ...:'
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    k = T.Kernel(4, threads=128)
