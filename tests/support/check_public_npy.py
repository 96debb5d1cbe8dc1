"""NumPy references for the kernels of issue 30's public set that have no checker of
their own, from the .npy files kiln-run --save wrote in DIR:
  check_public_npy.py KIND DIR
KIND: matmul (A, B, C = A @ B), relu_matmul (C = max(A @ B, 0)), add (C = A + B),
softmax (Y = softmax(X) along rows), layernorm_fwd (X, gamma, beta -> Y, Mean, Rstd; eps
1e-5, biased variance). References in float64; each output within the rounding of its
own dtype. Exit 0 on a match, 1 otherwise."""
import sys

import numpy as np

from npy_check import compare, finish, load

kind, d = sys.argv[1], sys.argv[2]
if kind in ("matmul", "relu_matmul"):
    a, b, c = (load(d, n) for n in ("A", "B", "C"))
    ref = a @ b
    if kind == "relu_matmul":
        ref = np.maximum(ref, 0)
    finish(compare("C", c, ref, atol=1e-2, rtol=1e-2))
elif kind == "add":
    a, b, c = (load(d, n) for n in ("A", "B", "C"))
    finish(compare("C", c, a + b, atol=1e-6, rtol=1e-6))
elif kind == "softmax":
    x, y = load(d, "X"), load(d, "Y")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    finish(compare("Y", y, e / e.sum(axis=1, keepdims=True), atol=1e-3, rtol=1e-2))
elif kind == "layernorm_fwd":
    x, gamma, beta = (load(d, n) for n in ("X", "gamma", "beta"))
    y, mean, rstd = (load(d, n) for n in ("Y", "Mean", "Rstd"))
    mu = x.mean(axis=1)
    r = 1.0 / np.sqrt(((x - mu[:, None]) ** 2).mean(axis=1) + 1e-5)
    ref = (x - mu[:, None]) * r[:, None] * gamma + beta
    finish(compare("Mean", mean, mu, atol=1e-5, rtol=1e-4),
           compare("Rstd", rstd, r, atol=1e-4, rtol=1e-3),
           compare("Y", y, ref, atol=1e-2, rtol=1e-2))
else:
    sys.exit("unknown kind %r" % kind)
