# A gemm whose A operand is a float32 fragment (tf32 on the tensor cores),
# computed in registers by a T.Parallel loop: layout inference gives it the
# m16n8k8 A-register layout (rows l/4 and l/4 + 8 of columns l%4 and l%4 + 4)
# and the lowering feeds it to mma.sync without a trip through shared memory.
# Both operands are read as tf32 (the low 13 bits ignored).
# kiln: test-bind M=64 N=32 K=48
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def register_a_tf32(A, B, threads=128):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), T.float32)
    B: T.Tensor((K, N), T.float32)
    C = T.empty((M, N), T.float32)

    with T.Kernel(1, threads=threads) as bx:
        a_s = T.alloc_shared((M, K), T.float32)
        b_s = T.alloc_shared((K, N), T.float32)
        a_f = T.alloc_fragment((M, K), T.tfloat32)
        c_f = T.alloc_fragment((M, N), T.float32)
        T.copy(A, a_s)
        T.copy(B, b_s)
        for i, k in T.Parallel(M, K):
            a_f[i, k] = a_s[i, k] * 2 - 1
        T.clear(c_f)
        T.gemm(a_f, b_s, c_f)
        T.copy(c_f, C)

    return C


def _tf32(x):
    return (np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def ref_program(A, B):
    a = _tf32(A.astype(np.float32) * np.float32(2) - np.float32(1)).astype(np.float64)
    return (a @ _tf32(B).astype(np.float64)).astype(np.float32)
