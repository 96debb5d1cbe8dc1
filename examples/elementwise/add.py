# C = A + B elementwise over a 2-D tensor; each thread touches global memory directly.
# kiln: bind M=8192 N=8192 block_M=32 block_N=256
# kiln: test-bind M=77 N=130 block_M=16 block_N=64
import numpy as np
import tilelang
import tilelang.language as T


def add(M, N, block_M, block_N, threads=256, dtype=T.float16):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                row = by * block_M + i
                col = bx * block_N + j
                # No T.copy here to clip the ragged edge, so the loop guards itself.
                if row < M and col < N:
                    C[row, col] = A[row, col] + B[row, col]

    return main


def ref_program(A, B):
    return (A.astype(np.float32) + B.astype(np.float32)).astype(np.float16)
