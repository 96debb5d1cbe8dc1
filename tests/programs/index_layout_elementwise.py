# Element accesses of tensors stored in T.Layout order (compiler/passes/
# global_layout.cc): loads inside a T.Parallel expression, stores from it,
# and element atomics, each through its tensor's own layout. X is stored
# transposed with its rows in blocks of 4 swapped pairwise (a layout that is
# a permutation but not a plain transpose); Y and Z blocked 4 x 4.
# kiln: test-bind M=16 N=24
import numpy as np
import tilelang
import tilelang.language as T


def x_layout(i, j):
    return [j, (i // 4) * 4 + 3 - i % 4]


def index_layout_elementwise(M, N, dtype=T.float32):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), Z: T.Tensor((M, N), dtype)):
        with T.Kernel(2, threads=64) as bx:
            T.annotate_layout({
                X: T.Layout(X.shape, x_layout),
                Y: T.Layout(Y.shape, lambda i, j: [i // 4, j // 4, i % 4, j % 4]),
                Z: T.Layout(Z.shape, lambda i, j: [i // 4, j // 4, i % 4, j % 4]),
            })
            for i, j in T.Parallel(M // 2, N):
                Y[bx * (M // 2) + i, j] = X[bx * (M // 2) + i, j] * 2.0 + 1.0
            for i, j in T.Parallel(M, N):
                T.atomic_add(Z[i, j], X[i, j])

    return main


def ref_program(X):
    # X arrives as the memory the kernel reads: X's physical array.
    M, N = X.shape
    i, j = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    x = X.reshape(N, M)[j, (i // 4) * 4 + 3 - i % 4]  # the logical tensor
    y = np.zeros((M // 4, N // 4, 4, 4), X.dtype)
    y[i // 4, j // 4, i % 4, j % 4] = x * 2.0 + 1.0
    z = np.zeros((M // 4, N // 4, 4, 4), X.dtype)
    z[i // 4, j // 4, i % 4, j % 4] = x * 2  # both blocks add all of X
    return y.reshape(M, N), z.reshape(M, N)
