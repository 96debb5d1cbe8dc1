# Perfectly nested T.Parallel loops (TileLang's lowercase T.parallel, as in
# its dsa_hisa/fp8_block_mean_pooling.py) run as one two-dimensional loop;
# a one-element fragment from a reduction is read outside any T.Parallel
# loop, in a scalar stored to global memory and in a later loop.
# kiln: test-bind M=24 N=80 block_M=8
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def scale_by_block_max(X, block_M, threads=128):
    M, N = T.const("M, N")

    X: T.Tensor((M, N), T.float32)
    Y = T.empty((M, N), T.float32)
    S = T.empty((M // block_M,), T.float32)

    with T.Kernel(M // block_M, threads=threads) as bx:
        x = T.alloc_fragment((block_M, N), T.float32)
        colmax = T.alloc_fragment((N,), T.float32)
        top = T.alloc_fragment((1,), T.float32)

        T.copy(X[bx * block_M : (bx + 1) * block_M, :], x)
        for i in T.parallel(block_M):
            for j in T.parallel(N):
                if i >= block_M // 2:
                    x[i, j] = x[i, j] * (j + 1)
        T.reduce_absmax(x, colmax, dim=0)
        T.reduce_max(colmax, top, dim=0)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = x[i, j] / top[0]
        T.copy(x, Y[bx * block_M : (bx + 1) * block_M, :])
        S[bx] = top[0] * 2

    return Y, S


def ref_program(X):
    M, N = X.shape
    block_M = 8
    x = X.reshape(M // block_M, block_M, N).copy()
    x[:, block_M // 2 :, :] *= np.arange(1, N + 1, dtype=np.float32)
    top = np.abs(x).max(axis=(1, 2))
    return (x / top[:, None, None]).reshape(M, N), top * 2
