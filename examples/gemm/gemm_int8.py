# C = A @ B for int8 inputs with int32 accumulation and output (tensor cores: mma m16n8k32);
# with transpose_B=True, B is stored (N, K), as a linear layer's weight.
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=128 block_K=64
# kiln: test-bind M=100 N=72 K=80 block_M=64 block_N=32 block_K=32
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm_int8(A, B, block_M, block_N, block_K, num_stages=3, threads=128, transpose_B=False):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), T.int8)
    if transpose_B:
        B: T.Tensor((N, K), T.int8)
    else:
        B: T.Tensor((K, N), T.int8)
    C = T.empty((M, N), T.int32)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_tile = T.alloc_shared((block_M, block_K), T.int8)
        if transpose_B:
            B_tile = T.alloc_shared((block_N, block_K), T.int8)
        else:
            B_tile = T.alloc_shared((block_K, block_N), T.int8)
        C_acc = T.alloc_fragment((block_M, block_N), T.int32)

        T.clear(C_acc)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            # Past the edges the copies deliver zeros, which add nothing.
            T.copy(A[by * block_M, ko * block_K], A_tile)
            if transpose_B:
                T.copy(B[bx * block_N, ko * block_K], B_tile)
            else:
                T.copy(B[ko * block_K, bx * block_N], B_tile)
            T.gemm(A_tile, B_tile, C_acc, transpose_B=transpose_B)
        T.copy(C_acc, C[by * block_M, bx * block_N])

    return C


def ref_program(A, B):
    # B given as (N, K) is the transposed form (with transpose_B=True keep N != K).
    if B.shape[0] != A.shape[1]:
        B = B.T
    return A.astype(np.int32) @ B.astype(np.int32)
