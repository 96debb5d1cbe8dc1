# T.cumsum (TileLang's scan_op): inclusive prefix sums along either dimension
# of a tile, forward and reversed, in place in shared memory, from a shared
# buffer into another one, and on fragments (scanned through a shared copy).
# kiln: test-bind R=8 C=48 threads=64
import numpy as np
import tilelang
import tilelang.language as T


def cumsum_lines(R, C, threads=64, dtype=T.float32):
    @T.prim_func
    def main(
        X: T.Tensor((R, C), dtype),
        rows: T.Tensor((R, C), dtype),
        rows_rev: T.Tensor((R, C), dtype),
        cols: T.Tensor((R, C), dtype),
        frag_rows: T.Tensor((R, C), dtype),
    ):
        with T.Kernel(1, threads=threads) as bx:
            a = T.alloc_shared((R, C), dtype)
            b = T.alloc_shared((R, C), dtype)
            f = T.alloc_fragment((R, C), dtype)
            T.copy(X, a)
            T.cumsum(a, dim=1)
            T.copy(a, rows)
            T.copy(X, a)
            T.cumsum(a, b, dim=-1, reverse=True)
            T.copy(b, rows_rev)
            T.copy(X, a)
            T.cumsum(src=a, dim=0)
            T.copy(a, cols)
            T.copy(X, f)
            T.cumsum(f, dim=1)
            T.copy(f, frag_rows)

    return main


def ref_program(X):
    rows = np.cumsum(X, axis=1)
    rows_rev = np.flip(np.cumsum(np.flip(X, axis=1), axis=1), axis=1)
    cols = np.cumsum(X, axis=0)
    return rows, rows_rev, cols, rows
