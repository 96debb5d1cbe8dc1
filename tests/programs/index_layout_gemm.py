# A pipelined GEMM whose A operand is stored in T.Layout order (row blocks of
# 8 interleaved with the columns): the staged global->shared copies of a
# laid-out tensor go element by element through the layout (no 16-byte
# cp.async, no TMA) while B keeps its vector copies.
# kiln: test-bind M=64 N=64 K=64 block_M=32 block_N=32 block_K=16 dtype=float16
import numpy as np
import tilelang
import tilelang.language as T


def index_layout_gemm(M, N, K, block_M, block_N, block_K, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            T.annotate_layout({A: T.Layout(A.shape, lambda i, k: [i // 8, k, i % 8])})
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[ko * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


def ref_program(A, B):
    # A arrives as its physical array: [M // 8, K, 8].
    M, K = A.shape
    a = A.astype(np.float32).reshape(M // 8, K, 8).transpose(0, 2, 1).reshape(M, K)
    return a @ B.astype(np.float32)
