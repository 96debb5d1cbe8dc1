# C = A @ B: the baseline tiled GEMM (float16 in and out, float32 accumulation).
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=256 block_K=64 num_stages=4 threads=256
# kiln: test-bind M=100 N=72 K=40 block_M=64 block_N=32 block_K=16
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm(A, B, block_M, block_N, block_K, num_stages=3, threads=128, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_tile = T.alloc_shared((block_M, block_K), dtype)
        B_tile = T.alloc_shared((block_K, block_N), dtype)
        C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)

        # Neighbouring blocks then reuse the same A rows and B columns while they sit in L2.
        T.use_swizzle(panel_size=8)
        T.clear(C_acc)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            # Past the ragged edge of M, N or K the copies deliver zeros, which add nothing.
            T.copy(A[by * block_M, ko * block_K], A_tile)
            T.copy(B[ko * block_K, bx * block_N], B_tile)
            T.gemm(A_tile, B_tile, C_acc)
        T.copy(C_acc, C[by * block_M, bx * block_N])

    return C


def ref_program(A, B):
    # C has the inputs' dtype (float16 by default; float64 runs the scalar FMA path).
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(A.dtype)
