# A tuning target with two broken configs, for the sweep-survives-failures tests:
# mode=1 writes far out of bounds (a fault: SIGSEGV on the host, an illegal address on a GPU),
# mode=2 never finishes (a hang: the worker's request timeout ends it). mode=0 and mode=3 are
# correct (mode=3 does the same work twice).
# kiln: bind M=4096 mode=0 block_M=64
import tilelang
import tilelang.language as T


def faulty(M, mode=0, block_M=64, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M,), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=block_M) as bx:
            for i in T.Parallel(block_M):
                B[bx * block_M + i] = A[bx * block_M + i] * 2
            if mode == 1:
                for i in T.Parallel(block_M):
                    B[bx * block_M + i + 536870912] = A[bx * block_M + i]
            if mode == 2:
                for k in T.serial(2000000000):
                    for j in T.serial(2000000000):
                        B[bx * block_M] = B[bx * block_M] * 1.0000001 + 1.0
            if mode == 3:
                for i in T.Parallel(block_M):
                    B[bx * block_M + i] = A[bx * block_M + i] + A[bx * block_M + i]

    return main


def ref_program(A):
    return A * 2
