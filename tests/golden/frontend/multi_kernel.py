# A program of several T.Kernel blocks: each is a kernel of its own, launched
# in order over the same parameters; T.alloc_global is a workspace they share
# (docs/design/multi-kernel.md). Split-K row sums: the first kernel writes
# partial sums into the workspace, the second adds them up.
# RUN: kiln-opt %s --entry row_sums --bind M=64 --bind N=256 --bind splits=4 | FileCheck %s --check-prefix=IR
# RUN: kiln-opt %s --entry row_sums --bind M=64 --bind N=256 --bind splits=4 --emit=cuda --target cuda:sm_90 \
# RUN:   --launch-json %t.json | FileCheck %s --check-prefix=CUDA
# RUN: FileCheck %s --check-prefix=JSON < %t.json
# RUN: kiln-opt %s --entry row_sums --bind M=64 --bind N=256 --bind splits=4 --emit=cpp --target cpu \
# RUN:   | FileCheck %s --check-prefix=CPU
# The text IR prints and parses back, and the key covers the second kernel
# and the workspaces.
# RUN: kiln-opt %s --entry row_sums --bind M=64 --bind N=256 --bind splits=4 -o %t.kir
# RUN: kiln-opt %t.kir | FileCheck %s --check-prefix=IR
# RUN: kiln-opt %t.kir --hash > %t.h1
# RUN: sed 's/kernel grid(2)/kernel grid(1)/' %t.kir > %t.b.kir
# RUN: kiln-opt %t.b.kir --hash > %t.h2
# RUN: not cmp -s %t.h1 %t.h2
# RUN: sed 's/workspace partial: float32\[64, 4\]/workspace partial: float32[64, 5]/' %t.kir > %t.c.kir
# RUN: kiln-opt %t.c.kir --hash > %t.h3
# RUN: not cmp -s %t.h1 %t.h3
# A pass pipeline runs on each kernel and puts the program back together.
# RUN: kiln-opt %t.kir --passes=verify,simplify | FileCheck %s --check-prefix=IR
# A kernel function that defines several @T.prim_func and returns one of
# them compiles the one it returns (TileLang's split / no-split variants).
# RUN: kiln-opt %s --entry pick --bind split=True | FileCheck %s --check-prefix=PICK-SPLIT
# RUN: kiln-opt %s --entry pick --bind split=False | FileCheck %s --check-prefix=PICK-ONE
# T.alloc_buffer outside a kernel is a workspace too (its default scope is global).
# RUN: kiln-opt %s --entry buffer_workspace | FileCheck %s --check-prefix=BUFFER
# Located errors.
# RUN: not kiln-opt %s --entry global_in_kernel 2>&1 | FileCheck %s --check-prefix=INKERNEL
# RUN: not kiln-opt %s --entry global_bad_scope 2>&1 | FileCheck %s --check-prefix=SCOPE
import tilelang
import tilelang.language as T


def row_sums(M, N, splits):
    chunk = N // splits

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), out: T.Tensor((M,), T.float32)):
        partial = T.alloc_global([M, splits], T.float32)
        with T.Kernel(M, splits, threads=32) as (bx, by):
            acc = T.alloc_var(T.float32)
            T.clear(acc)
            for k in T.serial(chunk):
                acc += A[bx, by * chunk + k]
            partial[bx, by] = acc
        with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
            for i in T.Parallel(32):
                total = T.alloc_var(T.float32)
                total = 0.0
                for s in T.serial(splits):
                    total += partial[bx * 32 + i, s]
                out[bx * 32 + i] = total

    return main


def pick(split):
    @T.prim_func
    def two(A: T.Tensor((64,), T.float32)):
        w = T.alloc_global([64], T.float32)
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                w[bx * 32 + i] = A[bx * 32 + i] * 2.0
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                A[bx * 32 + i] = w[bx * 32 + i] + 1.0

    @T.prim_func
    def one(A: T.Tensor((64,), T.float32)):
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                A[bx * 32 + i] = A[bx * 32 + i] * 2.0 + 1.0

    if split:
        return two
    else:
        return one


def buffer_workspace():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        tmp = T.alloc_buffer([64])
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                tmp[bx * 32 + i] = A[bx * 32 + i]
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                A[bx * 32 + i] = tmp[63 - bx * 32 - i]

    return main


def global_in_kernel():
    @T.prim_func
    def main(A: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            w = T.alloc_global([4], T.float32)
            A[0] = w[0]

    return main


def global_bad_scope():
    @T.prim_func
    def main(A: T.Tensor((4,), T.float32)):
        w = T.alloc_global([4], T.float32, "shared")
        with T.Kernel(1, threads=32) as bx:
            A[0] = w[0]

    return main

# IR: workspace partial: float32[64, 4]
# IR: kernel grid(64, 4) threads(32)
# IR: kernel grid(2) threads(32)
# CUDA: extern "C" __global__ void __launch_bounds__(32) kiln_kernel_0(float* __restrict__ A, float* __restrict__ out_, float* __restrict__ partial) {
# CUDA: extern "C" __global__ void __launch_bounds__(32) kiln_kernel_1(float* __restrict__ A, float* __restrict__ out_, float* __restrict__ partial) {
# JSON: {"symbol": "kiln_kernel_0", {{.*}}"grid": [64, 4, 1], {{.*}}"workspaces": [{"name": "partial", "dtype": "float32", "shape": [64, 4]}], "next_kernels": [{"symbol": "kiln_kernel_1", "grid": [2, 1, 1], "block": [32, 1, 1], "dynamic_smem_bytes": 0}]}
# CPU: void kiln_body_0(float* __restrict__ A, float* __restrict__ out_, float* __restrict__ partial) {
# CPU: extern "C" int kiln_kernel_0(
# CPU: float* partial = *static_cast<float**>(kiln_args[2]);
# CPU: void kiln_body_1(
# CPU: extern "C" int kiln_kernel_1(
# PICK-SPLIT: program @pick
# PICK-SPLIT: workspace w: float32[64]
# PICK-SPLIT: kernel grid(2)
# PICK-SPLIT: kernel grid(2)
# PICK-ONE: program @pick
# PICK-ONE-NOT: workspace
# PICK-ONE: kernel grid(2)
# PICK-ONE-NOT: kernel grid
# BUFFER: workspace tmp: float32[64]
# BUFFER: kernel grid(2)
# BUFFER: kernel grid(2)
# INKERNEL: multi_kernel.py:{{[0-9]+}}:{{[0-9]+}}: T.alloc_global inside T.Kernel is not supported
# SCOPE: multi_kernel.py:{{[0-9]+}}:{{[0-9]+}}: T.alloc_global's scope must be "global"
