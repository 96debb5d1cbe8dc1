# A gemm over parts of its operands along K (TileLang's MLA kernels split the
# head dimension so: T.gemm(Q_shared[:, :D // 2], KV_shared[:, :D // 2], ...)):
# two gemms, one per half of K, accumulate A @ B^T. The wgmma plan (sm_90a)
# starts each half's descriptors at its K offset; the mma.sync plan shifts
# its ldmatrix addresses. Before, the plans read the whole buffers.
# kiln: test-bind M=64 N=64 K=128
import numpy as np
import tilelang
import tilelang.language as T


def gemm_k_slices(M, N, K, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared((N, K), dtype)
            acc = T.alloc_fragment((M, N), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s[:, 0 : K // 2], B_s[:, 0 : K // 2], acc, transpose_B=True, clear_accum=True)
            T.gemm(A_s[:, K // 2 :], B_s[:, K // 2 :], acc, transpose_B=True)
            T.copy(acc, C)

    return main


def ref_program(A, B):
    return A.astype(np.float32) @ B.astype(np.float32).T
