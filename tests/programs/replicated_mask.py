# A small fragment filled by T.copy and read element by element outside any
# T.Parallel loop (`if mask[k]:` in a pipelined loop, the block-sparse
# attention pattern), a one-element fragment written outside T.Parallel
# (a counter), and that counter read by a constant index inside T.Parallel.
# Layout inference gives both fragments the fully replicated layout (every
# thread holds all of it), so every thread takes the same branch.
# kiln: test-bind M=64 N=96 block_M=16 block_N=16
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def masked_block_sum(X, Mask, block_M, block_N, threads=64):
    M, N = T.const("M, N")
    nb = N // block_N

    X: T.Tensor((M, N), T.float32)
    Mask: T.Tensor((M // block_M, nb), T.bool)
    Y = T.empty((M, block_N), T.float32)

    with T.Kernel(M // block_M, threads=threads) as bx:
        mask = T.alloc_fragment((nb,), T.bool)
        count = T.alloc_fragment((1,), T.float32)
        acc = T.alloc_fragment((block_M, block_N), T.float32)
        tile = T.alloc_shared((block_M, block_N), T.float32)

        T.copy(Mask[bx, :], mask)
        T.clear(acc)
        count[0] = 0
        for k in T.Pipelined(nb, num_stages=2):
            if mask[k]:
                T.copy(X[bx * block_M : (bx + 1) * block_M, k * block_N : (k + 1) * block_N], tile)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] += tile[i, j] * (k + 1)
                count[0] = count[0] + 1
        for i, j in T.Parallel(block_M, block_N):
            acc[i, j] = acc[i, j] / T.max(count[0], 1.0)
        T.copy(acc, Y[bx * block_M : (bx + 1) * block_M, :])

    return Y


def ref_program(X, Mask):
    M, N = X.shape
    blocks, nb = Mask.shape
    block_M, block_N = M // blocks, N // nb
    Y = np.zeros((M, block_N), np.float32)
    for b in range(blocks):
        rows = slice(b * block_M, (b + 1) * block_M)
        count = 0
        for k in range(nb):
            if Mask[b, k]:
                Y[rows] += X[rows, k * block_N : (k + 1) * block_N] * (k + 1)
                count += 1
        Y[rows] /= max(count, 1)
    return Y
