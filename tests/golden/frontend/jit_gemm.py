# The @tilelang.jit form: T.const symbols become dynamic shapes when unbound
# and constants when bound; T.empty adds an output; T.copy's start-corner form
# gets its extents from the other operand.
# RUN: kiln-opt %s --bind block_M=64 --bind block_N=64 --bind block_K=32 | FileCheck %s --check-prefix=DYN
# RUN: kiln-opt %s --bind block_M=64 --bind block_N=64 --bind block_K=32 --bind M=256 --bind N=128 --bind K=96 | FileCheck %s --check-prefix=STATIC
import tilelang
import tilelang.language as T


@tilelang.jit
def mm(X, Y, block_M, block_N, block_K, dtype=T.bfloat16):
    M, N, K = T.const("M, N, K")
    X: T.Tensor((M, K), dtype)
    Y: T.Tensor((N, K), dtype)
    Z = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        xs = T.alloc_shared((block_M, block_K), dtype)
        ys = T.alloc_shared((block_N, block_K), dtype)
        acc = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(acc)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(X[by * block_M, k * block_K], xs)
            T.copy(Y[bx * block_N, k * block_K], ys)
            T.gemm(xs, ys, acc, transpose_B=True)
        T.copy(acc, Z[by * block_M, bx * block_N])
    return Z

# DYN: program @mm {
# DYN-NEXT: sym M: int32
# DYN-NEXT: sym N: int32
# DYN-NEXT: sym K: int32
# DYN-NEXT: param X: global bfloat16[M, K]
# DYN-NEXT: param Y: global bfloat16[N, K]
# DYN-NEXT: param Z: global float32[M, N] out
# DYN-NEXT: kernel grid((N + 63) // 64, (M + 63) // 64) threads(128) as (bx, by) {
# DYN: for k in pipelined((K + 31) // 32) stages=2 {
# DYN-NEXT: copy X[by * 64 +: 64, k * 32 +: 32] -> xs[0 +: 64, 0 +: 32]
# DYN: gemm xs[0 +: 64, 0 +: 32], ys[0 +: 64, 0 +: 32], acc[0 +: 64, 0 +: 64] transpose_a=false transpose_b=true

# STATIC-NOT: sym
# STATIC: param X: global bfloat16[256, 96]
# STATIC: kernel grid(2, 4) threads(128) as (bx, by) {
# STATIC: for k in pipelined(3) stages=2 {
