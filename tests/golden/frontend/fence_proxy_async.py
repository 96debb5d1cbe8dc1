# T.fence_proxy_async (TileLang's proxy fence, as in warp_specialize's flashmla
# example after shared-memory stores that TMA or wgmma read next) is a call
# of the fence_proxy_async intrinsic where it stands: fence.proxy.async on
# CUDA, nothing on the CPU target. It takes no arguments and belongs inside a
# kernel.
# RUN: kiln-opt %s --entry fenced --emit=ir | FileCheck %s --check-prefix=IR
# RUN: kiln-opt %s --entry fenced --target cuda:sm_90 --emit=cuda | FileCheck %s --check-prefix=CUDA
# RUN: kiln-opt %s --entry fenced --target cpu --emit=cpp | FileCheck %s --check-prefix=CPU
# RUN: not kiln-opt %s --entry with_argument --emit=ir 2>&1 | FileCheck %s --check-prefix=ARGS
# RUN: not kiln-opt %s --entry outside --emit=ir 2>&1 | FileCheck %s --check-prefix=OUTSIDE
import tilelang
import tilelang.language as T

# IR: copy A[0 +: 64, 0 +: 64] -> A_s[0 +: 64, 0 +: 64]
# IR-NEXT: call fence_proxy_async()
# IR-NEXT: copy A_s[0 +: 64, 0 +: 64] -> B[0 +: 64, 0 +: 64]
# CUDA: kiln::rt::fence_proxy_async();
# CPU: kiln::rt::fence_proxy_async();
# ARGS: fence_proxy_async.py:39:33: T.fence_proxy_async() takes 0 positional arguments
# OUTSIDE: fence_proxy_async.py:47:9: T.fence_proxy_async is only allowed inside a T.Kernel block


def fenced():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            T.copy(A, A_s)
            T.fence_proxy_async()
            T.copy(A_s, B)

    return main


def with_argument():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            T.fence_proxy_async(1)

    return main


def outside():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        T.fence_proxy_async()
        with T.Kernel(1, threads=128) as bx:
            A[0, 0] = A[0, 0]

    return main
