"""Checks TileLang's norm/layernorm.py _layernorm_bwd from the .npy files
kiln-run --save wrote in DIR (X, DY, gamma, Mean, Rstd; DX, DGamma, DBeta,
the last two accumulated from zero): float64 reference from the same Mean
and Rstd, DX within fp16 rounding. Exit 0 on a match, 1 otherwise."""
import os
import sys

import numpy as np


def load(name):
    return np.load(os.path.join(sys.argv[1], name + ".npy")).astype(np.float64)


x, dy, gamma, mean, rstd = (load(n) for n in ("X", "DY", "gamma", "Mean", "Rstd"))
d = x.shape[1]
x_hat = (x - mean[:, None]) * rstd[:, None]
dx_hat = dy * gamma
c1 = (dx_hat * x_hat).sum(axis=1, keepdims=True) / d
c2 = dx_hat.sum(axis=1, keepdims=True) / d
refs = {
    "DX": rstd[:, None] * (dx_hat - c2 - x_hat * c1),
    "DGamma": (dy * x_hat).sum(axis=0),
    "DBeta": dy.sum(axis=0),
}
ok = True
for name, ref in refs.items():
    got = load(name)
    tol = 2e-3 + 2e-3 * np.abs(ref) if name == "DX" else 1e-4 + 1e-5 * np.abs(ref)
    bad = np.argwhere(np.abs(got - ref) > tol)
    if got.shape != ref.shape or bad.size:
        i = tuple(bad[0]) if bad.size else ()
        print("FAIL: %s: %d elements differ; first at %s: %r, expected %r"
              % (name, len(bad), i, got[i] if bad.size else got.shape, ref[i] if bad.size else ref.shape))
        ok = False
    else:
        print("PASS: %s %s, max abs err %.3g" % (name, ref.shape, np.abs(got - ref).max()))
sys.exit(0 if ok else 1)
