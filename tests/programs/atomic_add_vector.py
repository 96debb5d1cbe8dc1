# T.atomic_addx4 / T.atomic_addx2 (vector atomics, as in TileLang's
# deepseek_v32/sparse_mla_bwd.py): inside a T.Parallel loop over rows and
# groups of 4 (2) columns, each thread adds 4 (2) consecutive elements of a
# shared tile into a row of the output chosen by an index tensor. Several
# rows scatter into the same output row, so the adds must be atomic; the
# blocks of the grid add into the same rows too. kiln-run's random int32
# inputs are in [-8, 8): the kernel takes Idx & 7 as the row.
# kiln: test-bind R=16 D=32 O=8 threads=64
import numpy as np
import tilelang
import tilelang.language as T


def atomic_add_vector(R, D, O, threads=64, dtype=T.float32):
    @T.prim_func
    def main(
        X: T.Tensor((2 * R, D), dtype),
        Idx: T.Tensor((2 * R,), T.int32),
        out4: T.Tensor((O, D), dtype),
        out2: T.Tensor((O, D), dtype),
    ):
        with T.Kernel(2, threads=threads) as bx:
            xs = T.alloc_shared((R, D), dtype)
            T.copy(X[bx * R, 0], xs)
            for r, d in T.Parallel(R, D // 4):
                T.atomic_addx4(out4[Idx[bx * R + r] & 7, d * 4], xs[r, d * 4])
            for r, d in T.Parallel(R, D // 2):
                T.atomic_addx2(out2[Idx[bx * R + r] & 7, d * 2], xs[r, d * 2])

    return main


def ref_program(X, Idx):
    out = np.zeros((8, X.shape[1]), X.dtype)
    np.add.at(out, Idx & 7, X)
    return out, out
