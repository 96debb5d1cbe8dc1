#!/usr/bin/env python3
"""Times variants of the same kernels alternately on one GPU and checks that they agree.

Each case is a folder holding one `VARIANT.cubin` + `VARIANT.json` (kiln-opt's --emit=cubin and
--launch-json output) per variant, all of one tile program at one binding (the same launch
arguments). For every case the variants run on the same random inputs; their outputs are
compared with the first variant's (bit for bit unless --atol is given), then each variant is
timed --rounds times in alternation (L2 flushed before every launch, median of --reps CUDA-event
samples per round), so a drift of the machine lands on all of them alike. Prints one Markdown
row per case: every variant's median over the rounds (and its range), and its ratio to the
first variant.

  python3 bench/cubin_ab.py DIR [--rounds 3] [--reps 30] [--atol 0]

DIR holds one folder per case. Needs torch and cupy (the GPU machine).
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "gpu"))
import kiln_gpu  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--atol", type=float, default=0.0)
    args = ap.parse_args()
    import torch

    failed = 0
    header = None
    for case in sorted(os.listdir(args.dir)):
        folder = os.path.join(args.dir, case)
        if not os.path.isdir(folder):
            continue
        names = sorted(f[:-6] for f in os.listdir(folder) if f.endswith(".cubin"))
        variants = []
        for name in names:
            with open(os.path.join(folder, name + ".json")) as f:
                launch = json.load(f)
            variants.append((name, kiln_gpu.Compiled(os.path.join(folder, name + ".cubin"), launch, 0)))
        if header != names:
            header = names
            print("| case | " + " | ".join(f"{n} µs (range)" for n in names) + " | " +
                  " | ".join(f"{n} / {names[0]}" for n in names[1:]) + " | outputs |")
            print("|---" * (1 + 2 * len(names)) + "|")
        launch0 = variants[0][1].launch
        n_out = sum(1 for a in launch0["args"] if a.get("output"))
        n_in = len(launch0["args"]) - max(n_out, 1)
        tensors = kiln_gpu.make_tensors(launch0, n_in, seed=1)
        outputs = []
        for _, v in variants:
            for t in tensors[n_in:]:
                t.zero_()
            v.run(tensors)
            torch.cuda.synchronize()
            outputs.append([t.clone() for t in tensors[n_in:]])
        agree = "same"
        for (name, _), out in zip(variants[1:], outputs[1:]):
            for a, b in zip(outputs[0], out):
                diff = (a.double() - b.double()).abs().max().item()
                if diff > args.atol:
                    agree = f"{name} differs by {diff:g}"
                    failed += 1
        samples = {name: [] for name in names}
        for _ in range(args.rounds):
            for name, v in variants:
                med, _ = kiln_gpu.time_kernel(lambda v=v: v.run(tensors), reps=args.reps)
                samples[name].append(med * 1000.0)
        meds = [statistics.median(samples[n]) for n in names]
        cells = [f"{m:.1f} ({min(samples[n]):.1f}–{max(samples[n]):.1f})" for m, n in zip(meds, names)]
        ratios = [f"{m / meds[0]:.3f}" for m in meds[1:]]
        print(f"| {case} | " + " | ".join(cells) + " | " + " | ".join(ratios) + f" | {agree} |",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
