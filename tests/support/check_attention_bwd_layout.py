#!/usr/bin/env python3
"""TileLang's flash-attention backward, unchanged, through Kiln against NumPy.

The example's flashattn_bwd adds dQ with atomics into a tensor stored in the
order of a T.Layout (8x8 blocks in MMA-fragment order) and its
flashattn_bwd_postprocess reads dQ back through the same layout into an
ordinary float16 tensor. This runs both kernels with kiln-run (dQ carried from
one to the other as the raw physical array), dK and dV from the first, and
compares them with attention's backward computed in float32 NumPy from the
same inputs. It also checks that the carried dQ is not in logical order, so
the layout was applied and undone, not ignored twice.

usage: check_attention_bwd_layout.py KILN_RUN EXAMPLE WORKDIR LAYOUT [--target T] [--causal]
                                     [--gqa atomic|split]
  LAYOUT is bshd or bhsd (the example's tensor order). --gqa runs
  example_gqa_bwd.py's grouped-query kernels instead (bshd): flashattn_bwd_atomic_add
  (dK, dV added atomically from shared tiles) or flashattn_bwd_split (one dK, dV slice
  per group, summed here). Exit 77 when EXAMPLE is missing (TileLang's examples sit
  beside the checkout; CI clones only this repo).
"""
import argparse
import os
import subprocess
import sys

import numpy as np

LOG2E = 1.44269504


def reference(q, k, v, do, causal, groups=1):
    """Attention forward statistics and backward in float32; arrays are b h s d.
    With groups > 1, k and v have heads / groups heads, head h using h // groups
    (grouped-query attention); their gradients sum over each group."""
    if groups > 1:
        lse, delta, dq, dk, dv = reference(q, np.repeat(k, groups, 1), np.repeat(v, groups, 1),
                                           do, causal)
        b, h, s, _ = dk.shape
        return (lse, delta, dq, dk.reshape(b, h // groups, groups, s, -1).sum(2),
                dv.reshape(b, h // groups, groups, s, -1).sum(2))
    d = q.shape[-1]
    sm = (1.0 / d) ** 0.5
    s = q @ k.transpose(0, 1, 3, 2) * sm
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(-1, keepdims=True)
    p /= l
    lse = (np.log(l) + m)[..., 0] * LOG2E  # the kernels work in base 2
    o = p @ v
    delta = (o * do).sum(-1)
    dv = p.transpose(0, 1, 3, 2) @ do
    ds = p * (do @ v.transpose(0, 1, 3, 2) - delta[..., None])
    return lse, delta, ds @ k * sm, ds.transpose(0, 1, 3, 2) @ q * sm, dv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln_run")
    ap.add_argument("example")
    ap.add_argument("workdir")
    ap.add_argument("layout", choices=("bshd", "bhsd"))
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--gqa", choices=("atomic", "split"))
    args = ap.parse_args()
    if not os.path.exists(args.example):
        print(f"skipped: {args.example} not found (TileLang's examples sit beside the checkout; "
              "CI clones only this repo; set KILN_TILELANG_EXAMPLES)")
        return 77
    os.makedirs(args.workdir, exist_ok=True)
    B, S, H, D, blk = 1, 128, 2, 64, 64
    groups = 2 if args.gqa else 1
    if args.gqa:
        H = 4
    rng = np.random.default_rng(0)
    # Tensors in the example's order; the reference works in b h s d.
    to_bhsd = (0, 2, 1, 3) if args.layout == "bshd" else (0, 1, 2, 3)
    shape = (B, S, H, D) if args.layout == "bshd" else (B, H, S, D)
    kv_shape = (B, S, H // groups, D)
    Q, dO = (rng.uniform(-1, 1, shape).astype(np.float16) for _ in range(2))
    K, V = (rng.uniform(-1, 1, kv_shape if args.gqa else shape).astype(np.float16)
            for _ in range(2))
    q, k, v, do = (x.astype(np.float32).transpose(to_bhsd) for x in (Q, K, V, dO))
    lse, delta, dq, dk, dv = reference(q, k, v, do, args.causal, groups)
    inputs = dict(Q=Q, K=K, V=V, dO=dO, lse=lse.astype(np.float32),
                  Delta=delta.astype(np.float32), dQ=np.zeros(shape, np.float32))
    if args.gqa == "atomic":
        inputs.update(dK=np.zeros(kv_shape, np.float32), dV=np.zeros(kv_shape, np.float32))
    w = args.workdir
    for name, a in inputs.items():
        np.save(f"{w}/{name}.npy", a)
    dim = [f"--bind=dim_qk={D}"] if args.gqa else [f"--bind=dim={D}"]
    binds = [f"--bind=batch={B}", f"--bind=heads={H}", f"--bind=seq_len={S}", *dim]
    common = ["--target", args.target, "--quiet", *binds]
    entry = f"flashattn_bwd_{'atomic_add' if args.gqa == 'atomic' else 'split'}" if args.gqa \
        else "flashattn_bwd"
    extra = [f"--bind=dim_v={D}", f"--bind=groups={groups}", "--bind=threads=128"] if args.gqa \
        else []
    bwd = [args.kiln_run, args.example, "--entry", entry, *common, *extra,
           f"--bind=is_causal={args.causal}", f"--bind=block_M={blk}", f"--bind=block_N={blk}"]
    bwd += [f"--input={n}={w}/{n}.npy" for n in inputs]
    bwd += [f"--save=dQ={w}/dQ_phys.npy", f"--save=dK={w}/dK.npy", f"--save=dV={w}/dV.npy"]
    post = [args.kiln_run, args.example, "--entry", "flashattn_bwd_postprocess", *common,
            f"--input=dQ={w}/dQ_phys.npy", f"--save=dQ_out={w}/dQ_out.npy"]
    for cmd in (bwd, post):
        r = subprocess.run(cmd)
        if r.returncode != 0:
            print("failed:", " ".join(cmd))
            return 1
    want = {"dQ_out": dq, "dK": dk, "dV": dv}
    ok = True
    for name, ref in want.items():
        got = np.load(f"{w}/{name}.npy").astype(np.float32)
        if args.gqa == "split" and name != "dQ_out":
            got = got.sum(0)  # one slice per group
        got = got.transpose(to_bhsd)
        err = float(np.abs(got - ref).max())
        scale = float(np.abs(ref).max())
        good = err <= 2e-3 * max(scale, 1e-3) + 1e-4  # float16 outputs of float32 sums
        ok &= good
        print(f"{name}: max abs err {err:.3g} (max |ref| {scale:.3g}): {'PASS' if good else 'FAIL'}")
    phys = np.load(f"{w}/dQ_phys.npy").transpose(to_bhsd)
    if np.allclose(phys, dq, atol=1e-3 * float(np.abs(dq).max())):
        print("dQ_phys: in logical order; the T.Layout was not applied: FAIL")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
