# Tile copies through a tensor viewed with another shape over the same storage
# (T.Tensor(shape, dtype, X.data), as TileLang's convolution example views its
# kernel and output), in both directions. A is (P, Q, C) read as a (P * Q, C)
# matrix in tiles of 4 rows: Q = 5 is no multiple of 4, so a tile straddles
# rows of A and is copied element by element, the last tile half past the end
# (read as zeros, written nowhere). B is (G, 8, C): 4-row tiles stay inside
# one row of B's first two dimensions and are copied as B's own rectangles.
# Each tile goes through shared memory and a fragment, then from the fragment
# out through a view of the output (TileLang's convolution does so on GPUs
# other than Hopper).
# kiln: test-bind P=3 Q=5 G=3 C=16
import numpy as np
import tilelang
import tilelang.language as T


def global_view_copy(P, Q, G, C, dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((P, Q, C), dtype),
        B: T.Tensor((G, 8, C), dtype),
        OA: T.Tensor((P, Q, C), dtype),
        OB: T.Tensor((G, 8, C), dtype),
    ):
        with T.Kernel(T.ceildiv(P * Q, 4), 2 * G, threads=64) as (bx, by):
            a_flat = T.Tensor((P * Q, C), dtype, A.data)
            oa_flat = T.Tensor((P * Q, C), dtype, OA.data)
            b_flat = T.Tensor((G * 8, C), dtype, B.data)
            ob_flat = T.Tensor((G * 8, C), dtype, OB.data)
            s = T.alloc_shared((4, C), dtype)
            f = T.alloc_fragment((4, C), dtype)
            if by == 0:
                T.copy(a_flat[bx * 4, 0], s)
                T.copy(s, f)
                for i, j in T.Parallel(4, C):
                    f[i, j] = f[i, j] * 2.0 + 1.0
                T.copy(f, oa_flat[bx * 4 : bx * 4 + 4, :])
            if bx == 0:
                T.copy(b_flat[by * 4 : by * 4 + 4, 0:C], s)
                T.copy(s, f)
                for i, j in T.Parallel(4, C):
                    f[i, j] = f[i, j] - 3.0
                T.copy(f, ob_flat[by * 4, 0])

    return main


def ref_program(A, B):
    return A * 2.0 + 1.0, B - 3.0
