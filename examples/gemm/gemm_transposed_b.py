# C = A @ B^T with B stored row-major as (N, K), the layout of a linear layer's weight.
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=128 block_K=64
# kiln: test-bind M=90 N=56 K=72 block_M=64 block_N=32 block_K=32
import numpy as np
import tilelang
import tilelang.language as T


def gemm_transposed_b(
    M, N, K, block_M, block_N, block_K, num_stages=2, threads=128, dtype=T.float16, accum_dtype=T.float32
):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_tile = T.alloc_shared((block_M, block_K), dtype)
            B_tile = T.alloc_shared((block_N, block_K), dtype)
            C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_tile = T.alloc_shared((block_M, block_N), dtype)

            T.clear(C_acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M : (by + 1) * block_M, ko * block_K : (ko + 1) * block_K], A_tile)
                T.copy(B[bx * block_N : (bx + 1) * block_N, ko * block_K : (ko + 1) * block_K], B_tile)
                T.gemm(A_tile, B_tile, C_acc, transpose_B=True)
            # Staging through shared memory turns the fragment layout into coalesced row stores.
            T.copy(C_acc, C_tile)
            T.copy(C_tile, C[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N])

    return main


def ref_program(A, B):
    return (A.astype(np.float32) @ B.astype(np.float32).T).astype(np.float16)
