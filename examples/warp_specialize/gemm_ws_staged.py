# C = A @ B over an S-slot ring held in staged tiles A_s[slot, :, :]: the
# producer warpgroup (1) loads k-tile ko into slot ko % S once the consumer
# released it; the consumer (0) multiplies slot ko % S once it is loaded.
# Barrier s: slot s loaded; barrier S + s: slot s released.
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=128 block_K=64 stages=3
# kiln: test-bind M=136 N=200 K=456 block_M=128 block_N=128 block_K=64 stages=3
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm_ws_staged(A, B, block_M, block_N, block_K, stages=2, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
        A_s = T.alloc_shared((stages, block_M, block_K), dtype)
        B_s = T.alloc_shared((stages, block_K, block_N), dtype)
        C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)
        bars = T.alloc_barrier([128] * (2 * stages))

        with T.ws(0):
            T.clear(C_acc)

        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
            slot = ko % stages
            # The n-th visit of a slot waits for the phase of parity n % 2.
            visit = ko // stages
            with T.ws(1):
                T.mbarrier_wait_parity(bars[stages + slot], (visit + 1) % 2)
                T.tma_copy(A[by * block_M, ko * block_K], A_s[slot, :, :], barrier=bars[slot])
                T.tma_copy(B[ko * block_K, bx * block_N], B_s[slot, :, :], barrier=bars[slot])
                T.mbarrier_arrive(bars[slot])
            with T.ws(0):
                T.mbarrier_wait_parity(bars[slot], visit % 2)
                T.gemm(A_s[slot, :, :], B_s[slot, :, :], C_acc)
                T.mbarrier_arrive(bars[stages + slot])

        with T.ws(0):
            T.copy(C_acc, C[by * block_M, bx * block_N])

    return C


def ref_program(A, B):
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(A.dtype)
