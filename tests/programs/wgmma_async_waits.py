# TileLang's asynchronous Hopper gemm where it really is asynchronous (the
# sm_90a program on a GPU): T.wgmma_gemm and T.gemm(wg_wait=-1) leave their
# wgmma group in flight, and the program reads an accumulator only after a
# T.wait_wgmma(n) has completed it. Two gemms in flight, then wait(1): the
# first is done, the second may not be; a loop whose gemm, issued at the end
# of an iteration, is waited for at the top of the next (the MLA kernels'
# rotated QK); a register-A gemm whose fragment the loop rescales once the
# gemm is done; and a gemm that waits for itself to one group in flight
# (wg_wait=1). Every value read is the one the synchronous program computes.
# kiln: test-bind M=64 N=64 K=64
import numpy as np
import tilelang
import tilelang.language as T


def wgmma_async_waits(M, N, K, dtype=T.float16):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B1: T.Tensor((N, K), dtype),
        B2: T.Tensor((N, K), dtype),
        V: T.Tensor((N, N), dtype),
        X: T.Tensor((M, N), dtype),
        C1: T.Tensor((M, N), T.float32),
        C2: T.Tensor((M, N), T.float32),
        C3: T.Tensor((M, N), T.float32),
        C4: T.Tensor((M, N), T.float32),
    ):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), dtype)
            B1_s = T.alloc_shared((N, K), dtype)
            B2_s = T.alloc_shared((N, K), dtype)
            V_s = T.alloc_shared((N, N), dtype)
            acc1 = T.alloc_fragment((M, N), T.float32)
            acc2 = T.alloc_fragment((M, N), T.float32)
            acc3 = T.alloc_fragment((M, N), T.float32)
            P = T.alloc_fragment((M, N), dtype)
            T.copy(A, A_s)
            T.copy(B1, B1_s)
            T.copy(B2, B2_s)
            T.copy(V, V_s)
            T.wgmma_gemm(A_s, B1_s, acc1, transpose_B=True, clear_accum=True)
            T.wgmma_gemm(A_s, B2_s, acc2, transpose_B=True, clear_accum=True)
            T.wait_wgmma(1)
            T.copy(acc1, C1)
            T.wait_wgmma(0)
            T.copy(acc2, C2)

            # acc1 = A B1^T, then three times: acc1 = acc1 / 2 + A B2^T, and
            # acc3 += P V with P = X, X / 2, X / 4 (exact in 16 bits).
            T.clear(acc3)
            T.copy(X, P)
            T.gemm(A_s, B1_s, acc1, transpose_B=True, clear_accum=True, wg_wait=-1)
            for j in T.serial(3):
                T.wait_wgmma(0)
                if j > 0:
                    for i, k in T.Parallel(M, N):
                        P[i, k] = P[i, k] * T.float16(0.5)
                T.wgmma_gemm(P, V_s, acc3)
                for i, k in T.Parallel(M, N):
                    acc1[i, k] = acc1[i, k] * 0.5
                T.gemm(A_s, B2_s, acc1, transpose_B=True, wg_wait=1)
            T.wait_wgmma(0)
            T.copy(acc1, C3)
            T.copy(acc3, C4)

    return main


def ref_program(A, B1, B2, V, X):
    a = A.astype(np.float32)
    c1 = a @ B1.astype(np.float32).T
    c2 = a @ B2.astype(np.float32).T
    acc1 = c1.copy()
    for _ in range(3):
        acc1 = acc1 * 0.5 + c2
    acc3 = 1.75 * (X.astype(np.float32) @ V.astype(np.float32))
    return c1, c2, acc1, acc3
