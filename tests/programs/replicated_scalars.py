# One-element fragments produced by reductions and read by a constant index
# inside a T.Parallel loop (the pattern of TileLang's layernorm backward:
# `sum_dx_hat[0]` in a loop over (1, D)), a two-element fragment written
# outside T.Parallel and read at index 1, and a fragment filled by T.copy,
# read by the loop's variable in a loop spread over threads and at index 0
# outside any loop. The row does not fill the threads evenly (padding).
# kiln: test-bind M=5 N=200
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def normalize_rows(X, W, threads=128):
    M, N = T.const("M, N")

    X: T.Tensor((M, N), T.float32)
    W: T.Tensor((N,), T.float32)
    Y = T.empty((M, N), T.float32)

    with T.Kernel(M, threads=threads) as bx:
        row = T.alloc_fragment((1, N), T.float32)
        sq = T.alloc_fragment((1, N), T.float32)
        w = T.alloc_fragment((N,), T.float32)
        total = T.alloc_fragment((1,), T.float32)
        total_sq = T.alloc_fragment((1,), T.float32)
        stats = T.alloc_fragment((2,), T.float32)

        T.copy(X[bx : bx + 1, :], row)
        T.copy(W, w)
        for i, j in T.Parallel(1, N):
            sq[i, j] = row[i, j] * row[i, j]
        T.reduce_sum(row, total, dim=1)
        T.reduce_sum(sq, total_sq, dim=1)
        stats[0] = total[0] / N
        stats[1] = T.rsqrt(total_sq[0] / N - stats[0] * stats[0] + 1e-5) * w[0]
        for i, j in T.Parallel(1, N):
            row[i, j] = (row[i, j] - total[0] / N) * stats[1] + w[j]
        T.copy(row, Y[bx : bx + 1, :])

    return Y


def ref_program(X, W):
    mean = X.mean(axis=1, keepdims=True)
    var = (X * X).mean(axis=1, keepdims=True) - mean * mean
    return ((X - mean) / np.sqrt(var + 1e-5) * W[0] + W).astype(np.float32)
