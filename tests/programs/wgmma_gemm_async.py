# TileLang's explicit Hopper gemm: T.wgmma_gemm issues without waiting and
# T.wait_wgmma(n) waits until at most n are in flight. Kiln compiles it as
# T.gemm, which completes at once, so the wait has nothing left to do. The
# accumulator starts as 7s and clear_accum=(j == 0) is known only at run time
# (j is the K loop's variable): C = A @ B only if the first step clears it.
# kiln: test-bind M=128 N=64 K=96 block_K=32
import numpy as np
import tilelang
import tilelang.language as T


def wgmma_gemm_async(M, N, K, block_K, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, block_K), dtype)
            B_s = T.alloc_shared((N, block_K), dtype)
            acc = T.alloc_fragment((M, N), T.float32)
            T.fill(acc, 7)
            for j in T.serial(K // block_K):
                T.copy(A[0, j * block_K], A_s)
                T.copy(B[0, j * block_K], B_s)
                T.wgmma_gemm(A_s, B_s, acc, transpose_B=True, clear_accum=(j == 0))
                T.wait_wgmma(0)
            T.copy(acc, C)

    return main


def ref_program(A, B):
    return A.astype(np.float32) @ B.astype(np.float32).T
