# T.im2col with stride 2, dilation 2 and padding 1 on a 9 x 7 image of 6
# channels: each kernel tile fills one (BM, BK) shared tile of the im2col
# matrix (rows: output pixels n, oh, ow; columns: taps kh, kw and channel c),
# which is written out whole. Neither N * OH * OW = 24 nor K * K * C = 54 is
# a multiple of the tile, so the last tiles run past both ends (zeros), and
# the padding ring reads as zeros too.
# kiln: test-bind N=2 H=9 W=7 C=6 BM=16 BK=8
import numpy as np
import tilelang
import tilelang.language as T

K, S, D, PAD = 3, 2, 2, 1


def im2col_stride_dilation(N, H, W, C, BM, BK, dtype=T.float16):
    OH = (H + 2 * PAD - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * PAD - D * (K - 1) - 1) // S + 1
    MB = T.ceildiv(N * OH * OW, BM)
    KB = T.ceildiv(K * K * C, BK)

    @T.prim_func
    def main(img: T.Tensor((N, H, W, C), dtype), col: T.Tensor((MB * BM, KB * BK), dtype)):
        with T.Kernel(KB, MB, threads=128) as (bx, by):
            tile = T.alloc_shared((BM, BK), dtype)
            T.im2col(img, tile, by, bx, K, S, D, PAD)
            T.copy(tile, col[by * BM, bx * BK])

    return main


def ref_program(img):
    n, h, w, c = img.shape
    oh = (h + 2 * PAD - D * (K - 1) - 1) // S + 1
    ow = (w + 2 * PAD - D * (K - 1) - 1) // S + 1
    padded = np.zeros((n, h + 2 * PAD, w + 2 * PAD, c), img.dtype)
    padded[:, PAD : PAD + h, PAD : PAD + w, :] = img
    rows = np.zeros((n, oh, ow, K, K, c), img.dtype)
    for kh in range(K):
        for kw in range(K):
            rows[:, :, :, kh, kw, :] = padded[:, kh * D : kh * D + S * (oh - 1) + 1 : S,
                                              kw * D : kw * D + S * (ow - 1) + 1 : S, :]
    mat = rows.reshape(n * oh * ow, K * K * c)
    bm, bk = 16, 8
    out = np.zeros((-(-mat.shape[0] // bm) * bm, -(-mat.shape[1] // bk) * bk), img.dtype)
    out[: mat.shape[0], : mat.shape[1]] = mat
    return out
