# An if / elif / else chain on the thread index (tx = T.get_thread_binding())
# whose branches cover whole warpgroups, as TileLang's warp-specialized
# kernels write them (examples/warp_specialize/..._flashmla.py,
# deepseek_mla/example_mla_decode_ws.py): each branch's tile ops run on the
# branch's own 128 threads (compiler/passes/thread_regions.cc). Warpgroup 0
# multiplies, warpgroup 1 takes row maxima, warpgroup 2 scales and adds its
# thread count; laid out over the whole block, each branch would leave the
# rows of the other warpgroups' threads unwritten.
# kiln: test-bind M=64 N=64 K=64
import numpy as np
import tilelang
import tilelang.language as T


def thread_branch_regions(M, N, K, dtype=T.float16):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), T.float32),
        R: T.Tensor((M,), T.float32),
        S: T.Tensor((M, K), T.float32),
    ):
        with T.Kernel(1, threads=384) as bx:
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared((K, N), dtype)
            acc = T.alloc_fragment((M, N), T.float32)
            a_f = T.alloc_fragment((M, K), T.float32)
            row = T.alloc_fragment((M,), T.float32)
            s_f = T.alloc_fragment((M, K), T.float32)
            tx = T.get_thread_binding()
            T.copy(A, A_s)
            T.copy(B, B_s)
            if tx < 128:
                T.clear(acc)
                T.gemm(A_s, B_s, acc)
                T.copy(acc, C)
            elif tx >= 128 and tx < 256:
                T.copy(A_s, a_f)
                T.reduce_max(a_f, row, dim=1)
                T.copy(row, R)
            else:
                T.copy(A_s, s_f)
                for i, j in T.Parallel(M, K):
                    s_f[i, j] = s_f[i, j] * 2 + (tx - tx % 128) / 256
                T.copy(s_f, S)

    return main


def ref_program(A, B):
    a = A.astype(np.float32)
    return a @ B.astype(np.float32), a.max(axis=1), a * 2 + 1
