# The factory form: compile-time Python around a @T.prim_func (arithmetic,
# an `if` on a parameter, defaults), symbolic `if` inside the kernel, and
# reductions with explicit dims.
# RUN: kiln-opt %s --bind M=100 --bind N=64 | FileCheck %s
# RUN: kiln-opt %s --bind M=100 --bind N=64 --bind scaled=False | FileCheck %s --check-prefix=PLAIN
import tilelang.language as T


def softmax(M, N, block_M=8, scaled=True, dtype="float32"):
    scale = 1.44269504 if scaled else 1.0
    threads = 32 * (block_M // 4)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            mx = T.alloc_fragment((block_M,), dtype)
            sm = T.alloc_fragment((block_M,), dtype)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, mx, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp2((x[i, j] - mx[i]) * scale)
            T.reduce_sum(x, sm, dim=-1)
            for i, j in T.Parallel(block_M, N):
                if bx * block_M + i < M:
                    Y[bx * block_M + i, j] = x[i, j] / sm[i]

    return main

# CHECK: program @softmax {
# CHECK: kernel grid(13) threads(64) as (bx) {
# CHECK: reduce_max x[0 +: 8, 0 +: 64] -> mx[0 +: 8] dim=1 clear=true
# CHECK: x[i, j] = exp2((x[i, j] - mx[i]) * 1.442695
# CHECK: reduce_sum x[0 +: 8, 0 +: 64] -> sm[0 +: 8] dim=1 clear=true
# CHECK: if bx * 8 + i_1 < 100 {
# CHECK-NEXT: Y[bx * 8 + i_1, j_1] = x[i_1, j_1] / sm[i_1]

# PLAIN: x[i, j] = exp2((x[i, j] - mx[i]) * 1.0)
