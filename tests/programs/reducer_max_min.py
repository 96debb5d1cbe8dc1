# Max and min reducers (T.alloc_reducer op="max"/"min", compiler/ir/reducer.h)
# over a 64-thread block (two warps): `hi` starts at -inf, `lo` is a 2-d
# reducer indexed by expressions of the loop variable that start at 0 (for
# max and min any start is a seed: the result is min(0, ...)). After
# T.finalize_reducer every thread holds the combined values, so a
# T.Parallel loop reads them at any index.
# kiln: test-bind M=40 N=96 block_M=16 block_N=32
import numpy as np
import tilelang
import tilelang.language as T


def reducer_max_min(M, N, block_M, block_N, threads=64, dtype=T.float32):
    @T.prim_func
    def main(
        X: T.Tensor((M, N), dtype),
        row_max: T.Tensor((M,), dtype),
        spread: T.Tensor((M,), dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            hi = T.alloc_reducer((block_M,), dtype, op="max", replication="all")
            lo = T.alloc_reducer((block_M // 8, 8), dtype, "min")
            xs = T.alloc_shared((block_M, block_N), dtype)
            T.fill(hi, -T.infinity(dtype))
            T.clear(lo)
            for k in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[bx * block_M, k * block_N], xs)
                for i, j in T.Parallel(block_M, block_N):
                    hi[i] = T.max(hi[i], xs[i, j])
                    lo[i // 8, i % 8] = T.min(xs[i, j], lo[i // 8, i % 8])
            T.finalize_reducer(hi)
            T.finalize_reducer(lo)
            T.copy(hi, row_max[bx * block_M])
            for i in T.Parallel(block_M):
                if bx * block_M + i < M:
                    spread[bx * block_M + i] = hi[i] - lo[i // 8, i % 8]

    return main


def ref_program(X):
    hi = X.max(axis=1)
    lo = np.minimum(X.min(axis=1), 0.0)
    return hi, hi - lo
