#!/usr/bin/env python3
"""Replays roller's ranking against measured grids, offline: no GPU, no kilnd.

bench/tune_vs_grid.py leaves OUT/PROBLEM_grid.json, every config of roller's own space measured
on the GPU. This script plans each problem again with `kiln tune --dry-run` (the model as it is
now, with the device's micro-benchmark results applied through --measured, as kilnd applies
them) and looks its top-k up in those measurements: what the model change would have picked,
and how far from the exhaustive best, before spending device time on a new sweep.

  python3 bench/replay_plan.py --kiln build/kiln --grids OUT [--only NAME,...] [--top-k 10]
      [--target cuda:sm_90a] [--pass gemm=wgmma] [--measured dram_gbs=4077 ...]

The measured values are in the grid's kilnd log ("micro-benchmarks measured" or "planned").
Prints one Markdown row per problem; exit status 1 when a problem's top-k misses its grid best
by more than --bar (default 0.95 of its throughput).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_vs_grid import PROBLEMS, ROOT  # noqa: E402


def measured_configs(path):
    with open(path) as f:
        result = json.loads(f.read().strip().splitlines()[-1])
    out = {}
    for m in result.get("result", {}).get("measurements", []):
        if m.get("status") != "STATUS_OK":
            continue
        cfg = tuple(sorted((k, int(list(v.values())[0])) for k, v in m["config"].items()))
        out[cfg] = float(m.get("median_us", m.get("medianUs", 0)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--grids", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--target", default="cuda:sm_90")
    ap.add_argument("--pass", dest="pass_options", action="append", default=[])
    ap.add_argument("--measured", action="append", default=[])
    ap.add_argument("--bar", type=float, default=0.95)
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or [
        n for n in PROBLEMS if os.path.exists(os.path.join(args.grids, n + "_grid.json"))]
    print("| problem | top-k best (µs) | grid best (µs) | throughput | top-k measured | "
          "rank of the grid best |")
    print("|---|---|---|---|---|---|")
    rc = 0
    for name in names:
        grid = measured_configs(os.path.join(args.grids, name + "_grid.json"))
        if not grid:
            print(f"| {name} | - | - | - | no grid | - |")
            continue
        p = PROBLEMS[name]
        cmd = [args.kiln, "tune", os.path.join(ROOT, p["file"]), "--dry-run", "--json",
               "--top-k", str(args.top_k), "--arch", "h200", "--target", args.target]
        for k, v in p["bind"].items():
            cmd += ["--bind", f"{k}={v}"]
        for o in args.pass_options:
            cmd += ["--pass", o]
        for m in args.measured:
            cmd += ["--measured", m]
        plan = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        picks = [tuple(sorted(c["config"].items())) for c in plan["candidates"]]
        times = [grid[c] for c in picks if c in grid]
        best_cfg = min(grid, key=grid.get)
        g = grid[best_cfg]
        r = min(times) if times else float("inf")
        ratio = g / r if times else 0.0
        rank = picks.index(best_cfg) + 1 if best_cfg in picks else "-"
        print(f"| {name} | {r:.1f} | {g:.1f} | {ratio:.3f} | {len(times)}/{len(picks)} | {rank} |")
        if ratio < args.bar:
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
