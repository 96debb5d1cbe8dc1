"""Checks Output of TileLang's flash_attention/example_mha_fwd_bhsd.py (entry flashattn)
from the .npy files kiln-run --save wrote in DIR (Q, K, V, Output; b h s d, float16):
softmax(Q K^T / sqrt(dim)) V in float32, with the causal mask when the second argument is
"causal" (query i sees keys up to i + seq_kv - seq_q). Exit 0 on a match, 1 otherwise."""
import sys

import numpy as np

from npy_check import compare, finish, load

d = sys.argv[1]
causal = len(sys.argv) > 2 and sys.argv[2] == "causal"
q, k, v = (load(d, n, np.float32) for n in ("Q", "K", "V"))
got = load(d, "Output", np.float32)
s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
if causal:
    sq, skv = q.shape[2], k.shape[2]
    s = np.where(np.tril(np.ones((sq, skv), bool), skv - sq), s, -np.inf)
p = np.exp(s - s.max(-1, keepdims=True))
ref = (p / p.sum(-1, keepdims=True)) @ v
finish(compare("Output", got, ref, atol=2e-3, rtol=1e-2))
