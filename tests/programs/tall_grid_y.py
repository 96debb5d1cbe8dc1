# A grid with more than 65535 blocks along y, which CUDA does not launch:
# Kiln folds y into x (compiler/passes/fold_grid.h) and every block still
# sees its own (bx, by).
# kiln: test-bind M=70001 N=48 block_N=16
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def tall_grid_y(X, block_N, threads=32):
    M, N = T.const("M, N")

    X: T.Tensor((M, N), T.float32)
    Y = T.empty((M, N), T.float32)

    with T.Kernel(N // block_N, M, threads=threads) as (bx, by):
        for j in T.Parallel(block_N):
            Y[by, bx * block_N + j] = X[by, bx * block_N + j] * 2 + by * 0.25 + bx * 1000

    return Y


def ref_program(X):
    M, N = X.shape
    rows = np.arange(M, dtype=np.float32)[:, None] * 0.25
    cols = (np.arange(N) // 16).astype(np.float32)[None, :] * 1000
    return X * 2 + rows + cols
