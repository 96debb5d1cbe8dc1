"""Checks an RMS norm b = a * rsqrt(mean(a^2, row) + 1e-12) from the .npy files
kiln-run --save wrote in DIR (a, b: (M, N) float32): float64 reference, within
1e-4 relative plus 1e-5 absolute (float32 sums of N squares in another order).
Exit 0 on a match, 1 otherwise."""
import sys

import numpy as np
from npy_check import compare, finish, load

a, b = (load(sys.argv[1], n) for n in ("a", "b"))
ref = a / np.sqrt((a * a).mean(axis=1, keepdims=True) + 1e-12)
finish(compare("b", b, ref, atol=1e-5, rtol=1e-4))
