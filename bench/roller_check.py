#!/usr/bin/env python3
"""Measures the GEMM configs of tuning plans on the GPU: each config of each plan is compiled
with kiln-opt, checked against torch and timed (CUDA events, L2 flushed, median of 30), so a
plan's roller top-k can be compared with the exhaustive best of its grid.

A plan is the JSON of `kiln tune --dry-run --json` (one for the roller, one for the grid):

    kiln tune examples/gemm/gemm.py --bind M=8192 --bind N=8192 --bind K=8192 --top-k 10 \
        --dry-run --json > roller.json
    kiln tune ... --strategy grid --space ... --dry-run --json > grid.json
    python3 bench/roller_check.py --kiln-opt KILN_OPT --plan roller.json --plan grid.json \
        --json out.json

Prints one JSON line per plan; runs on the GPU machine (torch and cupy needed).
"""

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import kiln_gpu  # noqa: E402


def gemm_inputs(binds, cache):
    import torch

    key = (binds["M"], binds["N"], binds["K"], binds.get("dtype", "float16"))
    if key not in cache:
        cache.clear()
        M, N, K, dtype = int(key[0]), int(key[1]), int(key[2]), key[3]
        tdt = kiln_gpu.torch_dtype(dtype)
        A = (torch.rand(M, K, device="cuda") * 2 - 1).to(tdt)
        B = (torch.rand(K, N, device="cuda") * 2 - 1).to(tdt)
        ref = A.float() @ B.float()
        cache[key] = (A, B, ref, float(ref.abs().max()), tdt)
    return cache[key]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-opt", required=True)
    ap.add_argument("--plan", action="append", required=True)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    import torch

    workdir = tempfile.mkdtemp(prefix="kiln_roller_")
    cache = {}
    out = []
    for path in args.plan:
        with open(path) as f:
            plan = json.load(f)
        file = plan["file"] if os.path.isabs(plan["file"]) else os.path.join(ROOT, plan["file"])
        fixed = {}
        for t in plan["tunables"]:
            fixed[t["name"]] = t["default"]
        rows = []
        for c in plan["candidates"]:
            binds = {**fixed, **plan["bind"], **c["config"]}
            A, B, ref, scale, tdt = gemm_inputs(binds, cache)
            row = {"config": c["config"], "predicted_us": c["predicted_us"], "rank": c["rank"]}
            try:
                k = kiln_gpu.compile_program(args.kiln_opt, file, binds, workdir=workdir)
                C = torch.zeros(ref.shape[0], ref.shape[1], device="cuda", dtype=tdt)
                k.run([A, B, C])
                torch.cuda.synchronize()
                row["rel_err"] = float((C.float() - ref).abs().max()) / scale
                row["ok"] = row["rel_err"] < 2e-2
                row["ms"], _ = kiln_gpu.time_kernel(lambda: k.run([A, B, C]))
            except Exception as e:  # a failed compile or launch is recorded, not fatal
                row["error"] = str(e).splitlines()[-1][:200]
            rows.append(row)
        r = {"plan": os.path.basename(path), "strategy": plan["strategy"], "bind": plan["bind"], "rows": rows}
        good = [x for x in rows if x.get("ok")]
        if good:
            best = min(good, key=lambda x: x["ms"])
            r["best_ms"] = best["ms"]
            r["best_config"] = best["config"]
        out.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "rows"}), flush=True)
        if args.json:  # after every plan, so a run cut short keeps what it measured
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
