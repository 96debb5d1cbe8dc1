# EXPECT: 15:13: tma_copy: the destination 'acc' must be a shared buffer, not fragment
# BIND: N=1024
import tilelang
import tilelang.language as T


@tilelang.jit
def kernel(A):
    N = T.const("N")
    A: T.Tensor((N, 64), T.float32)
    with T.Kernel(1, threads=128) as bx:
        acc = T.alloc_fragment((64, 64), T.float32)
        bar = T.alloc_barrier(128)
        with T.ws(0):
            T.tma_copy(A[0, 0], acc, barrier=bar)
