"""Checks TileLang's grouped GEMM (grouped_gemm/example_grouped_gemm_fwd.py) from the .npy
files in DIR: A (sum of the group sizes, K), B (groups, K, N) and the kernel's C; the group
sizes come from batch_sizes.npy (what the test bound batch_sizes_list to). Each group's rows
of C are its rows of A times its B, in float64, within float16 rounding (1e-2 relative plus
1e-2 absolute). Exit 0 on a match, 1 otherwise."""
import os
import sys

import numpy as np


def load(name):
    return np.load(os.path.join(sys.argv[1], name + ".npy"))


a, b, c = (load(n).astype(np.float64) for n in ("A", "B", "C"))
sizes = load("batch_sizes")
ref = np.zeros((int(sizes.sum()), b.shape[2]))
start = 0
for g, size in enumerate(sizes):
    ref[start:start + size] = a[start:start + size] @ b[g]
    start += size
tol = 1e-2 + 1e-2 * np.abs(ref)
bad = np.argwhere(np.abs(c - ref) > tol) if c.shape == ref.shape else np.zeros((1, 0))
if c.shape != ref.shape or bad.size:
    i = tuple(bad[0]) if bad.size else ()
    print("FAIL: C %s (expected %s): %d elements differ; first at %s: %r, expected %r"
          % (c.shape, ref.shape, len(bad), i, c[i] if bad.size else None,
             ref[i] if bad.size else None))
    sys.exit(1)
print("PASS: C %s in %d groups, max abs err %.3g" % (ref.shape, len(sizes), np.abs(c - ref).max()))
sys.exit(0)
