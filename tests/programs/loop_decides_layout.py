# Fragments copied from shared memory before the T.Parallel loop that
# indexes them by a subset of its variables (TileLang's
# deepseek_mhc/example_mhc_post.py pattern): defaulting each copy's
# fragment on its own gives layouts the loop contradicts, so layout
# inference lets the loop decide and the copies follow.
# kiln: test-bind M=4 N=256
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def outer_plus(A, B, C, threads=128):
    M, N = T.const("M, N")

    A: T.Tensor((M, N), T.float32)
    B: T.Tensor((N,), T.float32)
    C: T.Tensor((M,), T.float32)
    Y = T.empty((M, N), T.float32)

    with T.Kernel(1, threads=threads) as bx:
        a_s = T.alloc_shared((M, N), T.float32)
        b_s = T.alloc_shared((N,), T.float32)
        a = T.alloc_fragment((M, N), T.float32)
        b = T.alloc_fragment((N,), T.float32)
        c = T.alloc_fragment((M,), T.float32)
        y = T.alloc_fragment((M, N), T.float32)

        T.copy(C, c)
        T.copy(A, a_s)
        T.copy(B, b_s)
        T.copy(b_s, b)
        T.copy(a_s, a)
        for i, j in T.Parallel(M, N):
            y[i, j] = c[i] * b[j] + a[i, j]
        T.copy(y, Y)

    return Y


def ref_program(A, B, C):
    return (C[:, None] * B[None, :] + A).astype(np.float32)
