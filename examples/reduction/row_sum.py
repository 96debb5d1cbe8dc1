# out[i] = sum_j X[i, j]: each block owns block_M rows and sweeps their columns tile by tile.
# kiln: bind M=16384 N=8192 block_M=8 block_N=512
# kiln: test-bind M=50 N=300 block_M=8 block_N=64
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def row_sum(X, block_M, block_N, threads=128, dtype=T.float16, accum_dtype=T.float32):
    M, N = T.const("M, N")

    X: T.Tensor((M, N), dtype)
    out = T.empty((M,), accum_dtype)

    with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
        x = T.alloc_fragment((block_M, block_N), accum_dtype)
        acc = T.alloc_fragment((block_M,), accum_dtype)

        T.clear(acc)
        for t in T.serial(T.ceildiv(N, block_N)):
            # The last tile's columns past N are zeros, so it can be summed whole.
            T.copy(X[bx * block_M, t * block_N], x)
            T.reduce_sum(x, acc, dim=1, clear=False)
        T.copy(acc, out[bx * block_M])

    return out


def ref_program(X):
    return X.astype(np.float64).sum(axis=1).astype(np.float32)
