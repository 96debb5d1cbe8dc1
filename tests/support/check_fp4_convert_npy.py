"""Checks TileLang's dequantize_gemm/example_dequant_gemm_fp4_hopper.py test_convert from the
.npy files in DIR: B (N, K / 2) uint8, two fp4 (s1e2m1) values a byte, low nibble first, and the
kernel's C (N, K) float16. The reference builds each float16's bits as the example's own
torch_convert does (sign to bit 15, exponent + 14 to bits 10..14, the mantissa bit to bit 9),
and C must match them bit for bit (the kernel assembles them with T.reinterpret). Exit 0 on a
match, 1 otherwise."""
import sys

import numpy as np

from npy_check import compare, finish, load

d = sys.argv[1]
b = load(d, "B", None).astype(np.int64)
c = load(d, "C", None)
f4 = np.stack((b & 0x0F, b >> 4), axis=-1).reshape(b.shape[0], b.shape[1] * 2)
bits = ((f4 >> 3) << 15) | ((((f4 & 6) >> 1) + 14) << 10) | ((f4 & 1) << 9)
finish(compare("C bits", c.view(np.uint16).astype(np.int64), bits, atol=0, rtol=0))
