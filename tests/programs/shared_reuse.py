# Shared buffers whose lifetimes do not overlap share bytes (pass
# shared-placement). Two phases of one kernel each stage a whole tile in
# shared memory (128 KB each at the test binding): together they exceed the
# 227 KB a block may have, so the second tile takes the first one's bytes,
# after a block barrier. Each phase reads its tile reversed, so every thread
# reads what other threads wrote: without that barrier, threads that reach
# phase 2 early overwrite the first tile while others still read it. A small
# buffer written before phase 1 and read in phase 2 must keep bytes of its
# own; phase 2 also reduces a strided slice of its tile across threads.
# kiln: test-bind M=128 N=256 threads=128
import numpy as np
import tilelang
import tilelang.language as T


def shared_reuse(M, N, threads=128, dtype=T.float32):
    @T.prim_func
    def main(
        X: T.Tensor((M, N), dtype),
        Y: T.Tensor((M, N), dtype),
        first: T.Tensor((M, N), dtype),
        second: T.Tensor((M, N), dtype),
        row_sum: T.Tensor((M,), dtype),
    ):
        with T.Kernel(1, threads=threads) as bx:
            a = T.alloc_shared((M, N), dtype)
            b = T.alloc_shared((M, N), dtype)
            top = T.alloc_shared((N,), dtype)
            f = T.alloc_fragment((M, 16), dtype)
            s = T.alloc_fragment((M,), dtype)

            for j in T.Parallel(N):
                top[j] = X[0, j]
            T.copy(X, a)
            for i, j in T.Parallel(M, N):
                first[i, j] = a[M - 1 - i, N - 1 - j] * 2.0

            T.copy(Y, b)
            for i, j in T.Parallel(M, N):
                second[i, j] = b[M - 1 - i, N - 1 - j] + top[j]
            for i, j in T.Parallel(M, 16):
                f[i, j] = b[i, j * 16]
            T.reduce_sum(f, s, dim=1)
            T.copy(s, row_sum)

    return main


def ref_program(X, Y):
    return X[::-1, ::-1] * 2.0, Y[::-1, ::-1] + X[0][None, :], Y[:, ::16].sum(axis=1)
