#!/usr/bin/env python3
"""How a tune sweep's measurement throughput scales with the devices it measures on.

One kilnd, one cache. A grid tune first builds every config of the problem (and measures them);
then, for each round, the same grid is measured again (`kiln tune --remeasure`, every build a
cache hit) on each device set in turn, and the script prints each sweep's measurement rate:
measured configs per second between the first and the last measurement's completion (as
bench/tune_vs_grid.py computes it), the sweep's wall time and how many configs each device
measured. The summary gives each set's median rate over the rounds and its ratio to the first
set's, all from the same run.

  # issue 6's two-GPU figure, on a machine with two GPUs of one model:
  python3 bench/measure_rate.py --bundle device_bundle --problem gemm_4096 \\
      --target cuda:sm_90 --sets "cuda:0;cuda:0,cuda:1"
  # the scheduler's scaling with CPU-target workers (worker.cpu_workers), no GPU needed:
  python3 bench/measure_rate.py --build build --problem cpu_add --target cpu \\
      --kilnd-arg=--worker-cpu-workers=2 --sets "cpu;cpu,cpu:1"

--bundle is a folder from scripts/device_bundle.sh (bin/kilnd, bin/kiln, lib/); --build is a
CMake build folder holding kilnd, kiln and kiln-worker. --out keeps each sweep's JSON and the
daemon's log. Device sets are ';'-separated lists of kilnd device ids (`kiln devices`).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tune_vs_grid  # noqa: E402  (Kilnd, PROBLEMS, measure_rate)

ROOT = tune_vs_grid.ROOT

# A CPU-target problem whose candidates take a few hundred milliseconds each to measure (on the
# 2-core machine of docs/tuning.md): long enough for the workers, not the daemon, to bound the
# rate.
tune_vs_grid.PROBLEMS["cpu_add"] = {
    "file": "examples/elementwise/add.py", "bind": {"M": 512, "N": 512},
    "space": {"block_M": [8, 16, 32, 64], "block_N": [32, 64, 128, 256],
              "threads": [128, 256]}}  # 32 configs


def bundle_from_build(build):
    """A bundle-shaped folder (bin/, lib/) of links to a build's binaries; kilnd finds
    kiln-worker beside its real path."""
    d = tempfile.mkdtemp(prefix="kiln_rate_bundle_")
    os.makedirs(os.path.join(d, "bin"))
    os.makedirs(os.path.join(d, "lib"))
    for name in ("kilnd", "kiln"):
        os.symlink(os.path.abspath(os.path.join(build, name)), os.path.join(d, "bin", name))
    return d


def run_tune(bundle, daemon, problem, target, devices, remeasure, timeout, out_path):
    cmd = [os.path.join(bundle, "bin", "kiln"), "tune", os.path.join(ROOT, problem["file"]),
           "--strategy", "grid", "--target", target, "--json", "--progress", "never",
           "--server", daemon.address, "--timeout", str(timeout)]
    for k, v in problem["bind"].items():
        cmd += ["--bind", f"{k}={v}"]
    for k, vs in problem["space"].items():
        cmd += ["--space", f"{k}=" + ",".join(str(v) for v in vs)]
    for d in devices:
        cmd += ["--device", d]
    if remeasure:
        cmd.append("--remeasure")
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=daemon.env, timeout=timeout + 30)
    wall = time.monotonic() - t0
    if out_path:
        with open(out_path, "w") as f:
            f.write(p.stdout)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        raise RuntimeError(f"kiln tune exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout.strip().splitlines()[-1]), wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--bundle")
    src.add_argument("--build")
    ap.add_argument("--problem", required=True, help=", ".join(sorted(tune_vs_grid.PROBLEMS)))
    ap.add_argument("--target", default="cuda:sm_90")
    ap.add_argument("--sets", required=True, help="device sets: 'cuda:0;cuda:0,cuda:1'")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kilnd-arg", action="append", default=[], help="one kilnd flag; repeatable")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    problem = tune_vs_grid.PROBLEMS.get(args.problem)
    if problem is None:
        ap.error(f"unknown problem {args.problem!r}")
    sets = [[d for d in s.split(",") if d] for s in args.sets.split(";") if s]
    if not sets or any(not s for s in sets):
        ap.error("--sets needs ';'-separated, non-empty lists of device ids")
    union = sorted({d for s in sets for d in s})
    bundle = args.bundle or bundle_from_build(args.build)
    out = args.out or tempfile.mkdtemp(prefix="kiln_rate_")
    os.makedirs(out, exist_ok=True)
    tune_vs_grid.KILND_ARGS[:] = args.kilnd_arg

    configs = 1
    for vs in problem["space"].values():
        configs *= len(vs)
    print(f"# {args.problem}: {configs} configs, target {args.target}, kilnd "
          f"{' '.join(args.kilnd_arg) or '(defaults)'}, {args.rounds} rounds", flush=True)
    daemon = tune_vs_grid.Kilnd(bundle, os.path.join(out, "kilnd.log"))
    rates = {i: [] for i in range(len(sets))}
    try:
        result, wall = run_tune(bundle, daemon, problem, args.target, union, False, args.timeout,
                                os.path.join(out, "build.json"))
        ms = result.get("result", {}).get("measurements", [])
        ok = sum(1 for m in ms if m.get("status") == "STATUS_OK")
        print(f"builds and first measurements on {','.join(union)}: {wall:.1f} s, {ok} of "
              f"{len(ms)} ok", flush=True)
        print("| round | devices | configs | rate (configs/s) | wall s | per device |")
        print("|---|---|---|---|---|---|", flush=True)
        for r in range(args.rounds):
            for i, devices in enumerate(sets):
                result, wall = run_tune(
                    bundle, daemon, problem, args.target, devices, True, args.timeout,
                    os.path.join(out, f"r{r}_set{i}.json"))
                rate, counts = tune_vs_grid.measure_rate(result)
                ms = result.get("result", {}).get("measurements", [])
                if rate is not None:
                    rates[i].append(rate)
                rate_text = f"{rate:.2f}" if rate is not None else "-"
                print(f"| {r + 1} | {','.join(devices)} | {len(ms)} | {rate_text} | {wall:.2f} | "
                      f"{json.dumps(counts, sort_keys=True)} |", flush=True)
    finally:
        daemon.stop()

    base = statistics.median(rates[0]) if rates[0] else None
    print()
    for i, devices in enumerate(sets):
        if not rates[i]:
            print(f"{','.join(devices)}: no rate")
            continue
        med = statistics.median(rates[i])
        ratio = f", {med / base:.2f}x the first set" if base else ""
        print(f"{','.join(devices)}: median {med:.2f} configs/s over {len(rates[i])} "
              f"rounds{ratio}")
    print(f"JSON and the kilnd log: {out}")


if __name__ == "__main__":
    main()
