# C = A @ B with a producer warpgroup: warpgroup 1 loads each k-tile with TMA
# into one shared tile pair, warpgroup 0 multiplies it; two mbarriers hand the
# tiles back and forth (TileLang's explicit T.ws / T.tma_copy / barrier style).
# kiln: bind M=4096 N=4096 K=4096 block_M=128 block_N=128 block_K=64
# kiln: test-bind M=200 N=136 K=200 block_M=128 block_N=128 block_K=64
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm_ws_barrier(A, B, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
        A_tile = T.alloc_shared((block_M, block_K), dtype)
        B_tile = T.alloc_shared((block_K, block_N), dtype)
        C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)
        # Each phase completes after all 128 threads of one warpgroup arrived
        # (and, for `loaded`, after the TMA bytes landed).
        loaded = T.alloc_barrier(arrive_count=128)
        consumed = T.alloc_barrier(arrive_count=128)

        with T.ws(0):
            T.clear(C_acc)

        for ko in T.serial(T.ceildiv(K, block_K)):
            with T.ws(1):
                # The first wait passes at once: parity 1 is the phase before the first.
                T.barrier_wait(consumed, (ko + 1) % 2)
                T.tma_copy(A[by * block_M, ko * block_K], A_tile, barrier=loaded)
                T.tma_copy(B[ko * block_K, bx * block_N], B_tile, barrier=loaded)
                T.barrier_arrive(loaded)
            with T.ws(0):
                T.barrier_wait(loaded, ko % 2)
                T.gemm(A_tile, B_tile, C_acc)
                T.barrier_arrive(consumed)

        with T.ws(0):
            T.copy(C_acc, C[by * block_M, bx * block_N])

    return C


def ref_program(A, B):
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(A.dtype)
