# C = A @ B with the block's N split between its two warpgroups: all 256
# threads load the A tile, then each warpgroup loads its own half of the B
# tile and multiplies it into its own accumulator (plain T.copy, no mbarriers:
# the compiler places the block and warpgroup barriers).
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=256 block_K=64
# kiln: test-bind M=136 N=200 K=136 block_M=128 block_N=256 block_K=64
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm_ws_split_n(A, B, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)
    half = block_N // 2

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
        A_tile = T.alloc_shared((block_M, block_K), dtype)
        B_left = T.alloc_shared((block_K, half), dtype)
        B_right = T.alloc_shared((block_K, half), dtype)
        C_left = T.alloc_fragment((block_M, half), accum_dtype)
        C_right = T.alloc_fragment((block_M, half), accum_dtype)

        with T.ws(0):
            T.clear(C_left)
        with T.ws(1):
            T.clear(C_right)

        for ko in T.serial(T.ceildiv(K, block_K)):
            T.copy(A[by * block_M, ko * block_K], A_tile)
            with T.ws(0):
                T.copy(B[ko * block_K, bx * block_N], B_left)
                T.gemm(A_tile, B_left, C_left)
            with T.ws(1):
                T.copy(B[ko * block_K, bx * block_N + half], B_right)
                T.gemm(A_tile, B_right, C_right)

        with T.ws(0):
            T.copy(C_left, C[by * block_M, bx * block_N])
        with T.ws(1):
            T.copy(C_right, C[by * block_M, bx * block_N + half])

    return C


def ref_program(A, B):
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(A.dtype)
