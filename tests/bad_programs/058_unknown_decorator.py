# EXPECT: 9:6: unsupported decorator on a nested function
# BIND: n=64
import tilelang
import tilelang.language as T

import functools

def kern(n):
    @functools.lru_cache
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=32):
            A[0] = 0
    return main
