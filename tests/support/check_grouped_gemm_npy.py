"""Checks TileLang's grouped GEMM (grouped_gemm/example_grouped_gemm_fwd.py) from the .npy
files in DIR: A (sum of the group sizes, K), B (groups, K, N) and the kernel's C; the group
sizes come from batch_sizes.npy (what the test bound batch_sizes_list to). Each group's rows
of C are its rows of A times its B, in float64, within float16 rounding (1e-2 relative plus
1e-2 absolute). Exit 0 on a match, 1 otherwise."""
import sys

import numpy as np

from npy_check import compare, finish, load

d = sys.argv[1]
a, b, c = (load(d, n) for n in ("A", "B", "C"))
sizes = load(d, "batch_sizes", None)
ref = np.zeros((int(sizes.sum()), b.shape[2]))
start = 0
for g, size in enumerate(sizes):
    ref[start:start + size] = a[start:start + size] @ b[g]
    start += size
finish(compare("C", c, ref, atol=1e-2, rtol=1e-2, note=" in %d groups" % len(sizes)))
