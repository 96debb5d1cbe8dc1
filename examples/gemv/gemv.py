# y = A @ x for a row-major matrix A (M, K) and a vector x (K,): each block owns block_M rows,
# multiplies K tiles elementwise into a 2-D partial-sum tile and reduces it once at the end.
# kiln: bind M=8192 K=8192 block_M=16 block_K=512
# kiln: test-bind M=100 K=333 block_M=16 block_K=64
import numpy as np
import tilelang
import tilelang.language as T


def gemv(M, K, block_M, block_K, num_stages=2, threads=128, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        x: T.Tensor((K,), dtype),
        y: T.Tensor((M,), dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            A_tile = T.alloc_shared((block_M, block_K), dtype)
            x_tile = T.alloc_shared((block_K,), dtype)
            partial = T.alloc_fragment((block_M, block_K), accum_dtype)
            y_acc = T.alloc_fragment((block_M,), accum_dtype)

            T.clear(partial)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                # Columns past K are zero in both tiles, so their products vanish.
                T.copy(A[bx * block_M, ko * block_K], A_tile)
                T.copy(x[ko * block_K], x_tile)
                for i, j in T.Parallel(block_M, block_K):
                    partial[i, j] += T.Cast(accum_dtype, A_tile[i, j]) * T.Cast(accum_dtype, x_tile[j])
            T.reduce_sum(partial, y_acc, dim=1)
            T.copy(y_acc, y[bx * block_M])

    return main


def ref_program(A, x):
    return (A.astype(np.float32) @ x.astype(np.float32)).astype(np.float16)
