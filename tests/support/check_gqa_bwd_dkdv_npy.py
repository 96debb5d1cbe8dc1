"""Checks dK and dV of TileLang's flash_attention/example_gqa_bwd.py
flashattn_bwd_atomic_add from the .npy files kiln-run --save wrote in DIR
(Q, K, V, dO, lse, Delta; dK, dV accumulated from zero over the heads of a
group). The reference recomputes the kernel's math from the same lse and
Delta in float32, with P and dS rounded to fp16 where the kernel rounds them.
dK and dV are staged through shared buffers that take the bytes of the main
loop's tiles (pass shared-placement). Exit 0 on a match, 1 otherwise."""
import sys

import numpy as np

from npy_check import compare, finish, load

d = sys.argv[1]
q, k, v, do = (load(d, n, np.float32) for n in ("Q", "K", "V", "dO"))
lse, delta = load(d, "lse", None), load(d, "Delta", None)
batch, seq, heads, dim_qk = q.shape
head_kv = k.shape[2]
groups = heads // head_kv
sm_scale = (1.0 / dim_qk) ** 0.5
scale = sm_scale * 1.44269504
ref_dk = np.zeros(k.shape, np.float32)
ref_dv = np.zeros(v.shape, np.float32)
for b in range(batch):
    for h in range(heads):
        kh, vh, qh, doh = k[b, :, h // groups], v[b, :, h // groups], q[b, :, h], do[b, :, h]
        p = np.exp2((kh @ qh.T) * scale - lse[b, h][None, :])  # keys x queries
        ref_dv[b, :, h // groups] += p.astype(np.float16).astype(np.float32) @ doh
        ds = p * ((vh @ doh.T) - delta[b, h][None, :]) * sm_scale
        ref_dk[b, :, h // groups] += ds.astype(np.float16).astype(np.float32) @ qh
finish(compare("dK", load(d, "dK", None), ref_dk, atol=1e-2, rtol=1e-3),
       compare("dV", load(d, "dV", None), ref_dv, atol=1e-2, rtol=1e-3))
