# EXPECT: 14:36: T.mbarrier_wait_parity: 'flag' is not a barrier (allocate it with T.alloc_barrier)
# BIND: N=1024
import tilelang
import tilelang.language as T


@tilelang.jit
def kernel(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    with T.Kernel(1, threads=128) as bx:
        flag = T.alloc_shared((1,), T.int32)
        with T.ws(0):
            T.mbarrier_wait_parity(flag, 0)
            T.fill(A[0:128], 1.0)
