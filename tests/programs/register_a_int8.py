# A gemm whose A operand is an int8 fragment computed in registers: layout
# inference gives it the m16n8k32 A-register layout (4 consecutive columns
# from 4*(l%4) and from 4*(l%4) + 16, in rows l/4 and l/4 + 8) and the
# lowering feeds it to mma.sync with int32 accumulation. B is N x K
# (transpose_B), the layout int8 tensor-core operands come in.
# kiln: test-bind M=32 N=64 K=64
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def register_a_int8(A, B, threads=128):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), T.int8)
    B: T.Tensor((N, K), T.int8)
    C = T.empty((M, N), T.int32)

    with T.Kernel(1, threads=threads) as bx:
        a_s = T.alloc_shared((M, K), T.int8)
        b_s = T.alloc_shared((N, K), T.int8)
        a_f = T.alloc_fragment((M, K), T.int8)
        c_f = T.alloc_fragment((M, N), T.int32)
        T.copy(A, a_s)
        T.copy(B, b_s)
        for i, k in T.Parallel(M, K):
            a_f[i, k] = T.max(a_s[i, k], -100)
        T.clear(c_f)
        T.gemm(a_f, b_s, c_f, transpose_B=True)
        T.copy(c_f, C)

    return C


def ref_program(A, B):
    a = np.maximum(A.astype(np.int64), -100)
    return (a @ B.astype(np.int64).T).astype(np.int32)
