# T.wgmma_gemm / T.wait_wgmma (TileLang's asynchronous Hopper gemm) are a gemm
# with wg_wait=-1 and a wait_wgmma statement: on sm_90a the gemm commits its
# wgmma group without waiting, and the wait waits, then pins the accumulator's
# registers behind it. A clear_accum known only at run time is a guarded zero
# fill before an accumulating gemm; other targets, extra arguments and a
# negative wait are located errors, and so is a gemm on part of a buffer other
# than a K range.
# RUN: kiln-opt %s --entry async_gemm --target cuda:sm_90 --emit=ir | FileCheck %s --check-prefix=IR
# RUN: kiln-opt %s --entry async_gemm --target cuda:sm_90a --emit=cuda | FileCheck %s --check-prefix=CUDA
# RUN: not kiln-opt %s --entry async_gemm --target cuda:sm_80 --emit=ir 2>&1 | FileCheck %s --check-prefix=SM80
# RUN: not kiln-opt %s --entry bad_args --emit=ir 2>&1 | FileCheck %s --check-prefix=ARGS
# RUN: not kiln-opt %s --entry bad_wait --emit=ir 2>&1 | FileCheck %s --check-prefix=WAIT
# RUN: not kiln-opt %s --entry part_of_buffer --target cuda:sm_90 --emit=cuda 2>&1 | FileCheck %s --check-prefix=PART
# RUN: kiln-opt %s --entry pipelined_async --target cuda:sm_90a --emit=cuda | FileCheck %s --check-prefix=PIPE
# RUN: kiln-opt %s --entry in_flight_at_loop_end --target cuda:sm_90a --emit=cuda | FileCheck %s --check-prefix=DRAIN
import tilelang
import tilelang.language as T


def async_gemm(M=128, N=64, K=96, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, bk), T.float16)
            B_s = T.alloc_shared((N, bk), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            for j in T.serial(K // bk):
                T.copy(A[0, j * bk], A_s)
                T.copy(B[0, j * bk], B_s)
                T.wgmma_gemm(A_s, B_s, acc, transpose_B=True, clear_accum=(j == 0))
                T.wait_wgmma(0)
            T.copy(acc, C)

    return main

# IR: for j in serial(3) {
# IR: if j == 0 {
# IR-NEXT: fill acc[0 +: 128, 0 +: 64], 0.0
# IR-NEXT: }
# IR-NEXT: gemm A_s[0 +: 128, 0 +: 32], B_s[0 +: 64, 0 +: 32], acc[0 +: 128, 0 +: 64] transpose_a=false transpose_b=true clear_accum=false k_pack=1 policy=square wg_wait=-1
# IR-NEXT: wait_wgmma 0
# CUDA: wgmma_commit();
# CUDA-NEXT: wgmma_wait<0>();
# CUDA-NEXT: wgmma_fence_regs<64>((&acc[0]));
# SM80: wgmma_gemm.py:30:17: T.wgmma_gemm needs a Hopper target (cuda:sm_90 or cuda:sm_90a), not cuda:sm_80; T.gemm picks the target's instruction


def bad_args(M=64, N=64, K=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((K, N), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            T.wgmma_gemm(A_s, B_s, acc, wg_wait=1)

    return main

# ARGS: wgmma_gemm.py:55:41: T.wgmma_gemm() got an unexpected keyword argument 'wg_wait'


def bad_wait(M=64, N=64, K=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((K, N), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            T.wgmma_gemm(A_s, B_s, acc)
            T.wait_wgmma(-1)

    return main

# WAIT: wgmma_gemm.py:70:26: T.wait_wgmma expects a compile-time integer 0..7 (the number of wgmma groups left in flight), got -1


def part_of_buffer(M=32, N=64, K=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((2 * M, K), T.float16)
            B_s = T.alloc_shared((K, N), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            T.copy(A, A_s[0:M, :])
            T.copy(B, B_s)
            T.clear(acc)
            T.gemm(A_s[0:M, :], B_s, acc)
            T.copy(acc, C)

    return main

# PART: wgmma_gemm.py:87:13: gemm: operand 'A_s' is a part of the buffer in dimension 0; a shared operand may be a part along K only


# Inside one of Kiln's own pipelines (here the warp-specialized loop, TMA into
# a two-stage ring) the gemm waits for itself at once: the ring's release of a
# stage assumes it. The program's wait then has nothing left to wait for.
def pipelined_async(M=256, N=128, K=256, bk=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(M // 128, threads=128) as bx:
            A_s = T.alloc_shared((128, bk), T.float16)
            B_s = T.alloc_shared((N, bk), T.float16)
            acc = T.alloc_fragment((128, N), T.float32)
            T.clear(acc)
            for j in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[bx * 128, j * bk], A_s)
                T.copy(B[0, j * bk], B_s)
                T.wgmma_gemm(A_s, B_s, acc, transpose_B=True)
                T.wait_wgmma(0)
            T.copy(acc, C[bx * 128, 0])

    return main

# PIPE: for (int j = 0; j < 4; ++j) {
# PIPE: mbarrier_wait(
# PIPE: wgmma_commit();
# PIPE-NEXT: wgmma_wait<0>();
# PIPE-NOT: wgmma_wait
# PIPE-NOT: wgmma_fence_regs
# PIPE: } else {


# A serial loop whose body ends with a gemm in flight waits for it in its last
# iteration (ptxas moved accumulator reads above a wait after a loop); an
# unrolled loop keeps its gemms in flight past its end, as written.
def in_flight_at_loop_end(M=64, N=64, K=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((N, K), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            acc2 = T.alloc_fragment((M, N), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(acc)
            T.clear(acc2)
            for j in T.serial(3):
                T.wgmma_gemm(A_s, B_s, acc, transpose_B=True)
            for u in T.unroll(2):
                T.wgmma_gemm(A_s, B_s, acc2, transpose_B=True)
            T.wait_wgmma(0)
            for i, k in T.Parallel(M, N):
                acc[i, k] = acc[i, k] + acc2[i, k]
            T.copy(acc, C)

    return main

# DRAIN: for (int j = 0; j < 3; ++j) {
# DRAIN: wgmma_commit();
# DRAIN-NEXT: if (((j + 1) == 3)) {
# DRAIN-NEXT: wgmma_wait<0>();
# DRAIN-NEXT: wgmma_fence_regs<32>((&acc[0]));
# DRAIN: for (int u = 0; u < 2; ++u) {
# DRAIN: wgmma_commit();
# DRAIN-NEXT: }
# DRAIN-NEXT: wgmma_wait<0>();
