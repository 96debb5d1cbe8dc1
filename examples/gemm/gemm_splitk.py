# C += A @ B with K split across split_k blocks whose partial tiles meet in C through atomic adds.
# Split-k keeps every SM busy when M x N has few tiles but K is long. C is read-modify-write:
# the caller zero-fills it before the launch (ref_program describes exactly that case).
# kiln: bind M=512 N=512 K=16384 block_M=128 block_N=128 block_K=32 split_k=8
# kiln: test-bind M=72 N=40 K=200 block_M=32 block_N=32 block_K=16 split_k=3
import numpy as np
import tilelang
import tilelang.language as T


def gemm_splitk(
    M, N, K, block_M, block_N, block_K, split_k, num_stages=2, threads=128, dtype=T.float16, accum_dtype=T.float32
):
    # Whole K tiles per split; the last split may run past K and then reads only zeros.
    tiles_per_split = T.ceildiv(T.ceildiv(K, block_K), split_k)

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=threads) as (bx, by, bz):
            A_tile = T.alloc_shared((block_M, block_K), dtype)
            B_tile = T.alloc_shared((block_K, block_N), dtype)
            C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_acc)
            for ko in T.Pipelined(tiles_per_split, num_stages=num_stages):
                k0 = (bz * tiles_per_split + ko) * block_K
                T.copy(A[by * block_M, k0], A_tile)
                T.copy(B[k0, bx * block_N], B_tile)
                T.gemm(A_tile, B_tile, C_acc)

            for i, j in T.Parallel(block_M, block_N):
                row = by * block_M + i
                col = bx * block_N + j
                if row < M and col < N:
                    T.atomic_add(C[row, col], C_acc[i, j])

    return main


def ref_program(A, B):
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
