# B = A^T. Reads and writes are both row-contiguous in global memory; the transpose itself
# happens between two shared-memory tiles.
# kiln: bind M=8192 N=8192 block_M=64 block_N=64
# kiln: test-bind M=100 N=75 block_M=32 block_N=32
import numpy as np
import tilelang
import tilelang.language as T


def transpose(M, N, block_M, block_N, threads=128, dtype=T.float16):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((N, M), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            tile = T.alloc_shared((block_M, block_N), dtype)
            tile_t = T.alloc_shared((block_N, block_M), dtype)

            T.copy(A[by * block_M, bx * block_N], tile)
            for j, i in T.Parallel(block_N, block_M):
                tile_t[j, i] = tile[i, j]
            # The clipped store drops the padding that the ragged edge tiles carry.
            T.copy(tile_t, B[bx * block_N, by * block_M])

    return main


def ref_program(A):
    return np.ascontiguousarray(A.T)
