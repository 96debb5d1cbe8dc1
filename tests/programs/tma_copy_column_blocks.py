# T.tma_copy into whole column blocks of a shared tile, as TileLang's FlashMLA
# loads KV_shared[:, j * 64:(j + 1) * 64] one 64-column block at a time, each
# on its own mbarrier: on Hopper each copy is one TMA box written at its
# block's place in the tile's wgmma layout (64-column blocks of rows x 64
# elements), and the gemm reads the tile through wgmma descriptors. The first
# column depends on the unrolled loop's variable. C = A B^T against NumPy.
# kiln: test-bind M=64 N=64 K=128
import numpy as np
import tilelang
import tilelang.language as T


def tma_copy_column_blocks(M, N, K, dtype=T.float16):
    blocks = K // 64

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared((N, K), dtype)
            acc = T.alloc_fragment((M, N), T.float32)
            ready = T.alloc_barrier(arrive_count=[128] * blocks)
            for j in T.unroll(blocks):
                T.tma_copy(A[0:M, j * 64 : (j + 1) * 64], A_s[:, j * 64 : (j + 1) * 64], barrier=ready[j])
                T.barrier_arrive(ready[j])
            T.copy(B, B_s)
            T.clear(acc)
            for j in T.unroll(blocks):
                T.barrier_wait(ready[j], 0)
            T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C)

    return main


def ref_program(A, B):
    return A.astype(np.float32) @ B.astype(np.float32).T
