# Tile-level atomics from shared memory (compiler/passes/lower_copy.cc,
# CopyDistributed): every block adds its G tiles of X (scaled in shared
# memory first) into one block_M x N output, and takes their element-wise
# maximum into another. The tile is rewritten each iteration of a pipelined
# loop right after the atomic read it, so a missing barrier shows up; N is
# not a multiple of block_N, so the last column block's atomics are partly
# out of bounds.
# kiln: test-bind G=6 block_M=8 N=40 block_N=32 threads=64
import numpy as np
import tilelang
import tilelang.language as T


def atomic_add_shared(G, block_M, N, block_N, threads=64, dtype=T.float32):
    @T.prim_func
    def main(
        X: T.Tensor((G * block_M, N), dtype),
        total: T.Tensor((block_M, N), dtype),
        biggest: T.Tensor((block_M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), 2, threads=threads) as (bx, by):
            xs = T.alloc_shared((block_M, block_N), dtype)
            ys = T.alloc_shared((block_M, block_N), dtype)
            for g in T.Pipelined(G // 2, num_stages=2):
                T.copy(X[(by * (G // 2) + g) * block_M, bx * block_N], xs)
                for i, j in T.Parallel(block_M, block_N):
                    ys[i, j] = xs[i, j] * 2.0
                T.atomic_add(total[0:block_M, bx * block_N : (bx + 1) * block_N], ys)
                T.atomic_max(biggest[0, bx * block_N], ys)

    return main


def ref_program(X):
    t = X.reshape(-1, 8, X.shape[1]) * 2.0
    return t.sum(0), np.maximum(t.max(0), 0.0)
