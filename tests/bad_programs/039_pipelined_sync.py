# EXPECT: 11:52: T.Pipelined argument 'sync' is not supported
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for k in T.Pipelined(4, num_stages=2, sync=[[0, 1]]):
            A[bx, k] = 0
