#!/usr/bin/env python3
"""Differential check of a lowering: runs a tile program twice with kiln-run on the CPU
target from the same seeded inputs, once as the CPU's own thread program and once as the
thread program lowered for a CUDA target (--lower-for: wgmma, TMA, mbarriers and warp
specialization emulated), and compares the named outputs. For TileLang's examples whose
references need torch: the CPU's own lowering is the program's meaning, the CUDA lowering
must compute the same.

usage: diff_lowering.py KILN_RUN FILE WORKDIR (--lower-for T | --gpu) --out NAME
                        [--out NAME]... [--atol A] [--rtol R] [-- KILN_RUN_ARGS...]
--gpu: the second run is the real thing, on CUDA device 0 (skipped without a GPU).
Exit 0 when every output matches (|a - b| <= atol + rtol |b|, no NaN, and not all zero),
1 on a mismatch, 77 when FILE is missing (TileLang's examples sit beside the checkout) or
--gpu finds no GPU, 2 when a run fails.
"""
import argparse
import os
import subprocess
import sys

import numpy as np


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln_run")
    ap.add_argument("file")
    ap.add_argument("workdir")
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--lower-for")
    how.add_argument("--gpu", action="store_true")
    ap.add_argument("--out", action="append", required=True)
    ap.add_argument("--atol", type=float, default=2e-3)
    ap.add_argument("--rtol", type=float, default=1e-2)
    args = ap.parse_args(argv)
    if not os.path.exists(args.file):
        print(f"skipped: {args.file} not found (set KILN_TILELANG_EXAMPLES)")
        return 77
    if args.gpu and not os.path.exists("/dev/nvidiactl"):
        print("skipped: no GPU")
        return 77
    os.makedirs(args.workdir, exist_ok=True)
    second = ["--target", "cuda:0"] if args.gpu else ["--target", "cpu", "--lower-for",
                                                      args.lower_for]
    runs = {"cpu": ["--target", "cpu"], "lowered": second}
    for tag, flags in runs.items():
        cmd = [args.kiln_run, args.file, "--quiet", "--seed", "3", *flags, *extra]
        cmd += [f"--save={n}={args.workdir}/{tag}_{n}.npy" for n in args.out]
        if subprocess.run(cmd).returncode != 0:
            print("failed:", " ".join(cmd))
            return 2
    ok = True
    for n in args.out:
        ref = np.load(f"{args.workdir}/cpu_{n}.npy").astype(np.float64)
        got = np.load(f"{args.workdir}/lowered_{n}.npy").astype(np.float64)
        if not np.isfinite(ref).all() or not np.abs(ref).max(initial=0) > 0:
            print(f"FAIL: {n}: the CPU's own run gave no usable reference (zero or not finite)")
            ok = False
            continue
        bad = np.argwhere(~(np.abs(got - ref) <= args.atol + args.rtol * np.abs(ref)))
        if bad.size:
            i = tuple(bad[0])
            print(f"FAIL: {n}: {len(bad)} of {ref.size} elements differ; first at {i}: "
                  f"{got[i]!r}, expected {ref[i]!r}")
            ok = False
        else:
            print(f"PASS: {n} {ref.shape}, max abs err {np.abs(got - ref).max():.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
