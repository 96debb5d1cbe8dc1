#!/usr/bin/env python3
"""Roller top-k against an exhaustive grid, through a real kilnd (issue 6's proof).

For each problem: a fresh kilnd on a fresh cache runs `kiln tune --strategy roller --top-k K`,
then another fresh kilnd and cache run `kiln tune --strategy grid --space ...` over the declared
space. Both measure on the GPU (validated against the reference, L2 flushed), nothing is shared
between them but the device's micro-benchmark results (measured once per device model and cache,
so both start from a copy of a cache that already holds them). Prints one Markdown row per problem as soon as it is done, and writes every
result (the whole TuneResult JSON) to OUT/PROBLEM_{roller,grid}.json.

  python3 bench/tune_vs_grid.py --bundle device_bundle --out OUT [--only NAME,...]
      [--timeout SECONDS] [--top-k 10] [--target cuda:sm_90] [--pass NAME=VALUE]...
      [--list] [--before-each CMD]

--pass gemm=wgmma with --target cuda:sm_90a tunes (both sides) Hopper's warpgroup MMA.

--devices LIST is passed to every kilnd (CUDA ordinals, `0` or `0,1`; default: all GPUs). The
grid's row then also gives its measurement rate: measured configs per second between the first
and the last measurement's completion, and how many each device measured. Issue 6's two-GPU
figure is that rate with --devices 0,1 over the rate with --devices 0, on one machine:

  python3 bench/tune_vs_grid.py --bundle device_bundle --only gemm_4096 --devices 0
  python3 bench/tune_vs_grid.py --bundle device_bundle --only gemm_4096 --devices 0,1

--bundle is a folder from scripts/device_bundle.sh (bin/kilnd, bin/kiln, lib/). With
KILN_WORKER_TRACE=1 in the environment the workers' per-request phase times land in
OUT/PROBLEM_*.kilnd.log.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GEMM = "examples/gemm/gemm.py"
GEMM_SPACE = {"block_M": [64, 128, 256], "block_N": [64, 128, 256], "block_K": [32, 64],
              "num_stages": [2, 3, 4], "threads": [128, 256]}  # 108 configs
GEMM_SPACE_SMALL_M = {"block_M": [16, 32, 64], "block_N": [64, 128, 256],
                      "block_K": [32, 64, 128], "num_stages": [2, 3, 4],
                      "threads": [128, 256]}  # 162 configs


def gemm(m, n, k):
    return {"file": GEMM, "bind": {"M": m, "N": n, "K": k}, "flops": 2.0 * m * n * k,
            "space": GEMM_SPACE_SMALL_M if m <= 16 else GEMM_SPACE}


PROBLEMS = {
    "gemm_8192": gemm(8192, 8192, 8192),
    "gemm_4096": gemm(4096, 4096, 4096),
}
for _m in (16, 128, 4096):
    for _n, _k in ((4096, 4096), (14336, 4096), (4096, 14336)):
        PROBLEMS[f"gemm_{_m}x{_n}x{_k}"] = gemm(_m, _n, _k)
# A self-check of this script on the CPU device (--target cpu).
PROBLEMS["cpu_gemm_small"] = {
    "file": GEMM, "bind": {"M": 128, "N": 128, "K": 64},
    "space": {"block_M": [32, 64], "block_N": [32, 64], "block_K": [32], "num_stages": [2],
              "threads": [128]}}
PROBLEMS["layernorm_16384x4096"] = {
    "file": "examples/norm/layernorm.py", "bind": {"M": 16384, "N": 4096},
    "space": {"block_M": [1, 2, 4, 8, 16], "block_N": [256, 512, 1024, 2048, 4096],
              "threads": [64, 128, 256, 512]}}  # 100 configs
PROBLEMS["softmax_8192x16384"] = {
    "file": "examples/softmax/softmax.py", "bind": {"M": 8192, "N": 16384},
    "space": {"block_M": [1, 2, 4, 8, 16], "block_N": [1024, 2048, 4096, 8192, 16384],
              "threads": [128, 256, 512, 1024]}}  # 100 configs
PROBLEMS["flash_attention_causal"] = {
    "file": "examples/attention/flash_attention_fwd.py",
    "bind": {"batch": 4, "heads": 32, "seq_len": 4096, "dim": 128, "is_causal": "True"},
    "space": {"block_M": [64, 128, 256], "block_N": [32, 64, 128], "num_stages": [1, 2, 3],
              "threads": [128, 256]}}  # 54 configs


class Kilnd:
    """A kilnd on a fresh cache, port chosen by the kernel."""

    def __init__(self, bundle, log_path, template=None):
        self.cache = tempfile.mkdtemp(prefix="kiln_tune_cache_")
        if template:
            shutil.rmtree(self.cache)
            shutil.copytree(template, self.cache)
        self.log_path = log_path
        self.log = open(log_path, "w")
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.path.join(bundle, "lib") + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        self.env = env
        self.proc = subprocess.Popen(
            [os.path.join(bundle, "bin", "kilnd"), "--listen", "127.0.0.1:0", "--cache-dir",
             self.cache, *KILND_ARGS], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.address = None
        for _ in range(600):
            with open(log_path) as f:
                m = re.search(r"listening on (\S+)", f.read())
            if m:
                self.address = m.group(1)
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"kilnd exited at start-up; see {log_path}")
            time.sleep(0.05)
        if self.address is None:
            raise RuntimeError(f"kilnd printed no address; see {log_path}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.cache, ignore_errors=True)


def make_template(bundle, out, target):
    """A cache that holds only the device's micro-benchmark results (and one tiny tune of an
    unrelated kernel that made them): kilnd measures a device model once per cache, not per
    sweep, so the sweeps below start from a copy of it and time only themselves."""
    template = tempfile.mkdtemp(prefix="kiln_tune_template_")
    shutil.rmtree(template)
    daemon = Kilnd(bundle, os.path.join(out, "template.kilnd.log"))
    try:
        subprocess.run([os.path.join(bundle, "bin", "kiln"), "tune",
                        os.path.join(ROOT, "examples/elementwise/add.py"), "--bind", "M=256",
                        "--bind", "N=256", "--top-k", "1", "--target", target, "--progress",
                        "never", "--server", daemon.address], capture_output=True,
                       env=daemon.env, timeout=120, check=False)
    finally:
        cache = daemon.cache
        daemon.proc.terminate()
        daemon.proc.wait(timeout=30)
        daemon.log.close()
    shutil.move(cache, template)
    return template


PASS_OPTIONS = []  # --pass NAME=VALUE, on every kiln tune
KILND_ARGS = []  # --devices LIST, on every kilnd


def pass_args():
    out = []
    for p in PASS_OPTIONS:
        out += ["--pass", p]
    return out


def roller_space(bundle, problem, target):
    """The domains roller derives for a problem (kiln tune --dry-run, no GPU needed)."""
    cmd = [os.path.join(bundle, "bin", "kiln"), "tune", os.path.join(ROOT, problem["file"]),
           "--strategy", "roller", "--dry-run", "--json", "--arch", "h200", "--target", target,
           *pass_args()]
    for k, v in problem["bind"].items():
        cmd += ["--bind", f"{k}={v}"]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(bundle, "lib")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return {t["name"]: t["domain"] for t in json.loads(p.stdout)["tunables"]}


def tune(bundle, problem, strategy, top_k, timeout, out_prefix, target, template, before=""):
    """Runs one tune on a fresh kilnd; returns (result dict or None, wall seconds, note)."""
    if before:
        subprocess.run(before, shell=True, check=False)
    daemon = Kilnd(bundle, out_prefix + ".kilnd.log", template)
    try:
        cmd = [os.path.join(bundle, "bin", "kiln"), "tune", os.path.join(ROOT, problem["file"]),
               "--target", target, "--json", "--progress", "never",
               "--server", daemon.address, "--timeout", str(timeout), *pass_args()]
        for k, v in problem["bind"].items():
            cmd += ["--bind", f"{k}={v}"]
        if strategy == "roller":
            cmd += ["--strategy", "roller", "--top-k", str(top_k)]
        else:
            cmd += ["--strategy", "grid"]
            for k, vs in problem["space"].items():
                cmd += ["--space", f"{k}=" + ",".join(str(v) for v in vs)]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=daemon.env,
                               timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            return None, time.monotonic() - t0, "timed out"
        wall = time.monotonic() - t0
        with open(out_prefix + ".json", "w") as f:
            f.write(p.stdout)
        if p.returncode not in (0, 1) or not p.stdout.strip():
            return None, wall, f"kiln tune exit {p.returncode}: {p.stderr.strip()[-300:]}"
        return json.loads(p.stdout.strip().splitlines()[-1]), wall, ""
    finally:
        daemon.stop()


def summary(result):
    """(best median us, best config text, measured, ok, failed-by-status)."""
    ms = result.get("result", {}).get("measurements", [])
    best = result.get("result", {}).get("best")
    statuses = {}
    for m in ms:
        s = m.get("status", "STATUS_UNSPECIFIED").replace("STATUS_", "").lower()
        statuses[s] = statuses.get(s, 0) + 1
    if not best:
        return None, "-", len(ms), statuses
    cfg = best.get("config", {})
    # Plain values ({"block_M": 128}); older kiln builds printed {"int_value": "128"}.
    text = ",".join(f"{k}={list(v.values())[0] if isinstance(v, dict) else v}"
                    for k, v in sorted(cfg.items()))
    return float(best.get("medianUs", best.get("median_us", 0))), text, len(ms), statuses


def measure_rate(result):
    """(measured configs per second between the first and last completion, {device: count});
    (None, counts) with fewer than two timestamps."""
    ms = result.get("result", {}).get("measurements", [])
    stamps = sorted(int(m.get("unix_ms", m.get("unixMs", 0))) for m in ms)
    stamps = [t for t in stamps if t > 0]
    counts = {}
    for m in ms:
        d = m.get("device_id", m.get("deviceId", "?"))
        counts[d] = counts.get(d, 0) + 1
    if len(stamps) < 2 or stamps[-1] == stamps[0]:
        return None, counts
    return (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 1000.0), counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", default="device_bundle")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-grid", default="", help="problems measured by roller only")
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--target", default="cuda:sm_90")
    ap.add_argument("--pass", dest="pass_options", action="append", default=[],
                    metavar="NAME=VALUE", help="a Kiln pass option of every build (gemm=wgmma)")
    ap.add_argument("--devices", default="",
                    help="kilnd --devices for every daemon (CUDA ordinals: 0 or 0,1)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--grid-space", choices=("declared", "roller"), default="declared",
                    help="the grid's space: the one declared here per problem, or the space "
                         "roller itself ranks (its derived domains, from a dry run), so that "
                         "the exhaustive search covers exactly what roller chose from")
    ap.add_argument("--before-each", default="",
                    help="a shell command run before every tune, e.g. one that empties a "
                         "compile cache outside Kiln, so that no sweep reuses another's builds")
    args = ap.parse_args()
    if args.list:
        for name, p in PROBLEMS.items():
            n = 1
            for vs in p["space"].values():
                n *= len(vs)
            print(f"{name}: {p['file']} {p['bind']} grid of {n}")
        return 0
    PASS_OPTIONS.extend(args.pass_options)
    if args.devices:
        KILND_ARGS.extend(["--devices", args.devices])
    bundle = os.path.abspath(args.bundle)
    out = args.out or tempfile.mkdtemp(prefix="kiln_tune_vs_grid_")
    os.makedirs(out, exist_ok=True)
    names = [n for n in args.only.split(",") if n] or [n for n in PROBLEMS if not n.startswith("cpu_")]
    skip_grid = set(n for n in args.skip_grid.split(",") if n)
    template = make_template(bundle, out, args.target)
    print("| problem | roller best | roller wall s | grid declared/measured/ok | grid best | "
          "grid wall s | roller/grid throughput | wall ratio |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    rc = 0
    for name in names:
        p = dict(PROBLEMS[name])
        if args.grid_space == "roller":
            p["space"] = roller_space(bundle, p, args.target)
        declared = 1
        for vs in p["space"].values():
            declared *= len(vs)
        r, r_wall, r_note = tune(bundle, p, "roller", args.top_k, args.timeout,
                                 os.path.join(out, name + "_roller"), args.target, template,
                                 args.before_each)
        r_us, r_cfg, _, _ = summary(r) if r else (None, "-", 0, {})
        if name in skip_grid:
            g, g_wall, g_note = None, 0.0, "skipped"
        else:
            g, g_wall, g_note = tune(bundle, p, "grid", args.top_k, args.timeout,
                                     os.path.join(out, name + "_grid"), args.target, template,
                                     args.before_each)
        g_us, g_cfg, g_n, g_status = summary(g) if g else (None, "-", 0, {})
        ratio = f"{g_us / r_us:.3f}" if r_us and g_us else "-"
        wall = f"{r_wall / g_wall:.2f}" if g and g_wall > 0 else "-"
        r_text = f"{r_cfg}: {r_us:.1f} us" if r_us else f"- ({r_note})"
        g_text = f"{g_cfg}: {g_us:.1f} us" if g_us else f"- ({g_note})"
        print(f"| {name} | {r_text} | {r_wall:.1f} | {declared}/{g_n}/{g_status.get('ok', 0)} "
              f"{json.dumps(g_status)} | {g_text} | {g_wall:.1f} | {ratio} | {wall} |",
              flush=True)
        if g:
            rate, per_device = measure_rate(g)
            rate_text = f"{rate:.2f} configs/s" if rate else "-"
            print(f"  grid measurement rate: {rate_text}, per device {json.dumps(per_device)}",
                  flush=True)
        if not r_us:
            rc = 1
    shutil.rmtree(template, ignore_errors=True)
    print(f"results in {out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
