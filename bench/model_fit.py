#!/usr/bin/env python3
"""The roller's performance model against recorded GEMM measurements (no GPU needed).

Each shape lists configs of examples/gemm/gemm.py (fp16, Kiln's default Hopper path, split-K
where named) with the time an H100 80GB HBM3 measured for them (docs/benchmarks.md, "Hopper
GEMM", runs 3 and 4, 2026-12-06). For every shape the script asks `kiln tune --dry-run
--arch h100 --strategy grid` for the model's prediction of each config, then prints
predicted against measured, the rank correlation (Spearman) and the regret of trusting the
model: how much slower the config it ranks first measured than the best measured one.

    python3 bench/model_fit.py --kiln build/kiln [--json out.json]
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEMM = os.path.join(ROOT, "examples", "gemm", "gemm.py")


def us(tflops, m, n, k):
    return 2.0 * m * n * k / (tflops * 1e12) * 1e6


# (block_M, block_N, block_K, stages, threads, split): TFLOP/s measured on the H100.
MEASURED = {
    (16, 4096, 4096): {
        (64, 128, 64, 4, 128, 1): 23, (64, 128, 64, 4, 128, 2): 30, (64, 128, 64, 4, 128, 4): 36,
        (64, 128, 64, 4, 128, 8): 35, (64, 128, 64, 4, 128, 16): 28,
        (128, 256, 64, 3, 256, 1): 12, (128, 256, 64, 3, 256, 2): 20,
        (128, 256, 64, 3, 256, 4): 29, (128, 256, 64, 3, 256, 8): 32,
        (128, 256, 64, 3, 256, 16): 24,
        (64, 64, 64, 4, 128, 1): 26, (64, 64, 64, 4, 128, 2): 28, (64, 64, 64, 4, 128, 4): 28,
        (64, 64, 64, 4, 128, 8): 27, (64, 64, 64, 4, 128, 16): 25,
        (64, 128, 128, 3, 128, 4): 34, (64, 128, 128, 3, 128, 8): 28,
        (64, 128, 128, 3, 128, 16): 22,
        (64, 256, 64, 3, 128, 4): 30, (64, 256, 64, 3, 128, 8): 35, (64, 256, 64, 3, 128, 16): 25,
        (64, 128, 64, 6, 128, 4): 35, (64, 128, 64, 6, 128, 8): 28, (64, 128, 64, 6, 128, 16): 22,
        (128, 128, 32, 3, 128, 1): 13, (256, 128, 64, 3, 256, 1): 13,
        (128, 256, 64, 4, 256, 1): 12,
    },
    (128, 14336, 4096): {
        (128, 256, 64, 3, 256, 1): 286, (128, 128, 32, 3, 128, 1): 221,
        (64, 128, 64, 4, 128, 1): 316, (128, 256, 64, 4, 256, 1): 299,
        (256, 128, 64, 3, 256, 1): 199,
        (64, 128, 64, 4, 128, 2): 210, (64, 128, 64, 4, 128, 4): 175,
    },
    (4096, 4096, 4096): {
        (128, 256, 64, 3, 256, 1): 588, (128, 128, 32, 3, 128, 1): 498,
        (64, 128, 64, 4, 128, 1): 414, (128, 256, 64, 4, 256, 1): 617,
        (256, 128, 64, 3, 256, 1): 599,
    },
    (8192, 8192, 8192): {
        (128, 256, 64, 3, 256, 1): 646, (128, 128, 32, 3, 128, 1): 521,
        (64, 128, 64, 4, 128, 1): 388, (128, 256, 64, 4, 256, 1): 622,
        (256, 128, 64, 3, 256, 1): 637,
    },
    (4096, 14336, 4096): {
        (128, 256, 64, 3, 256, 1): 595, (128, 128, 32, 3, 128, 1): 477,
        (64, 128, 64, 4, 128, 1): 391, (128, 256, 64, 4, 256, 1): 590,
        (256, 128, 64, 3, 256, 1): 595,
    },
}
KEYS = ("block_M", "block_N", "block_K", "num_stages", "threads", "kiln:split_k")


def predict(kiln, shape, configs):
    """{config: predicted µs} for the configs of one shape, through kiln tune --dry-run."""
    out = {}
    for cfg in configs:
        args = [kiln, "tune", GEMM, "--bind", f"M={shape[0]}", "--bind", f"N={shape[1]}",
                "--bind", f"K={shape[2]}", "--bind", "dtype=float16", "--dry-run", "--arch",
                "h100", "--target", "cuda:sm_90", "--strategy", "grid", "--no-verify", "--json"]
        for k, v in zip(KEYS, cfg):
            args += ["--space", f"{k}={v}"]
        r = subprocess.run(args, capture_output=True, text=True, check=True)
        cands = json.loads(r.stdout)["candidates"]
        out[cfg] = cands[0]["predicted_us"] if cands and cands[0]["fits_model"] else float("inf")
    return out


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    for pos, i in enumerate(order):
        r[i] = float(pos)
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    report = []
    for shape, meas in MEASURED.items():
        configs = sorted(meas)
        pred = predict(args.kiln, shape, configs)
        measured_us = {c: us(meas[c], *shape) for c in configs}
        rho = spearman([pred[c] for c in configs], [measured_us[c] for c in configs])
        pick = min(configs, key=lambda c: pred[c])
        best = min(configs, key=lambda c: measured_us[c])
        regret = measured_us[pick] / measured_us[best]
        print(f"\n{shape[0]}x{shape[1]}x{shape[2]}: Spearman {rho:.2f}; model's pick "
              f"{pick} measured {measured_us[pick]:.1f} us, best {best} {measured_us[best]:.1f} us "
              f"(regret {regret:.2f}x)")
        for c in sorted(configs, key=lambda c: pred[c]):
            print(f"  {c}: predicted {pred[c]:7.1f} us, measured {measured_us[c]:7.1f} us")
        report.append({"shape": shape, "spearman": rho, "regret": regret,
                       "configs": [{"config": dict(zip(KEYS, c)), "predicted_us": pred[c],
                                    "measured_us": measured_us[c]} for c in configs]})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
