"""Checks TileLang's convolution/example_convolution.py `convolution` kernel
from the .npy files kiln-run --save wrote in DIR: data (N, H, W, C), kernel
(KH, KW, C, F) and out (N, OH, OW, F), all NHWC / HWCF as the example lays
them out. Usage: check_convolution_npy.py DIR STRIDE DILATION PADDING.
The reference is a direct float64 convolution (a sum over the kernel taps of
shifted, zero-padded image slices times the tap's C x F matrix); out must
match within float16 rounding of the result. Exit 0 on a match, 1 otherwise."""
import sys

import numpy as np

from npy_check import compare, finish, load


def conv2d_nhwc(x, w, stride, dilation, pad):
    n, h, wd, c = x.shape
    kh_n, kw_n, c2, f = w.shape
    assert c == c2, (x.shape, w.shape)
    oh = (h + 2 * pad - dilation * (kh_n - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilation * (kw_n - 1) - 1) // stride + 1
    xp = np.zeros((n, h + 2 * pad, wd + 2 * pad, c))
    xp[:, pad:pad + h, pad:pad + wd, :] = x
    out = np.zeros((n, oh, ow, f))
    for kh in range(kh_n):
        for kw in range(kw_n):
            r0, c0 = kh * dilation, kw * dilation
            patch = xp[:, r0:r0 + stride * (oh - 1) + 1:stride, c0:c0 + stride * (ow - 1) + 1:stride, :]
            out += patch @ w[kh, kw]
    return out


def main():
    d = sys.argv[1]
    stride, dilation, pad = (int(v) for v in sys.argv[2:5])
    x, w, got = load(d, "data"), load(d, "kernel"), load(d, "out")
    ref = conv2d_nhwc(x, w, stride, dilation, pad)
    note = " (stride %d, dilation %d, padding %d)" % (stride, dilation, pad)
    finish(compare("out", got, ref, atol=2e-2, rtol=2e-3, note=note))


if __name__ == "__main__":
    main()
