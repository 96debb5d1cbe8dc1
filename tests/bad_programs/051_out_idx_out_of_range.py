# EXPECT: 7:1: out_idx 5 is out of range for 2 kernel parameters
# BIND: n=64
import tilelang
import tilelang.language as T

@tilelang.jit(out_idx=[5])
def kern(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=32):
            T.copy(A, B)
    return main
