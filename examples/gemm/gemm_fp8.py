# C = A @ B^T for fp8 inputs (e4m3 by default, or e5m2), f32 accumulation, C in out_dtype.
# Both operands K-major: A is (M, K), B is (N, K) as a linear layer's weight, the layout
# Hopper's fp8 wgmma reads (m64nNk32); other targets take the scalar path.
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=128 block_K=128
# kiln: test-bind M=150 N=136 K=200 block_M=128 block_N=128 block_K=64
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm_fp8(A, B, block_M, block_N, block_K, num_stages=3, threads=128, dtype=T.float8_e4m3,
             out_dtype=T.float16):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((N, K), dtype)
    C = T.empty((M, N), out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_tile = T.alloc_shared((block_M, block_K), dtype)
        B_tile = T.alloc_shared((block_N, block_K), dtype)
        C_acc = T.alloc_fragment((block_M, block_N), T.float32)

        T.clear(C_acc)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            # Past the edges the copies deliver zeros, which add nothing.
            T.copy(A[by * block_M, ko * block_K], A_tile)
            T.copy(B[bx * block_N, ko * block_K], B_tile)
            T.gemm(A_tile, B_tile, C_acc, transpose_B=True)
        T.copy(C_acc, C[by * block_M, bx * block_N])

    return C


def ref_program(A, B):
    # The checker hands fp8 inputs over decoded to float32; products of fp8 values are exact
    # in float32, so only the order of the sum and the final rounding differ.
    return (A.astype(np.float32) @ B.astype(np.float32).T).astype(np.float16)
