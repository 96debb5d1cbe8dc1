# Shared-source reductions straight from a pipeline's multi-buffered tile:
# column sums accumulate into a fragment across the row tiles (clear=False),
# each tile's row absmax goes through shared memory into a global atomic max.
# M is ragged (the last tile's rows past the edge are zero-filled and their
# atomics dropped), and three stages make the stage index matter.
# kiln: test-bind M=150 N=70 block_M=32 block_N=32
import numpy as np
import tilelang
import tilelang.language as T


def reduce_pipelined_tile(M, N, block_M, block_N, num_stages=3, threads=128, dtype=T.float16,
                          accum_dtype=T.float32):
    @T.prim_func
    def main(
        X: T.Tensor((M, N), dtype),
        col_sum: T.Tensor((N,), accum_dtype),
        row_absmax: T.Tensor((M,), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            tile = T.alloc_shared((block_M, block_N), dtype)
            acc = T.alloc_fragment((block_N,), accum_dtype)
            rows = T.alloc_shared((block_M,), accum_dtype)
            T.clear(acc)
            for t in T.Pipelined(T.ceildiv(M, block_M), num_stages=num_stages):
                T.copy(X[t * block_M, bx * block_N], tile)
                T.reduce_sum(tile, acc, dim=0, clear=False)
                T.reduce_absmax(tile, rows, dim=1)
                T.atomic_max(row_absmax[t * block_M], rows)
            T.copy(acc, col_sum[bx * block_N])

    return main


def ref_program(X):
    x = X.astype(np.float32)
    return X.astype(np.float64).sum(axis=0).astype(np.float32), np.abs(x).max(1)
