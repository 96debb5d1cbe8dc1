# out[j] = sum_i X[i, j]: each block owns block_N columns and walks down the rows, staging
# row tiles through shared memory with a software pipeline.
# kiln: bind M=16384 N=8192 block_M=64 block_N=256
# kiln: test-bind M=150 N=70 block_M=32 block_N=32
import numpy as np
import tilelang
import tilelang.language as T


def col_sum(M, N, block_M, block_N, num_stages=2, threads=128, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(
        X: T.Tensor((M, N), dtype),
        out: T.Tensor((N,), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            x_tile = T.alloc_shared((block_M, block_N), dtype)
            x = T.alloc_fragment((block_M, block_N), accum_dtype)
            acc = T.alloc_fragment((block_N,), accum_dtype)

            T.clear(acc)
            for t in T.Pipelined(T.ceildiv(M, block_M), num_stages=num_stages):
                T.copy(X[t * block_M, bx * block_N], x_tile)
                T.copy(x_tile, x)
                T.reduce_sum(x, acc, dim=0, clear=False)
            T.copy(acc, out[bx * block_N])

    return main


def ref_program(X):
    return X.astype(np.float64).sum(axis=0).astype(np.float32)
