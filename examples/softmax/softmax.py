# Y = softmax(X) along each row, for rows of any length: one streaming pass keeps a running
# max and a rescaled running sum (online softmax), a second pass writes the normalized values.
# kiln: bind M=8192 N=8192 block_M=1 block_N=8192
# kiln: test-bind M=37 N=300 block_M=4 block_N=128
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def softmax(X, block_M, block_N, threads=128, dtype=T.float16, accum_dtype=T.float32):
    M, N = T.const("M, N")

    X: T.Tensor((M, N), dtype)
    Y = T.empty((M, N), dtype)

    log2e = 1.4426950408889634
    num_tiles = T.ceildiv(N, block_N)

    with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
        x = T.alloc_fragment((block_M, block_N), accum_dtype)
        row_max = T.alloc_fragment((block_M,), accum_dtype)
        new_max = T.alloc_fragment((block_M,), accum_dtype)
        row_sum = T.alloc_fragment((block_M,), accum_dtype)
        tile_sum = T.alloc_fragment((block_M,), accum_dtype)

        T.fill(row_max, -T.infinity(accum_dtype))
        T.clear(row_sum)
        for t in T.serial(num_tiles):
            T.copy(X[bx * block_M, t * block_N], x)
            # Columns past N arrive as 0, which would beat an all-negative row in the max.
            for i, j in T.Parallel(block_M, block_N):
                x[i, j] = T.if_then_else(t * block_N + j < N, x[i, j], -T.infinity(accum_dtype))
            T.reduce_max(x, new_max, dim=1, clear=True)
            for i in T.Parallel(block_M):
                new_max[i] = T.max(new_max[i], row_max[i])
            for i, j in T.Parallel(block_M, block_N):
                x[i, j] = T.exp2((x[i, j] - new_max[i]) * log2e)
            T.reduce_sum(x, tile_sum, dim=1)
            for i in T.Parallel(block_M):
                row_sum[i] = row_sum[i] * T.exp2((row_max[i] - new_max[i]) * log2e) + tile_sum[i]
                row_max[i] = new_max[i]

        for t in T.serial(num_tiles):
            if num_tiles > 1:
                T.copy(X[bx * block_M, t * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.exp2((x[i, j] - row_max[i]) * log2e) / row_sum[i]
            else:
                # One tile: x still holds exp2((x - max) * log2e) from the first pass, so the
                # row is read from memory once.
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, t * block_N])

    return Y


def ref_program(X):
    x = X.astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float16)
