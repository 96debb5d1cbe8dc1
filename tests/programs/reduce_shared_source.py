# Reductions whose source is in shared memory (compiler/passes/lower_reduce.cc,
# steps 5 and 6): into fragments and into shared memory, along both dimensions,
# with and without clear, of sub-regions, and into a keep-dims (rows, 1) tile.
# Each block reduces its own block_M x N tile of X. Whole rows of N = 64 are
# walked from a different column by each row (the bank rotation), a row's
# first 24 columns in order; the fragments' layouts replicate. The same
# program at N = 40 (no rotation, partial warps) passes too.
# kiln: test-bind M=48 N=64 block_M=16 threads=64
import numpy as np
import tilelang
import tilelang.language as T


def reduce_shared_source(M, N, block_M, threads=64, dtype=T.float32):
    G = M // block_M

    @T.prim_func
    def main(
        X: T.Tensor((M, N), dtype),
        col_sum: T.Tensor((G, N), dtype),
        row_max: T.Tensor((M,), dtype),
        col_max_acc: T.Tensor((G, N), dtype),
        row_sum_acc: T.Tensor((M,), dtype),
        head_abssum: T.Tensor((G, N), dtype),
        row_min_keep: T.Tensor((M, 1), dtype),
        col_min_acc: T.Tensor((G, N), dtype),
        head_row_sum: T.Tensor((M,), dtype),
    ):
        with T.Kernel(G, threads=threads) as bx:
            xs = T.alloc_shared((block_M, N), dtype)
            cs = T.alloc_fragment((N,), dtype)
            rm = T.alloc_shared((block_M,), dtype)
            cm = T.alloc_shared((N,), dtype)
            rs = T.alloc_fragment((block_M,), dtype)
            ha = T.alloc_fragment((N,), dtype)
            rk = T.alloc_shared((block_M, 1), dtype)
            cn = T.alloc_fragment((N,), dtype)
            hr = T.alloc_shared((block_M,), dtype)

            T.copy(X[bx * block_M, 0], xs)
            # shared -> fragment, dim 0, clear
            T.reduce_sum(xs, cs, dim=0)
            T.copy(cs, col_sum[bx, 0])
            # shared -> shared, dim 1, clear
            T.reduce_max(xs, rm, dim=1)
            T.copy(rm, row_max[bx * block_M])
            # shared -> shared, dim 0, accumulating onto 0.5
            T.fill(cm, 0.5)
            T.reduce_max(xs, cm, dim=0, clear=False)
            T.copy(cm, col_max_acc[bx, 0])
            # shared -> fragment, dim 1, accumulating onto 1
            T.fill(rs, 1.0)
            T.reduce_sum(xs, rs, dim=-1, clear=False)
            T.copy(rs, row_sum_acc[bx * block_M])
            # a sub-region of the source: the tile's first four rows
            T.reduce_abssum(xs[0:4, :], ha, dim=0)
            T.copy(ha, head_abssum[bx, 0])
            # keep-dims destination
            T.reduce_min(xs, rk, dim=1)
            T.copy(rk, row_min_keep[bx * block_M, 0])
            # shared -> fragment, min, accumulating onto -0.25
            T.fill(cn, -0.25)
            T.reduce_min(xs, cn, dim=0, clear=False)
            T.copy(cn, col_min_acc[bx, 0])
            # a row's first 24 columns, shared -> shared
            T.reduce_sum(xs[:, 0:24], hr, dim=1)
            T.copy(hr, head_row_sum[bx * block_M])

    return main


def ref_program(X):
    M, N = X.shape
    G = M // 16
    t = X.reshape(G, 16, N)
    return (
        t.sum(1),
        X.max(1),
        np.maximum(t.max(1), 0.5),
        X.sum(1) + 1.0,
        np.abs(t[:, 0:4, :]).sum(1),
        X.min(1, keepdims=True),
        np.minimum(t.min(1), -0.25),
        X[:, 0:24].sum(1),
    )
