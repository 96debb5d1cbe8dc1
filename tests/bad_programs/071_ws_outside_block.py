# EXPECT: 12:19: T.ws(2): warpgroup 2 is outside the block (256 threads: warpgroups 0..1 of 128 threads)
# BIND: N=1024
import tilelang
import tilelang.language as T


@tilelang.jit
def kernel(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    with T.Kernel(1, threads=256) as bx:
        with T.ws(2):
            T.fill(A[0:128], 1.0)
