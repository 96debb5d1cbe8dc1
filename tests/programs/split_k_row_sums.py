# A program of three kernels sharing two T.alloc_global workspaces
# (docs/design/multi-kernel.md): the first writes per-split partial row sums
# of X into `partial` (a tile reduction in shared memory), the second
# combines them into `sums`, the third scales each row of X by its sum into
# `out` (a tile copy through shared memory). Each kernel reads what the one
# before wrote, so a launcher that ran only the first, or ran them out of
# order, or gave them different workspaces, fails the check. M is not a
# multiple of the combine kernel's 32 rows, so its last block is partial.
# kiln: test-bind M=40 N=96 splits=3 block_M=8
import numpy as np
import tilelang
import tilelang.language as T


def split_k_row_sums(M, N, splits, block_M, dtype=T.float32):
    chunk = N // splits

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), out: T.Tensor((M, N), dtype)):
        partial = T.alloc_global([M, splits], dtype)
        sums = T.alloc_global([M], dtype)
        with T.Kernel(T.ceildiv(M, block_M), splits, threads=64) as (bx, by):
            tile = T.alloc_shared((block_M, chunk), dtype)
            acc = T.alloc_fragment((block_M,), dtype)
            T.copy(X[bx * block_M, by * chunk], tile)
            T.reduce_sum(tile, acc, dim=1)
            for i in T.Parallel(block_M):
                if bx * block_M + i < M:
                    partial[bx * block_M + i, by] = acc[i]
        with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < M:
                    total = T.alloc_var(dtype)
                    total = 0.0
                    for s in T.serial(splits):
                        total += partial[bx * 32 + i, s]
                    sums[bx * 32 + i] = total
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
            rows = T.alloc_shared((block_M, N), dtype)
            T.copy(X[bx * block_M, 0], rows)
            for i, j in T.Parallel(block_M, N):
                if bx * block_M + i < M:
                    rows[i, j] = rows[i, j] * sums[bx * block_M + i]
            T.copy(rows, out[bx * block_M, 0])

    return main


def ref_program(X):
    return X * X.sum(axis=1, keepdims=True)
