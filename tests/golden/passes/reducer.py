# Reducers (T.alloc_reducer / T.finalize_reducer, compiler/ir/reducer.h):
# the tile IR marks the reducer with `annotate_layout r reducer_<op>` and
# finalizes it with an in-place reduce of dim -1; layout inference gives it
# the fully replicated layout, whatever the loops that update it; lowering
# updates each thread's own copy (a sum's contribution by the first
# replica of the loop's iteration only) and finalize combines the copies
# with a shfl_xor butterfly and one partial per warp in shared memory.
# Misuse is a located error.
# RUN: kiln-opt %s --entry gemv_like --passes=verify | FileCheck %s --check-prefix=TILE
# RUN: kiln-opt %s --entry gemv_like --passes=layout-inference | FileCheck %s --check-prefix=LAYOUT
# RUN: kiln-opt %s --entry gemv_like --passes=layout-inference,lower-tile-ops,simplify | FileCheck %s --check-prefix=LOWER
# RUN: kiln-opt %s --entry mixed_dtypes --passes=layout-inference,lower-tile-ops,simplify | FileCheck %s --check-prefix=MIXED
# RUN: not kiln-opt %s --entry not_a_reducer 2>&1 | FileCheck %s --check-prefix=NOTRED
# RUN: not kiln-opt %s --entry gemm_operand --passes=layout-inference 2>&1 | FileCheck %s --check-prefix=GEMM
# RUN: not kiln-opt %s --entry read_early --passes=layout-inference,lower-tile-ops 2>&1 | FileCheck %s --check-prefix=EARLY
# RUN: not kiln-opt %s --entry write_late --passes=layout-inference,lower-tile-ops 2>&1 | FileCheck %s --check-prefix=LATE
# RUN: not kiln-opt %s --entry bad_update --passes=layout-inference,lower-tile-ops 2>&1 | FileCheck %s --check-prefix=UPDATE
# RUN: not kiln-opt %s --entry sum_seed --passes=layout-inference,lower-tile-ops 2>&1 | FileCheck %s --check-prefix=SEED
# RUN: not kiln-opt %s --entry copy_early --passes=layout-inference,lower-tile-ops 2>&1 | FileCheck %s --check-prefix=COPY
# RUN: not kiln-opt %s --entry rep_none 2>&1 | FileCheck %s --check-prefix=REPNONE
# RUN: not kiln-opt %s --entry bitwise 2>&1 | FileCheck %s --check-prefix=BITWISE
import tilelang
import tilelang.language as T


@tilelang.jit
def gemv_like(A, x):
    A: T.Tensor((64, 128), T.float16)
    x: T.Tensor((128,), T.float16)
    o = T.empty((64,), T.float32)
    with T.Kernel(1, threads=128) as bx:
        acc = T.alloc_reducer(64, T.float32, replication="all")
        a = T.alloc_fragment((64, 128), T.float16)
        T.clear(acc)
        T.copy(A, a)
        for i, j in T.Parallel(64, 128):
            acc[i] += a[i, j] * x[j]
        T.finalize_reducer(acc)
        T.copy(acc, o)
    return o


# TILE: alloc acc: fragment float32[64]
# TILE-NEXT: annotate_layout acc reducer_sum
# TILE: reduce_sum acc[0 +: 64] -> acc[0 +: 64] dim=-1 clear=false
# LAYOUT: attr layout.acc = "threads(-:128) regs(0:64@1)"
# LOWER: alloc acc: local float32[64]
# The update: the loop follows `a`, the reducer is indexed element by
# element in each thread's own copy.
# LOWER: acc[{{.*}}] = acc[{{.*}}] +
# Finalize: five butterfly steps, then one partial per warp.
# LOWER: call shfl_xor(&[[TMP:kiln_tmp[0-9]+]][0], acc[[[R:kiln_r[0-9]+]]], 1)
# LOWER-NEXT: acc[[[R]]] = acc[[[R]]] + [[TMP]][0]
# LOWER: call shfl_xor(&[[TMP]][0], acc[[[R]]], 16)
# LOWER: call sync_threads()
# LOWER-NEXT: if thread_idx(0) % 32 == 0 {
# LOWER-NEXT: for [[W:kiln_r[0-9]+]] in unroll(64) {
# LOWER-NEXT: [[S:kiln_scratch[0-9]+]][[[W]] + thread_idx(0) // 32 * 64] = acc[[[W]]]
# LOWER: call sync_threads()
# LOWER-NEXT: for [[F:kiln_r[0-9]+]] in unroll(64) {
# LOWER-NEXT: acc[[[F]]] = [[S]][[[F]]] + [[S]][[[F]] + 64] + [[S]][[[F]] + 128] + [[S]][[[F]] + 192]


