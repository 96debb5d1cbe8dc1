# A gemm whose A operand is a fragment (registers), as attention's P @ V and
# the MLA kernels' T.wgmma_gemm(acc_s_cast, KV_shared, acc_o) are: S = Q K^T
# from shared memory, P = S * scale cast to 16 bits in registers, then
# O = P V with P as the register A operand; a second register A comes from
# shared memory (T.copy into a fragment) and accumulates X V on top. On
# Hopper both are wgmma's register form: each k-step's 8 registers of the
# accumulator layout of (M x K) are its A fragment. M = 128 over one
# warpgroup is two 64-row atoms, so the second atom's registers start K / 2
# elements further.
# kiln: test-bind M=128 N=64 D=64 threads=128
import numpy as np
import tilelang
import tilelang.language as T


def wgmma_register_a(M, N, D, threads, dtype=T.float16):
    scale = 0.125

    @T.prim_func
    def main(
        Q: T.Tensor((M, D), dtype),
        K: T.Tensor((N, D), dtype),
        V: T.Tensor((N, D), dtype),
        X: T.Tensor((M, N), dtype),
        Out: T.Tensor((M, D), T.float32),
    ):
        with T.Kernel(1, threads=threads) as bx:
            Q_s = T.alloc_shared((M, D), dtype)
            K_s = T.alloc_shared((N, D), dtype)
            V_s = T.alloc_shared((N, D), dtype)
            X_s = T.alloc_shared((M, N), dtype)
            S = T.alloc_fragment((M, N), T.float32)
            P = T.alloc_fragment((M, N), dtype)
            X_f = T.alloc_fragment((M, N), dtype)
            O = T.alloc_fragment((M, D), T.float32)
            T.copy(Q, Q_s)
            T.copy(K, K_s)
            T.copy(V, V_s)
            T.copy(X, X_s)
            T.clear(S)
            T.gemm(Q_s, K_s, S, transpose_B=True)
            for i, j in T.Parallel(M, N):
                S[i, j] = S[i, j] * scale
            T.copy(S, P)
            T.clear(O)
            T.gemm(P, V_s, O)
            T.copy(X_s, X_f)
            T.gemm(X_f, V_s, O)
            T.copy(O, Out)

    return main


def ref_program(Q, K, V, X):
    f = np.float32
    p = ((Q.astype(f) @ K.astype(f).T) * f(0.125)).astype(np.float16).astype(f)
    return p @ V.astype(f) + X.astype(f) @ V.astype(f)
