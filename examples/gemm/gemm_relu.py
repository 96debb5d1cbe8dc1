# C = relu(A @ B + bias): a GEMM with its bias and activation fused into the epilogue.
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=128 block_K=32
# kiln: test-bind M=70 N=100 K=48 block_M=32 block_N=64 block_K=16
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm_relu(A, B, bias, block_M, block_N, block_K, num_stages=3, threads=256, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    bias: T.Tensor((N,), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_tile = T.alloc_shared((block_M, block_K), dtype)
        B_tile = T.alloc_shared((block_K, block_N), dtype)
        bias_tile = T.alloc_shared((block_N,), dtype)
        C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)

        T.clear(C_acc)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            T.copy(A[by * block_M, ko * block_K], A_tile)
            T.copy(B[ko * block_K, bx * block_N], B_tile)
            T.gemm(A_tile, B_tile, C_acc, policy=T.GemmWarpPolicy.FullRow)

        T.copy(bias[bx * block_N], bias_tile)
        for i, j in T.Parallel(block_M, block_N):
            C_acc[i, j] = T.max(C_acc[i, j] + bias_tile[j], 0)
        T.copy(C_acc, C[by * block_M, bx * block_N])

    return C


def ref_program(A, B, bias):
    acc = A.astype(np.float32) @ B.astype(np.float32) + bias.astype(np.float32)
    return np.maximum(acc, 0).astype(np.float16)
