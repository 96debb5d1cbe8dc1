"""Checks C = A @ B from three .npy files (kiln-run --save), for kernels
without a ref_program (TileLang's own examples): float64 reference, fp16
tolerance (1e-2 absolute + 1e-2 relative). Exit 0 on a match, 1 otherwise."""
import sys

import numpy as np

a, b, c = (np.load(p).astype(np.float64) for p in sys.argv[1:4])
ref = a @ b
if c.shape != ref.shape:
    print("FAIL: C has shape %s, A @ B %s" % (c.shape, ref.shape))
    sys.exit(1)
bad = np.argwhere(np.abs(c - ref) > 1e-2 + 1e-2 * np.abs(ref))
if bad.size:
    i = tuple(bad[0])
    print("FAIL: %d elements differ; first at %s: %r, expected %r" % (len(bad), i, c[i], ref[i]))
    sys.exit(1)
print("PASS: C = A @ B within fp16 tolerance (%s)" % (c.shape,))
