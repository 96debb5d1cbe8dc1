# A tensor stored in the order of a user-defined layout (T.Layout with
# T.annotate_layout on a tensor parameter; compiler/passes/global_layout.cc):
# the attention-backward dQ pattern, where every block adds its tile into dQ
# with T.atomic_add and dQ's elements are kept in 8x8 blocks in the order of
# an MMA accumulator fragment. The output read back on the host is the
# physical array; ref_program applies the same mapping with NumPy. Two
# blocks add into each tile (by == 0 and 1), so the atomics matter.
# kiln: test-bind B=2 L=32 H=2 D=16 blk=16
import numpy as np
import tilelang
import tilelang.language as T


def make_dq_layout(dQ):
    return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])


def index_layout_atomic(B, L, H, D, blk, dtype=T.float32):
    @T.prim_func
    def main(X: T.Tensor((B, L, H, D), dtype), dQ: T.Tensor((B, L, H, D), dtype)):
        with T.Kernel(L // blk, 2, B * H, threads=64) as (bx, by, bz):
            acc = T.alloc_fragment((blk, D), dtype)
            T.annotate_layout({dQ: make_dq_layout(dQ)})
            T.copy(X[bz // H, bx * blk : (bx + 1) * blk, bz % H, :], acc)
            for i, j in T.Parallel(blk, D):
                acc[i, j] = acc[i, j] * (by + 1)
            T.atomic_add(dQ[bz // H, bx * blk : (bx + 1) * blk, bz % H, :], acc)

    return main


def ref_program(X):
    B, L, H, D = X.shape
    phys = np.zeros((B, L // 8, H, D // 8, 2, 32), X.dtype)
    b, l, h, d = np.meshgrid(*[np.arange(n) for n in X.shape], indexing="ij")
    phys[b, l // 8, h, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2] = X * 3
    return phys.reshape(X.shape)
