# Frontend diagnostics are located at file:line:col.
# RUN: not kiln-opt %s --bind N=64 2>&1 | FileCheck %s --check-prefix=NOBIND
# RUN: not kiln-opt %s --bind N=64 --bind block=32 --bind oops=1 2>&1 | FileCheck %s --check-prefix=UNKNOWN
# RUN: not kiln-opt %s --bind N=64 --bind block=48 2>&1 | FileCheck %s --check-prefix=ASSERT
import tilelang
import tilelang.language as T


@tilelang.jit
def scale(A, block):
    N = T.const("N")
    assert N % block == 0, "N must be a multiple of block"
    A: T.Tensor((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
        for i in T.Parallel(block):
            A[bx * block + i] = A[bx * block + i] * 2

# NOBIND: diagnostics.py:10:14: parameter 'block' has no binding and no default
# UNKNOWN: diagnostics.py:{{[0-9]+}}:{{[0-9]+}}: unknown binding 'oops'
# ASSERT: diagnostics.py:12:5: {{.*}}N must be a multiple of block