# An update whose value has another dtype than the reducer: the frontend's
# conversions around it are still the reducer's op.
@tilelang.jit
def mixed_dtypes(X):
    X: T.Tensor((64,), T.float32)
    Y = T.empty((64,), T.float16)
    with T.Kernel(1, threads=64) as bx:
        r = T.alloc_reducer((64,), T.float16)
        m = T.alloc_reducer((64,), T.float16, op="max")
        T.clear(r)
        T.fill(m, -T.infinity(T.float16))
        for i in T.Parallel(64):
            r[i] += X[i]
            m[i] = T.max(m[i], X[i])
        T.finalize_reducer(r)
        T.finalize_reducer(m)
        for i in T.Parallel(64):
            Y[i] = r[i] + m[i]
    return Y


# MIXED: r[{{.*}}] = cast<float16>(cast<float32>(r[{{.*}}]) + X[
# MIXED: m[{{.*}}] = {{.*}}max(


@tilelang.jit
def not_a_reducer(X):
    X: T.Tensor((64,), T.float32)
    with T.Kernel(1, threads=64) as bx:
        f = T.alloc_fragment((64,), T.float32)
        T.copy(X, f)
        T.finalize_reducer(f)


# NOTRED: reducer.py:[[@LINE-3]]:28: T.finalize_reducer expects a buffer made by T.alloc_reducer, got 'f'


@tilelang.jit
def gemm_operand(A, B):
    A: T.Tensor((64, 32), T.float16)
    B: T.Tensor((32, 64), T.float16)
    with T.Kernel(1, threads=128) as bx:
        a = T.alloc_shared((64, 32), T.float16)
        b = T.alloc_shared((32, 64), T.float16)
        acc = T.alloc_reducer((64, 64), T.float32)
        T.copy(A, a)
        T.copy(B, b)
        T.gemm(a, b, acc)


# GEMM: reducer.py:[[@LINE-3]]:{{[0-9]+}}: T.gemm: 'acc' is a reducer (T.alloc_reducer), which cannot be a T.gemm operand


@tilelang.jit
def read_early(X):
    X: T.Tensor((64,), T.float32)
    Y = T.empty((64,), T.float32)
    with T.Kernel(1, threads=64) as bx:
        r = T.alloc_reducer((64,), T.float32, "max")
        T.fill(r, -T.infinity(T.float32))
        for i in T.Parallel(64):
            r[i] = T.max(r[i], X[i])
        for i in T.Parallel(64):
            Y[i] = r[i]
        T.finalize_reducer(r)
    return Y


# EARLY: reducer.py:[[@LINE-5]]:{{[0-9]+}}: reducer 'r' is read before T.finalize_reducer; until then each thread holds only its own part of it


@tilelang.jit
def write_late(X):
    X: T.Tensor((64,), T.float32)
    with T.Kernel(1, threads=64) as bx:
        r = T.alloc_reducer((64,), T.float32)
        T.clear(r)
        for i in T.Parallel(64):
            r[i] += X[i]
        T.finalize_reducer(r)
        for i in T.Parallel(64):
            r[i] += X[i]


# LATE: reducer.py:[[@LINE-3]]:{{[0-9]+}}: reducer 'r' is written after T.finalize_reducer


@tilelang.jit
def bad_update(X):
    X: T.Tensor((64,), T.float32)
    with T.Kernel(1, threads=64) as bx:
        r = T.alloc_reducer((64,), T.float32, op="max")
        T.clear(r)
        for i in T.Parallel(64):
            r[i] = r[i] + X[i]
        T.finalize_reducer(r)


# UPDATE: reducer.py:[[@LINE-4]]:{{[0-9]+}}: a store to reducer 'r' must combine it with its op (r[i] = T.max(r[i], v), the same indices on both sides)


@tilelang.jit
def sum_seed(X):
    X: T.Tensor((64,), T.float32)
    with T.Kernel(1, threads=64) as bx:
        r = T.alloc_reducer((64,), T.float32)
        T.fill(r, 1.0)
        for i in T.Parallel(64):
            r[i] += X[i]
        T.finalize_reducer(r)


# SEED: reducer.py:[[@LINE-6]]:9: a sum reducer ('r') must start at 0 (T.clear)


@tilelang.jit
def copy_early(X):
    X: T.Tensor((64,), T.float32)
    Y = T.empty((64,), T.float32)
    with T.Kernel(1, threads=64) as bx:
        r = T.alloc_reducer((64,), T.float32)
        T.clear(r)
        T.copy(r, Y)
        T.finalize_reducer(r)
    return Y


# COPY: reducer.py:[[@LINE-5]]:{{[0-9]+}}: reducer 'r' is read before T.finalize_reducer


@tilelang.jit
def rep_none(X):
    X: T.Tensor((64,), T.float32)
    with T.Kernel(1, threads=64) as bx:
        r = T.alloc_reducer((64,), T.float32, replication="none")


# REPNONE: reducer.py:[[@LINE-3]]:{{[0-9]+}}: T.alloc_reducer replication="none" is not supported by Kiln yet


@tilelang.jit
def bitwise(X):
    X: T.Tensor((64,), T.int32)
    with T.Kernel(1, threads=64) as bx:
        r = T.alloc_reducer((64,), T.int32, op="bitor")


# BITWISE: reducer.py:[[@LINE-3]]:{{[0-9]+}}: T.alloc_reducer op "bitor" is not supported by Kiln yet
