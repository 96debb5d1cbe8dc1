# A fragment indexed element by element (outside T.Parallel, or inside by
# indices that are not distinct loop variables) gets the fully replicated
# layout: every thread holds every element, row-major in its registers, and
# reads it by the element's place. A fragment that another statement spreads
# over threads (a gemm accumulator) cannot be indexed so: a located error.
# RUN: kiln-opt %s --entry mask_and_scalar --bind N=96 --passes=layout-inference | FileCheck %s --check-prefix=LAYOUT
# RUN: kiln-opt %s --entry mask_and_scalar --bind N=96 --passes=layout-inference,lower-tile-ops,simplify | FileCheck %s --check-prefix=LOWER
# RUN: not kiln-opt %s --entry gemm_acc_read --passes=layout-inference 2>&1 | FileCheck %s --check-prefix=GEMM
# RUN: not kiln-opt %s --entry racy_write --passes=layout-inference,lower-tile-ops 2>&1 | FileCheck %s --check-prefix=RACY
import tilelang
import tilelang.language as T


@tilelang.jit
def mask_and_scalar(X, Mask):
    N = T.const("N")
    X: T.Tensor((N,), T.float32)
    Mask: T.Tensor((6,), T.int32)
    Y = T.empty((N,), T.float32)
    with T.Kernel(1, threads=64) as bx:
        mask = T.alloc_fragment((6,), T.int32)
        x = T.alloc_fragment((N,), T.float32)
        s = T.alloc_fragment((1,), T.float32)
        T.copy(Mask, mask)
        T.copy(X, x)
        T.reduce_sum(x, s, dim=0)
        for k in T.serial(6):
            if mask[k] != 0:
                for i in T.Parallel(N):
                    x[i] = x[i] - s[0] + mask[5 - k]
        T.copy(x, Y)
    return Y


# LAYOUT: attr layout.mask = "threads(-:64) regs(0:6@1)"
# LAYOUT: attr layout.s = "threads(-:64) regs()"
# LAYOUT: attr layout.x = "threads(0:64@4) regs(0:4@1)"
# The mask lands whole in every thread (no first-replica guard on the
# load); `mask[k]` and `mask[5 - k]` read registers k and 5 - k (wrapped
# into the fragment), and `s[0]` register 0, inside the loop over x.
# LOWER: alloc mask: local int32[6]
# LOWER: call copy_8(&kiln_v{{[0-9]+}}[0], &Mask[cast<int64>(kiln_r{{[0-9]+}} * 2)])
# LOWER: for k in serial(6) {
# LOWER-NEXT: if mask[k % 6] != 0 {
# LOWER: x[kiln_r{{[0-9]+}}] = x[kiln_r{{[0-9]+}}] - s[0] + cast<float32>(mask[(5 - k) % 6])


@tilelang.jit
def gemm_acc_read(A, B):
    A: T.Tensor((64, 32), T.float16)
    B: T.Tensor((32, 64), T.float16)
    C = T.empty((64, 64), T.float32)
    with T.Kernel(1, threads=128) as bx:
        a = T.alloc_shared((64, 32), T.float16)
        b = T.alloc_shared((32, 64), T.float16)
        acc = T.alloc_fragment((64, 64), T.float32)
        T.copy(A, a)
        T.copy(B, b)
        T.gemm(a, b, acc, clear_accum=True)
        if acc[0, 0] > 0:
            T.copy(acc, C)
    return C


# GEMM: replicated-fragments.py:[[@LINE-5]]:12: fragment 'acc': the read outside a T.Parallel loop needs every element in every thread (a fully replicated layout), but gemm's accumulator spreads it over threads as threads(


@tilelang.jit
def racy_write(X):
    X: T.Tensor((64,), T.float32)
    Y = T.empty((64,), T.float32)
    with T.Kernel(1, threads=64) as bx:
        x = T.alloc_fragment((64,), T.float32)
        last = T.alloc_fragment((1,), T.float32)
        T.copy(X, x)
        last[0] = 0
        for i in T.Parallel(64):
            last[0] = x[i]
        for i in T.Parallel(64):
            x[i] = x[i] + last[0]
        T.copy(x, Y)
    return Y


# RACY: replicated-fragments.py:[[@LINE-7]]:13: fragment 'last' is written by indices that are not distinct variables of the enclosing T.Parallel loop, whose iterations are spread over threads
