# T.reinterpret: the bits of a value as another dtype of the same width
# (TileLang's topk selector orders floats by their bits so): float32 as
# uint32, float16 as uint16 (then shifted), and a sign flip through int32.
# Checked against NumPy's views on the CPU target; sm_90 builds it with
# NVRTC (kiln::rt::bit_cast).
# kiln: test-bind N=64
import numpy as np
import tilelang
import tilelang.language as T


def reinterpret_bits(N):
    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), H: T.Tensor((N,), T.float16), U: T.Tensor((N,), T.uint32), V: T.Tensor((N,), T.uint16), W: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(N):
                U[i] = T.reinterpret(X[i], T.uint32)
                V[i] = T.reinterpret(H[i], T.uint16) >> 8
                W[i] = T.reinterpret(T.reinterpret(X[i], T.int32) ^ T.int32(-2147483648), T.float32)

    return main


def ref_program(X, H):
    return X.view(np.uint32), H.view(np.uint16) >> 8, -X
