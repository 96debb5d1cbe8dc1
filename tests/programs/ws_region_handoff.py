# The same hand-over as thread_branch_handoff.py, written with T.ws regions:
# consecutive regions on other warpgroups run at once, ordered only by the
# program's mbarriers (lower_hopper_ops.cc, LowerRegionRun). Until
# 2026-12-06 the lowering put a block barrier between the two regions for
# the shared tile's write-after-read; warpgroup 1 waited there for
# warpgroup 0, which waited in its region for warpgroup 1's arrival (the CPU
# target reported "sync_threads reached by 128 of 256 threads").
# kiln: test-bind M=64 N=32
import numpy as np
import tilelang
import tilelang.language as T


def ws_region_handoff(M, N, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=256) as bx:
            X_s = T.alloc_shared((M, N), dtype)
            c_f = T.alloc_fragment((M, N), dtype)
            p_f = T.alloc_fragment((M, N), dtype)
            ready = T.alloc_barrier(arrive_count=128)
            with T.ws(0):
                T.barrier_wait(ready, 0)
                T.copy(X_s, c_f)
                for i, j in T.Parallel(M, N):
                    c_f[i, j] = c_f[i, j] * 3
                T.copy(c_f, Out)
            with T.ws(1):
                T.copy(A, p_f)
                for i, j in T.Parallel(M, N):
                    p_f[i, j] = p_f[i, j] + 1
                T.copy(p_f, X_s)
                T.barrier_arrive(ready)

    return main


def ref_program(A):
    return (A + 1) * 3
