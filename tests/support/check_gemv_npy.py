"""Checks a gemv o = a @ x from the .npy files kiln-run --save wrote in DIR
(a: (M, N), x: (N,), o: (M,)): float64 reference, o within the rounding of
its own dtype (float16: 1e-2 relative plus 1e-2 absolute, which the float32
accumulation of N products stays well inside). Exit 0 on a match, 1
otherwise."""
import sys

from npy_check import compare, finish, load

a, x, o = (load(sys.argv[1], n) for n in ("a", "x", "o"))
finish(compare("o", o, a @ x, atol=1e-2, rtol=1e-2))
