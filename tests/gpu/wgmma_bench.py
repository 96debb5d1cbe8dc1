#!/usr/bin/env python3
"""The sm_90a wgmma GEMM path on an H200 next to torch.matmul (cuBLAS).

For each size and config: kiln-opt compiles examples/gemm/gemm.py for cuda:sm_90a (and, as the
baseline, the mma.sync program for cuda:sm_90) to a cubin with --launch-json; the kernel runs
through cupy.RawModule on torch tensors, is checked against torch.matmul (fp16 tolerance) and
timed (L2 flushed, median of 30, CUDA events) in the same process as torch.matmul. Prints a
Markdown table; exit status 1 if any case fails its check or does not compile.

    python3 tests/gpu/wgmma_bench.py --kiln-opt device_bundle/bin/kiln-opt [--sizes 4096,8192]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kiln_gpu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEMM = os.path.join(ROOT, "examples", "gemm", "gemm.py")

# (block_M, block_N, block_K, num_stages, threads)
CONFIGS = [
    (128, 256, 64, 3, 256),
    (128, 256, 64, 4, 256),
    (128, 128, 64, 3, 256),
    (128, 128, 64, 4, 128),
    (256, 128, 64, 3, 256),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-opt", required=True)
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--baseline", default="sm_90", help="also time this arch's program ('' to skip)")
    args = ap.parse_args()
    import tempfile

    import torch

    workdir = tempfile.mkdtemp(prefix="kiln_wgmma_")
    rows, failed = [], False
    for size in [int(s) for s in args.sizes.split(",")]:
        g = torch.Generator(device="cuda")
        g.manual_seed(0)
        A = (torch.rand((size, size), generator=g, device="cuda") * 2 - 1).half()
        B = (torch.rand((size, size), generator=g, device="cuda") * 2 - 1).half()
        ref = torch.matmul(A, B)
        ref64 = None
        torch_ms, _ = kiln_gpu.time_kernel(lambda: torch.matmul(A, B), reps=args.reps)
        flops = 2.0 * size**3
        rows.append((size, "torch.matmul (cuBLAS)", "", "ok", torch_ms, flops / torch_ms / 1e9, ""))
        for bm, bn, bk, st, th in CONFIGS:
            binds = {"M": size, "N": size, "K": size, "block_M": bm, "block_N": bn, "block_K": bk,
                     "num_stages": st, "threads": th}
            cfg = f"{bm}x{bn}x{bk} s{st} t{th}"
            for arch in ["sm_90a"] + ([args.baseline] if args.baseline else []):
                try:
                    c = kiln_gpu.compile_program(args.kiln_opt, GEMM, binds, arch=arch, workdir=workdir)
                except Exception as e:  # reported, the other configs still run
                    failed = True
                    rows.append((size, cfg, arch, f"COMPILE ERROR {str(e).splitlines()[-1][:120]}",
                                 float("nan"), float("nan"), ""))
                    continue
                C = torch.zeros((size, size), device="cuda", dtype=torch.half)
                c.run([A, B, C])
                torch.cuda.synchronize()
                if ref64 is None:
                    ref64 = (A.double() @ B.double())
                err = (C.double() - ref64).abs()
                # fp16 output of an fp32 sum of `size` products in [-1, 1]: relative to |C| + the
                # typical magnitude of the sum.
                tol = 2e-2 * (ref64.abs() + (size / 3.0) ** 0.5)
                bad = int((err > tol).sum().item())
                verdict = "ok" if bad == 0 else f"FAIL ({bad} elements)"
                failed = failed or bad != 0
                ms, _ = kiln_gpu.time_kernel(lambda: c.run([A, B, C]), reps=args.reps)
                res = c.launch.get("resources", {})
                rows.append((size, cfg, arch, verdict, ms, flops / ms / 1e9,
                             f"{res.get('registers', '?')} regs, {c.launch['dynamic_smem_bytes']} B smem"))
                print(rows[-1], flush=True)
        del A, B, ref, ref64
        torch.cuda.empty_cache()
    print(f"\n### GEMM fp16 on {torch.cuda.get_device_name()}: wgmma (sm_90a) vs mma.sync (sm_90) vs cuBLAS\n")
    print("| size | config | arch | check | median ms | TFLOP/s | resources |")
    print("|---|---|---|---|---|---|---|")
    for size, cfg, arch, verdict, ms, tf, res in rows:
        print(f"| {size} | {cfg} | {arch} | {verdict} | {ms:.4f} | {tf:.1f} | {res} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
