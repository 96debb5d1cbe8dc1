"""Checks Output of TileLang's MLA decode kernels with one KV head (the flashattn of
deepseek_mla/experimental/example_mla_decode_kv_fp8.py and of
warp_specialize/example_warp_specialize_flashmla.py) from the .npy files kiln-run --save
wrote in DIR (Q, Q_pe, KV as float8_e4m3 bits or float16, K_pe, Output): softmax((Q KV^T + Q_pe K_pe^T) / sqrt(dim +
pe_dim)) KV in float32. The output tile is staged through a shared buffer that
takes the bytes of Q's (pass shared-placement). Exit 0 on a match, 1 otherwise."""
import sys

import numpy as np

from npy_check import compare, finish, load


def e4m3(bits):
    b = bits.astype(np.int32)
    sign = np.where(b & 0x80, -1.0, 1.0)
    e, m = (b >> 3) & 0xF, b & 7
    v = np.where(e == 0, m / 8.0 * 2.0**-6, (1 + m / 8.0) * 2.0 ** (e - 7.0)) * sign
    return np.where((b & 0x7F) == 0x7F, np.nan, v).astype(np.float32)


d = sys.argv[1]
q, q_pe, k_pe = (load(d, n, np.float32) for n in ("Q", "Q_pe", "K_pe"))
kv = load(d, "KV", None)
kv = e4m3(kv) if kv.dtype == np.uint8 else kv.astype(np.float32)
got = load(d, "Output", np.float32)
scale = (1.0 / (q.shape[-1] + q_pe.shape[-1])) ** 0.5
ref = np.zeros(got.shape, np.float32)
for b in range(q.shape[0]):
    s = (q[b] @ kv[b, :, 0].T + q_pe[b] @ k_pe[b, :, 0].T) * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    ref[b] = (p / p.sum(axis=1, keepdims=True)) @ kv[b, :, 0]
finish(compare("Output", got, ref, atol=2e-3, rtol=1e-2))
