# Reductions of fragments into shared memory (compiler/passes/lower_reduce.cc,
# steps 1-3 then the shared write-back of step 4): a rank-3 fragment reduced
# along each of its dimensions, with and without clear, and a rank-2 one into
# one row of a larger shared buffer. The results go back through shared
# memory, so a missing barrier or a write by every replica shows up.
# kiln: test-bind B=4 n=8 M=16 N=40 threads=128
import numpy as np
import tilelang
import tilelang.language as T


def reduce_to_shared(B, n, M, N, threads=128, dtype=T.float32):
    @T.prim_func
    def main(
        X: T.Tensor((B, n, n), dtype),
        Y: T.Tensor((B, n, n), dtype),
        Z: T.Tensor((M, N), dtype),
        last_sum: T.Tensor((B, n), dtype),
        mid_sum: T.Tensor((B, n), dtype),
        first_max_acc: T.Tensor((n, n), dtype),
        row_max: T.Tensor((4, M), dtype),
        col_sum_acc: T.Tensor((N,), dtype),
    ):
        with T.Kernel(1, threads=threads) as bx:
            P = T.alloc_fragment((B, n, n), dtype)
            s_last = T.alloc_shared((B, n), dtype)
            s_mid = T.alloc_shared((B, n), dtype)
            s_first = T.alloc_shared((n, n), dtype)
            z = T.alloc_fragment((M, N), dtype)
            rows = T.alloc_shared((4, M), dtype)
            cols = T.alloc_shared((N,), dtype)

            for b, i, j in T.Parallel(B, n, n):
                P[b, i, j] = X[b, i, j] * Y[b, i, j]
            T.reduce_sum(P, s_last, dim=-1)
            T.reduce_sum(P, s_mid, dim=-2)
            T.fill(s_first, 0.125)
            T.reduce_max(P, s_first, dim=0, clear=False)
            T.copy(s_last, last_sum)
            T.copy(s_mid, mid_sum)
            T.copy(s_first, first_max_acc)

            T.copy(Z, z)
            T.fill(rows, 0.0)
            T.reduce_max(z, rows[2, :], dim=1)
            T.copy(rows, row_max)
            for j in T.Parallel(N):
                cols[j] = Z[0, j]
            T.reduce_sum(z, cols, dim=0, clear=False)
            T.copy(cols, col_sum_acc)

    return main


def ref_program(X, Y, Z):
    P = X * Y
    rows = np.zeros((4, Z.shape[0]), dtype=np.float32)
    rows[2] = Z.max(1)
    return (
        P.sum(2),
        P.sum(1),
        np.maximum(P.max(0), 0.125),
        rows,
        Z[0] + Z.sum(0),
    )
