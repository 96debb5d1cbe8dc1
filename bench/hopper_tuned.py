"""Issue 28's tuned bar: the best configs `kiln tune` stored for examples/gemm/gemm.py against
cuBLAS (torch.matmul) in one process.

Each argument is the `kiln tune ... --json` output of one shape, in a file named MxNxK.json: its
best config (binds and Kiln's tuning knobs) is built with kiln-opt as the tune built it (knobs
as pass options), checked against torch, then timed against torch.matmul in interleaved rounds.

    kiln tune examples/gemm/gemm.py --bind M=4096 --bind N=4096 --bind K=4096 \\
        --target cuda:sm_90 --top-k 8 --json > 4096x4096x4096.json
    python3 bench/hopper_tuned.py --kiln-opt build/kiln-opt 4096x4096x4096.json ...
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import hopper_gemm  # noqa: E402
import kiln_gpu  # noqa: E402

# Kiln's tuning knobs as kiln-opt flags (driver::KnobPassOption's pass options).
KNOB_FLAGS = {
    "kiln:persistent": lambda v: "--persistent=" + ("on" if v else "off"),
    "kiln:tma_store": lambda v: "--epilogue=" + ("tma" if v else "direct"),
    "kiln:split_k": lambda v: f"--split-k={v}",
    "kiln:cluster": lambda v: f"--cluster={v}",
}


def scalar(v):
    """A BindingValue's JSON ({"i": "128"} and the like) as its value."""
    while isinstance(v, dict):
        v = next(iter(v.values()))
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln-opt", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("tunes", nargs="+", help="kiln tune --json outputs named MxNxK.json")
    args = ap.parse_args()
    import torch

    workdir = tempfile.mkdtemp(prefix="hopper_tuned_")
    stream = torch.cuda.current_stream().cuda_stream
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for path in args.tunes:
        with open(path) as f:
            doc = json.load(f)
        best = doc.get("result", doc)["best"]
        config = {k: int(scalar(v)) for k, v in best["config"].items()}
        shape = os.path.basename(path).split(".")[0]
        M, N, K = (int(x) for x in shape.split("x"))
        binds = {k: v for k, v in config.items() if not k.startswith("kiln:")}
        binds.update(M=M, N=N, K=K)
        flags = [KNOB_FLAGS[k](v) for k, v in config.items() if k in KNOB_FLAGS]
        cubin, launch = os.path.join(workdir, shape + ".cubin"), os.path.join(workdir, shape + ".json")
        r = subprocess.run([args.kiln_opt, hopper_gemm.GEMM, *kiln_gpu.bind_args(binds), "--emit=cubin",
                            "--target", "cuda:sm_90", "-o", cubin, "--launch-json", launch, *flags],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{shape}: kiln-opt failed: {r.stderr.strip()[-500:]}")
            continue
        with open(launch) as f:
            compiled = kiln_gpu.Compiled(cubin, json.load(f), 0.0)
        torch.manual_seed(0)
        A = (torch.randn(M, K, device="cuda") * 0.1).half()
        B = (torch.randn(K, N, device="cuda") * 0.1).half()
        ref = torch.matmul(A.float(), B.float()).half()
        C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.half)
        run = hopper_gemm.PreparedLaunch(compiled, [A, B, C])
        run(stream)
        torch.cuda.synchronize()
        ok = torch.allclose(C.float(), ref.float(), rtol=2e-2, atol=2e-2)
        t = hopper_gemm.time_rounds({"kiln": lambda: run(stream), "cublas": lambda: torch.matmul(A, B)},
                                    torch, args.rounds, args.batch, args.reps)
        flops = 2.0 * M * N * K
        tuned = " ".join(f"{k}={v}" for k, v in sorted(config.items()))
        print(f"{shape}: best {tuned} (tuner {float(best.get('median_us', best.get('medianUs', 0))):.1f} us), "
              f"{'matches torch' if ok else 'WRONG RESULT'}: Kiln {flops / t['kiln'] / 1e12:.0f} TFLOP/s, "
              f"cuBLAS {flops / t['cublas'] / 1e12:.0f}, Kiln / cuBLAS {t['cublas'] / t['kiln']:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
