# EXPECT: 12:29: T.device_assert expects a condition, got buffer
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in T.Parallel(block):
            T.device_assert(A, "an assert on a run-time value is a check in the kernel")
