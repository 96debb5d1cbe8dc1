# EXPECT: 13:27: layout for 'a' was made for buffer 'b'
# BIND: N=256 block=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N, N), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        a = T.alloc_shared((block, block), T.float16)
        b = T.alloc_shared((block, block), T.float16)
        T.annotate_layout({a: T.make_swizzled_layout(b)})
