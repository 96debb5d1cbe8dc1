# C = (A * sa) @ (B * sb)^T with fp8 inputs and per-block scales, the DeepSeek-V3 recipe:
# A (M, K) e4m3 with one float32 scale per row and 128 columns (sa: M x K/128), B (N, K) e4m3
# with one per 128 x 128 block (sb: N/128 x K/128). Each 128-deep k-tile's product is
# accumulated apart, scaled, then added into the float32 total ("promotion"), which keeps
# the tensor core's fp8 accumulation short. On Hopper the gemm is wgmma m64nNk32.
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=128
# kiln: test-bind M=150 N=136 K=384 block_M=64 block_N=128
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm_fp8_blockscale(A, B, SA, SB, block_M, block_N, num_stages=3, threads=128,
                        out_dtype=T.bfloat16):
    M, N, K = T.const("M, N, K")
    group = 128  # the scales' granularity along K (and N for B); block_K is one group
    block_K = 128

    A: T.Tensor((M, K), T.float8_e4m3)
    B: T.Tensor((N, K), T.float8_e4m3)
    SA: T.Tensor((M, T.ceildiv(K, group)), T.float32)
    SB: T.Tensor((T.ceildiv(N, group), T.ceildiv(K, group)), T.float32)
    C = T.empty((M, N), out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_tile = T.alloc_shared((block_M, block_K), T.float8_e4m3)
        B_tile = T.alloc_shared((block_N, block_K), T.float8_e4m3)
        C_part = T.alloc_fragment((block_M, block_N), T.float32)
        C_total = T.alloc_fragment((block_M, block_N), T.float32)

        T.clear(C_total)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            T.copy(A[by * block_M, ko * block_K], A_tile)
            T.copy(B[bx * block_N, ko * block_K], B_tile)
            T.gemm(A_tile, B_tile, C_part, transpose_B=True, clear_accum=True)
            # block_N divides the group: one B scale for the whole tile.
            sb = SB[bx * block_N // group, ko]
            for i, j in T.Parallel(block_M, block_N):
                row = T.min(by * block_M + i, M - 1)  # rows past M are never stored
                C_total[i, j] += C_part[i, j] * (SA[row, ko] * sb)
        T.copy(C_total, C[by * block_M, bx * block_N])

    return C


def ref_program(A, B, SA, SB):
    M, K = A.shape
    N = B.shape[0]
    g = 128
    sa = np.repeat(SA, g, axis=1)[:, :K]
    sb = np.repeat(np.repeat(SB, g, axis=0), g, axis=1)[:N, :K]
    a = A.astype(np.float64) * sa
    b = B.astype(np.float64) * sb
    return (a @ b.T).astype(np.float32)
