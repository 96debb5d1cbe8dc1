"""Checks TileLang's deepseek_mla/example_mla_decode.py `flashattn` kernel (its
split-KV variant: a split kernel writes partial outputs and log-sum-exps into
two T.alloc_global workspaces, a combine kernel merges them) from the .npy
files kiln-run --save wrote in DIR: q (B, H, D), qpe (B, H, P), kv (B, S, 1, D),
kpe (B, S, 1, P) and out (B, H, D). Usage: check_mla_split_decode_npy.py DIR SCALE.
The reference is the example's ref_program in float64 NumPy: softmax over
(q|qpe)·(kv|kpe) * SCALE, times kv. The example keeps the partial results in
float16, so out must match within float16 rounding of them. Exit 0 on a
match, 1 otherwise."""
import os
import sys

import numpy as np


def load(d, name):
    return np.load(os.path.join(d, name + ".npy")).astype(np.float64)


def main():
    d, scale = sys.argv[1], float(sys.argv[2])
    q, qpe, kv, kpe, got = (load(d, n) for n in ("q", "qpe", "kv", "kpe", "out"))
    query = np.concatenate([q, qpe], axis=-1)              # (B, H, D + P)
    key = np.concatenate([kv[:, :, 0], kpe[:, :, 0]], -1)  # (B, S, D + P)
    scores = np.einsum("bhd,bsd->bhs", query, key) * scale
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    ref = np.einsum("bhs,bsd->bhd", p, kv[:, :, 0])
    if got.shape != ref.shape:
        print("FAIL: out has shape %s, expected %s" % (got.shape, ref.shape))
        return 1
    if not np.any(got):
        print("FAIL: out is all zeros (the combine kernel did not run?)")
        return 1
    tol = 1e-2 + 1e-2 * np.abs(ref)
    bad = np.argwhere(np.abs(got - ref) > tol)
    if bad.size:
        i = tuple(bad[0])
        print("FAIL: out: %d of %d elements differ; first at %s: %r, expected %r"
              % (len(bad), ref.size, i, got[i], ref[i]))
        return 1
    print("PASS: out %s, max abs err %.3g" % (ref.shape, np.abs(got - ref).max()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
