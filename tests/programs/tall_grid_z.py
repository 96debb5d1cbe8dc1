# A grid with more than 65535 blocks along z (and a small y): Kiln folds z
# into x (compiler/passes/fold_grid.h); y stays CUDA's own.
# kiln: test-bind M=132002 N=48 block_N=16
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def tall_grid_z(X, block_N, threads=32):
    M, N = T.const("M, N")

    X: T.Tensor((M, N), T.float32)
    Y = T.empty((M, N), T.float32)

    with T.Kernel(N // block_N, 2, M // 2, threads=threads) as (bx, by, bz):
        for j in T.Parallel(block_N):
            row = bz * 2 + by
            Y[row, bx * block_N + j] = X[row, bx * block_N + j] - by * 100 + bz * 0.5 + bx * 1000

    return Y


def ref_program(X):
    M, N = X.shape
    r = np.arange(M)
    by = (r % 2).astype(np.float32)[:, None]
    bz = (r // 2).astype(np.float32)[:, None]
    cols = (np.arange(N) // 16).astype(np.float32)[None, :] * 1000
    return X - by * 100 + bz * 0.5 + cols
