# C[b] = A[b] @ B[b] for a batch of independent GEMMs; the batch index is the third grid axis.
# kiln: bind batch=16 M=1024 N=1024 K=512 block_M=128 block_N=128 block_K=32
# kiln: test-bind batch=3 M=40 N=72 K=56 block_M=32 block_N=32 block_K=32
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def batched_gemm(A, B, block_M, block_N, block_K, num_stages=2, threads=128, dtype=T.float16, accum_dtype=T.float32):
    batch, M, N, K = T.const("batch, M, N, K")

    A: T.Tensor((batch, M, K), dtype)
    B: T.Tensor((batch, K, N), dtype)
    C = T.empty((batch, M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), batch, threads=threads) as (bx, by, bz):
        A_tile = T.alloc_shared((block_M, block_K), dtype)
        B_tile = T.alloc_shared((block_K, block_N), dtype)
        C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)

        T.clear(C_acc)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            # The unit batch extent of each 3-D slice is dropped to match the 2-D tiles.
            T.copy(A[bz, by * block_M : (by + 1) * block_M, ko * block_K : (ko + 1) * block_K], A_tile)
            T.copy(B[bz, ko * block_K : (ko + 1) * block_K, bx * block_N : (bx + 1) * block_N], B_tile)
            T.gemm(A_tile, B_tile, C_acc)
        T.copy(C_acc, C[bz, by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N])

    return C


def ref_program(A, B):
    return np.matmul(A.astype(np.float32), B.astype(np.float32)).astype(np.float16)
