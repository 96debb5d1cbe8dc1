# Copies of part of a fragment (compiler/passes/lower_copy.cc, step 2), as
# TileLang's flash-decoding examples write `T.copy(acc_o[:valid_block_H, :],
# O_shared)`: the first K rows of a fragment to a (K, N) shared tile, the same
# rows into part of a larger shared tile that was filled first (its other rows
# must keep the fill), a column window whose start and width are multiples of
# the vector width (vectorized) and one that is not, rows chosen by a loop
# variable (a run-time start) straight to global memory, and global rows into
# part of a zeroed fragment (its other registers must stay zero). Between two
# fragments, as flash_decoding/example_mha_inference.py's combine step does,
# row k (a loop variable) of a (4, M) fragment goes to an (M,) fragment of
# another layout, read from the thread's own registers.
# kiln: test-bind M=8 N=32 K=5
import numpy as np
import tilelang
import tilelang.language as T


def fragment_partial_copy(M, N, K, threads=64, dtype=T.float32):
    @T.prim_func
    def main(
        X: T.Tensor((M, N), dtype),
        L: T.Tensor((4, N), dtype),
        top: T.Tensor((K, N), dtype),
        filled: T.Tensor((M, N), dtype),
        window: T.Tensor((M, 8), dtype),
        odd: T.Tensor((2, 5), dtype),
        picked: T.Tensor((2, N), dtype),
        loaded: T.Tensor((M, N), dtype),
        row_sums: T.Tensor((N,), dtype),
    ):
        with T.Kernel(1, threads=threads) as bx:
            f = T.alloc_fragment((M, N), dtype)
            g = T.alloc_fragment((M, N), dtype)
            s_top = T.alloc_shared((K, N), dtype)
            s_all = T.alloc_shared((M, N), dtype)
            for i, j in T.Parallel(M, N):
                f[i, j] = X[i, j] * 2.0 + 1.0
            T.copy(f[:K, :], s_top)
            T.copy(s_top, top)
            T.fill(s_all, -1.0)
            T.copy(f[:K, :], s_all[:K, :])
            T.copy(s_all, filled)
            T.copy(f[:, 4:12], window)
            T.copy(f[1:3, 3:8], odd)
            for t in T.serial(2):
                T.copy(f[t * 2 + 1, :], picked[t, :])
            T.clear(g)
            T.copy(X[0:2, :], g[2:4, :])
            T.copy(g, loaded)

            lse = T.alloc_fragment((4, N), dtype)
            lse_max = T.alloc_fragment((N,), dtype)
            split = T.alloc_fragment((N,), dtype)
            acc = T.alloc_fragment((N,), dtype)
            T.copy(L, lse)
            T.reduce_max(lse, lse_max, dim=0)
            T.clear(acc)
            for k in T.serial(4):
                T.copy(lse[k, :], split)
                for i in T.Parallel(N):
                    acc[i] += (split[i] - lse_max[i]) * (k + 1)
            T.copy(acc, row_sums)

    return main


def ref_program(X, L):
    f = X * 2.0 + 1.0
    K = 5
    filled = np.full_like(X, -1.0)
    filled[:K] = f[:K]
    loaded = np.zeros_like(X)
    loaded[2:4] = X[0:2]
    row_sums = ((L - L.max(0)) * np.arange(1, 5, dtype=np.float32)[:, None]).sum(0)
    return f[:K], filled, f[:, 4:12], f[1:3, 3:8], f[[1, 3]], loaded, row_sums
