"""Checks a gemv o = a @ x from the .npy files kiln-run --save wrote in DIR
(a: (M, N), x: (N,), o: (M,)): float64 reference, o within the rounding of
its own dtype (float16: 1e-2 relative plus 1e-2 absolute, which the float32
accumulation of N products stays well inside). Exit 0 on a match, 1
otherwise."""
import os
import sys

import numpy as np


def load(name):
    return np.load(os.path.join(sys.argv[1], name + ".npy")).astype(np.float64)


a, x, o = load("a"), load("x"), load("o")
ref = a @ x
tol = 1e-2 + 1e-2 * np.abs(ref)
bad = np.argwhere(np.abs(o - ref) > tol)
if o.shape != ref.shape or bad.size:
    i = tuple(bad[0]) if bad.size else ()
    print("FAIL: o: %d elements differ; first at %s: %r, expected %r"
          % (len(bad), i, o[i] if bad.size else o.shape, ref[i] if bad.size else ref.shape))
    sys.exit(1)
print("PASS: o %s, max abs err %.3g" % (ref.shape, np.abs(o - ref).max()))
sys.exit(0)
