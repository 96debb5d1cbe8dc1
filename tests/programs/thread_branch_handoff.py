# Branches on the thread index run at once and hand data over through an
# mbarrier, as warp-specialized kernels do: warpgroup 1 (the else branch)
# fills a shared tile and arrives; warpgroup 0 waits, then reads it. The
# branches are T.ws regions of one run (compiler/passes/thread_regions.cc,
# lower_hopper_ops.cc): a block barrier between them, which the shared
# tile's write-after-read would ask for between ordinary statements, would
# wait for warpgroup 0 while warpgroup 0 waits for warpgroup 1's arrival.
# kiln: test-bind M=64 N=32
import numpy as np
import tilelang
import tilelang.language as T


def thread_branch_handoff(M, N, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=256) as bx:
            X_s = T.alloc_shared((M, N), dtype)
            c_f = T.alloc_fragment((M, N), dtype)
            p_f = T.alloc_fragment((M, N), dtype)
            ready = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.barrier_wait(ready, 0)
                T.copy(X_s, c_f)
                for i, j in T.Parallel(M, N):
                    c_f[i, j] = c_f[i, j] * 3
                T.copy(c_f, Out)
            else:
                T.copy(A, p_f)
                for i, j in T.Parallel(M, N):
                    p_f[i, j] = p_f[i, j] + 1
                T.copy(p_f, X_s)
                T.barrier_arrive(ready)

    return main


def ref_program(A):
    return (A + 1) * 3
