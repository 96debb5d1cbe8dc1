# Reading a tensor stored in the order of a user-defined layout (T.Layout on
# a tensor parameter): the attention-backward postprocess pattern, a tile
# copy out of the laid-out dQ into an ordinary float16 tensor. The input is
# the physical array as the host holds it; ref_program reads it through the
# same mapping with NumPy. The layout is written with a def, and one of its
# output dimensions depends on two indices.
# kiln: test-bind B=2 L=32 H=2 D=16 blk=16
import numpy as np
import tilelang
import tilelang.language as T


def dq_layout(b, l, h, d):
    return [b, l // 8, h, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2]


def index_layout_read(B, L, H, D, blk, dtype=T.float32):
    @T.prim_func
    def main(dQ: T.Tensor((B, L, H, D), dtype), out: T.Tensor((B, L, H, D), T.float16)):
        with T.Kernel(L // blk, H, B, threads=128) as (bx, by, bz):
            T.annotate_layout({dQ: T.Layout(dQ.shape, dq_layout)})
            T.copy(dQ[bz, bx * blk : (bx + 1) * blk, by, :], out[bz, bx * blk : (bx + 1) * blk, by, :])

    return main


def ref_program(dQ):
    B, L, H, D = dQ.shape
    phys = dQ.reshape(B, L // 8, H, D // 8, 2, 32)
    b, l, h, d = np.meshgrid(*[np.arange(n) for n in dQ.shape], indexing="ij")
    return phys[b, l // 8, h, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2].astype(np.float16)
