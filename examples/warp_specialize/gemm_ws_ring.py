# C = A @ B over a two-slot ring: the producer warpgroup (1) fills slot 0 with
# even k-tiles and slot 1 with odd ones while the consumer (0) multiplies the
# other slot. Barrier s is "slot s loaded", barrier 2 + s "slot s consumed";
# the parity a side waits for flips every time it comes back to a slot.
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=128 block_K=64
# kiln: test-bind M=136 N=200 K=328 block_M=128 block_N=128 block_K=64
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm_ws_ring(A, B, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
        A0 = T.alloc_shared((block_M, block_K), dtype)
        B0 = T.alloc_shared((block_K, block_N), dtype)
        A1 = T.alloc_shared((block_M, block_K), dtype)
        B1 = T.alloc_shared((block_K, block_N), dtype)
        C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)
        bars = T.alloc_barrier([128] * 4)

        with T.ws(0):
            T.clear(C_acc)

        # Two k-tiles per round; a tile past K arrives as zeros and adds nothing.
        for r in T.Pipelined(T.ceildiv(K, 2 * block_K), num_stages=0):
            with T.ws(1):
                T.mbarrier_wait_parity(mbarrier=bars[2], parity=(r + 1) % 2)
                T.tma_copy(A[by * block_M, (2 * r) * block_K], A0, barrier=bars[0])
                T.tma_copy(B[(2 * r) * block_K, bx * block_N], B0, barrier=bars[0])
                T.mbarrier_arrive(mbarrier=bars[0])
                T.mbarrier_wait_parity(mbarrier=bars[3], parity=(r + 1) % 2)
                T.tma_copy(A[by * block_M, (2 * r + 1) * block_K], A1, barrier=bars[1])
                T.tma_copy(B[(2 * r + 1) * block_K, bx * block_N], B1, barrier=bars[1])
                T.mbarrier_arrive(mbarrier=bars[1])
            with T.ws(0):
                T.mbarrier_wait_parity(mbarrier=bars[0], parity=r % 2)
                T.gemm(A0, B0, C_acc)
                T.mbarrier_arrive(mbarrier=bars[2])
                T.mbarrier_wait_parity(mbarrier=bars[1], parity=r % 2)
                T.gemm(A1, B1, C_acc)
                T.mbarrier_arrive(mbarrier=bars[3])

        with T.ws(0):
            T.copy(C_acc, C[by * block_M, bx * block_N])

    return C


def ref_program(A, B):
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(A.dtype)
