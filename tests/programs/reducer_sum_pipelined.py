# Sum reducers (T.alloc_reducer, compiler/ir/reducer.h) across a pipelined
# loop, as TileLang's gemv example uses them: every thread adds its part of
# each row's dot product into its own copy of `acc`, and T.finalize_reducer
# combines the copies (shuffles, then one partial per warp through shared
# memory). `tot` is written at a fixed index from a loop whose iterations
# are fewer than the threads, so several threads run each one: a
# contribution must still count once. M and N are ragged (zero-filled
# tiles at the edges).
# kiln: test-bind M=100 N=200 block_M=32 block_N=64
import numpy as np
import tilelang
import tilelang.language as T


def reducer_sum_pipelined(M, N, block_M, block_N, num_stages=2, threads=128, dtype=T.float16,
                          accum_dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        x: T.Tensor((N,), dtype),
        y: T.Tensor((M,), dtype),
        xsum: T.Tensor((T.ceildiv(M, block_M),), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            acc = T.alloc_reducer(block_M, accum_dtype, replication="all")
            tot = T.alloc_reducer((1,), accum_dtype, op="sum")
            T.clear(acc)
            T.fill(tot, 0)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                a_s = T.alloc_shared((block_M, block_N), dtype)
                T.copy(A[bx * block_M, k * block_N], a_s)
                a_f = T.alloc_fragment((block_M, block_N), dtype)
                T.copy(a_s, a_f)
                x_f = T.alloc_fragment(block_N, dtype)
                T.copy(x[k * block_N], x_f)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i] += a_f[i, j] * x_f[j]
                for j in T.Parallel(block_N):
                    tot[0] += x_f[j]
            T.finalize_reducer(acc)
            T.finalize_reducer(tot)
            T.copy(acc, y[bx * block_M])
            xsum[bx] = tot[0]

    return main


def ref_program(A, x):
    a = A.astype(np.float64)
    v = x.astype(np.float64)
    blocks = (A.shape[0] + 31) // 32
    return (a @ v).astype(np.float16), np.full((blocks,), v.sum(), dtype=np.float32)
