"""Checks TileLang's norm/layernorm.py _layernorm_bwd from the .npy files
kiln-run --save wrote in DIR (X, DY, gamma, Mean, Rstd; DX, DGamma, DBeta,
the last two accumulated from zero): float64 reference from the same Mean
and Rstd, DX within fp16 rounding. Exit 0 on a match, 1 otherwise."""
import sys

from npy_check import compare, finish, load

d = sys.argv[1]
x, dy, gamma, mean, rstd = (load(d, n) for n in ("X", "DY", "gamma", "Mean", "Rstd"))
cols = x.shape[1]
x_hat = (x - mean[:, None]) * rstd[:, None]
dx_hat = dy * gamma
c1 = (dx_hat * x_hat).sum(axis=1, keepdims=True) / cols
c2 = dx_hat.sum(axis=1, keepdims=True) / cols
finish(compare("DX", load(d, "DX"), rstd[:, None] * (dx_hat - c2 - x_hat * c1), 2e-3, 2e-3),
       compare("DGamma", load(d, "DGamma"), (dy * x_hat).sum(axis=0), 1e-4, 1e-5),
       compare("DBeta", load(d, "DBeta"), dy.sum(axis=0), 1e-4, 1e-5))
