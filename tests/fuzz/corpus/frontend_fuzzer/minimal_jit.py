import tilelang
import tilelang.language as T


@tilelang.jit
def scale(A, block_M, dtype=T.float32):
    M = T.const("M")
    A: T.Tensor((M,), dtype)
    B = T.empty((M,), dtype)
    with T.Kernel(T.ceildiv(M, block_M), threads=block_M) as bx:
        for i in T.Parallel(block_M):
            if bx * block_M + i < M:
                B[bx * block_M + i] = A[bx * block_M + i] * 2.0
    return B
