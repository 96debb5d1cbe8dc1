"""Checks C = A @ B from three .npy files (kiln-run --save), for kernels
without a ref_program (TileLang's own examples): float64 reference, fp16
tolerance (1e-2 absolute + 1e-2 relative). Exit 0 on a match, 1 otherwise."""
import sys

import numpy as np

from npy_check import compare, finish

a, b, c = (np.load(p).astype(np.float64) for p in sys.argv[1:4])
finish(compare("C", c, a @ b, atol=1e-2, rtol=1e-2, note=" = A @ B"))
