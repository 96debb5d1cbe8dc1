# A T.Parallel loop over a shared buffer that reads row statistics held in
# fragments by only some of its variables (`S_shared[h, k] ... row_max[h]`,
# the pattern of flash decoding's score pooling): no fragment names every loop
# variable, and the row statistics are spread over threads the way gemm's
# accumulator is. The loop follows those fragments over the rows and runs the
# other dimension whole in each thread; a store to shared memory is made by
# one thread of each group of replicas.
# kiln: test-bind M=64 N=96 K=32 block_N=32
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def pooled_scores(A, B, block_N, threads=128):
    M, N, K = T.const("M, N, K")
    nk = N // block_N

    A: T.Tensor((M, K), T.float16)
    B: T.Tensor((N, K), T.float16)
    P = T.empty((M, nk), T.float32)
    L = T.empty((M,), T.float32)

    with T.Kernel(1, threads=threads) as bx:
        a_s = T.alloc_shared((M, K), T.float16)
        b_s = T.alloc_shared((block_N, K), T.float16)
        acc = T.alloc_fragment((M, block_N), T.float32)
        row_max = T.alloc_fragment((M,), T.float32)
        best = T.alloc_fragment((M,), T.float32)
        pooled = T.alloc_shared((M, nk), T.float32)

        T.copy(A, a_s)
        T.fill(best, -T.infinity(T.float32))
        for k in T.serial(nk):
            T.copy(B[k * block_N : (k + 1) * block_N, :], b_s)
            T.clear(acc)
            T.gemm(a_s, b_s, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.reduce_max(acc, row_max, dim=1)
            T.copy(row_max, pooled[:, k])
            for i in T.Parallel(M):
                best[i] = T.max(best[i], row_max[i])
        for h, k in T.Parallel(M, nk):
            pooled[h, k] = pooled[h, k] - best[h] + h * 0.5
        T.copy(pooled, P)
        T.copy(best, L)

    return P, L


def ref_program(A, B):
    M = A.shape[0]
    S = A.astype(np.float32) @ B.astype(np.float32).T
    nk = P_cols = S.shape[1] // 32
    pooled = np.stack([S[:, k * 32 : (k + 1) * 32].max(axis=1) for k in range(nk)], axis=1)
    best = pooled.max(axis=1)
    pooled = pooled - best[:, None] + np.arange(M, dtype=np.float32)[:, None] * 0.5
    del P_cols
    return pooled, best
