# T.Persistent(domain, wave_size, index, group_size=8): a serial loop over the
# waves, each block taking tile w * wave_size + index of the domain padded to
# whole groups of the last dimension ([ceildiv(d1, G), d0, G], the last
# fastest), and running the body where the last coordinate is in range.
# RUN: kiln-opt %s --entry tiles --emit=ir | FileCheck %s --check-prefix=IR
# RUN: kiln-opt %s --entry tiles --bind group=100 --emit=ir | FileCheck %s --check-prefix=G1
# RUN: not kiln-opt %s --entry tiles --bind group=0 --emit=ir 2>&1 | FileCheck %s --check-prefix=G0
# RUN: not kiln-opt %s --entry wrong_arity --emit=ir 2>&1 | FileCheck %s --check-prefix=ARITY
import tilelang
import tilelang.language as T


def tiles(group=4):
    @T.prim_func
    def main(C: T.Tensor((5, 6), T.int32)):
        with T.Kernel(7, threads=32) as block_id:
            for bx, by in T.Persistent([5, 6], 7, block_id, group):
                C[bx, by] = block_id

    return main

# 5 x 6 tiles, groups of 4: padded [2, 5, 4] = 40 tiles, ceildiv(40, 7) = 6 waves.
# IR: for w in serial(6) {
# IR-NEXT: if (w * 7 + block_id) // 4 // 5 * 4 + (w * 7 + block_id) % 4 < 6 {
# IR-NEXT: C[(w * 7 + block_id) // 4 % 5, (w * 7 + block_id) // 4 // 5 * 4 + (w * 7 + block_id) % 4] = block_id
# A group larger than the last extent is that extent: padded [1, 5, 6] = 30, 5 waves.
# G1: for w in serial(5) {
# G0: persistent.py:17:61: T.Persistent group_size must be positive, got 0


def wrong_arity():
    @T.prim_func
    def main(C: T.Tensor((5, 6), T.int32)):
        with T.Kernel(7, threads=32) as block_id:
            for bx in T.Persistent([5, 6], 7, block_id):
                C[bx, 0] = 1

    return main

# ARITY: persistent.py:35:17: T.Persistent has a 2-d domain but the loop binds 1 variable
