#!/usr/bin/env python3
"""Kernel benchmarks on the GPU: Kiln-compiled examples against torch peers in the same run.

  GEMM (examples/gemm/gemm.py): fp16/bf16 at 4096^3, 8192^3 and LLM shapes, TFLOP/s and the
      ratio to torch.matmul (cuBLAS); each shape tries a few tile configs (listed) and
      reports the best, after checking its output against torch.
  Memory-bound (add, softmax, layernorm, rmsnorm at their bind sizes): achieved bandwidth
      and the ratio to a device-to-device torch copy_.
  Flash attention (batch 8, heads 16, seq 4096, dim 128, fp16, causal and not): TFLOP/s and
      the ratio to torch's scaled_dot_product_attention.

    python3 bench/gpu_kernels.py --kiln-opt build/kiln-opt [--quick] [--json out.json]
"""

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import kiln_gpu  # noqa: E402

EX = lambda p: os.path.join(ROOT, "examples", p)  # noqa: E731

# (block_M, block_N, block_K, num_stages, threads)
GEMM_CONFIGS_LARGE = [
    (128, 128, 32, 3, 128),
    (128, 256, 32, 3, 256),
    (256, 128, 32, 3, 256),
    (128, 128, 64, 3, 256),
    (128, 256, 64, 3, 256),
    (128, 128, 32, 4, 256),
    (128, 256, 64, 4, 256),
    (256, 128, 64, 3, 256),
    (128, 256, 32, 4, 256),
    (128, 128, 64, 3, 128),  # two CTAs per SM
    (128, 128, 32, 4, 128),
    (256, 128, 64, 4, 256),
    # 16 warps (64 x 32 warp tiles): twice the warps per scheduler to hide latency.
    (256, 128, 32, 4, 512),
    (256, 128, 32, 5, 512),
    (256, 128, 64, 3, 512),
    (128, 256, 32, 4, 512),
    (128, 256, 32, 5, 512),
]
GEMM_CONFIGS_SMALL_M = [
    (16, 128, 64, 4, 128),
    (16, 64, 128, 4, 128),
    (32, 128, 64, 4, 128),
    (16, 256, 64, 3, 128),
]
GEMM_CONFIGS_MID_M = [
    (128, 128, 64, 3, 256),
    (64, 128, 64, 4, 128),
    (128, 64, 64, 4, 128),
    (64, 256, 32, 4, 256),
]


def gemm_bench(kiln_opt, dtype, M, N, K, configs, workdir, results):
    import torch

    tdt = kiln_gpu.torch_dtype(dtype)
    A = (torch.rand(M, K, device="cuda") * 2 - 1).to(tdt)
    B = (torch.rand(K, N, device="cuda") * 2 - 1).to(tdt)
    ref = A.float() @ B.float()
    scale = float(ref.abs().max())
    t_torch, _ = kiln_gpu.time_kernel(lambda: torch.matmul(A, B))
    best = None
    tried = []
    for bm, bn, bk, st, th in configs:
        binds = dict(M=M, N=N, K=K, block_M=bm, block_N=bn, block_K=bk, num_stages=st, threads=th, dtype=dtype)
        try:
            c = kiln_gpu.compile_program(kiln_opt, EX("gemm/gemm.py"), binds, workdir=workdir)
        except RuntimeError as e:
            tried.append({"config": [bm, bn, bk, st, th], "error": str(e).splitlines()[-1][:160]})
            continue
        C = torch.zeros(M, N, device="cuda", dtype=tdt)
        c.run([A, B, C])
        torch.cuda.synchronize()
        err = float((C.float() - ref).abs().max()) / scale
        ms, _ = kiln_gpu.time_kernel(lambda: c.run([A, B, C]))
        ok = err < 2e-2
        tried.append({"config": [bm, bn, bk, st, th], "ms": ms, "rel_err": err, "ok": ok})
        if ok and (best is None or ms < best[0]):
            best = (ms, [bm, bn, bk, st, th], err)
    flops = 2.0 * M * N * K
    r = {
        "kind": "gemm", "dtype": dtype, "M": M, "N": N, "K": K,
        "torch_ms": t_torch, "torch_tflops": flops / t_torch / 1e9,
        "kiln_ms": best[0] if best else None,
        "kiln_tflops": flops / best[0] / 1e9 if best else None,
        "ratio": t_torch / best[0] if best else None,
        "config": best[1] if best else None, "tried": tried,
    }
    results.append(r)
    print(json.dumps({k: v for k, v in r.items() if k != "tried"}), flush=True)


def bandwidth_bench(kiln_opt, name, path, variants, workdir, results):
    """Best of the example's bind line and `variants` (tile configs over the same problem)."""
    import torch

    base = kiln_gpu.read_bind_line(path, "bind")
    mod = kiln_gpu.load_example_module(path)
    n_in = kiln_gpu.num_inputs(mod)
    best = None
    tried = []
    for extra in [{}] + variants:
        binds = {**base, **extra}
        try:
            c = kiln_gpu.compile_program(kiln_opt, path, binds, workdir=workdir)
        except RuntimeError as e:
            tried.append({"binds": binds, "error": str(e).splitlines()[-1][:160]})
            continue
        tensors = kiln_gpu.make_tensors(c.launch, n_in)
        c.run(tensors)
        torch.cuda.synchronize()
        ref = mod.ref_program(*[t.cpu().numpy() for t in tensors[:n_in]])
        ref = ref[0] if isinstance(ref, tuple) else ref
        got = tensors[n_in].float().cpu().numpy()
        err = float(np.nanmax(np.abs(got - ref.astype(np.float32)))) / max(1.0, float(np.nanmax(np.abs(ref))))
        ms, _ = kiln_gpu.time_kernel(lambda: c.run(tensors))
        ok = err < 2e-2
        tried.append({"binds": binds, "ms": ms, "rel_err": err, "ok": ok})
        if ok and (best is None or ms < best[0]):
            best = (ms, binds, sum(t.numel() * t.element_size() for t in tensors))
    src = torch.empty(best[2] // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t_copy, _ = kiln_gpu.time_kernel(lambda: dst.copy_(src))
    bw = best[2] / best[0] / 1e6
    copy_bw = 2 * src.numel() / t_copy / 1e6
    r = {"kind": "bandwidth", "name": name, "binds": best[1], "kiln_ms": best[0], "kiln_gbs": bw,
         "copy_gbs": copy_bw, "ratio": bw / copy_bw, "tried": tried}
    results.append(r)
    print(json.dumps({k: v for k, v in r.items() if k != "tried"}), flush=True)


def attention_bench(kiln_opt, causal, configs, workdir, results):
    import torch
    import torch.nn.functional as F

    b, h, s, d = 8, 16, 4096, 128
    q, k, v = [(torch.rand(b, h, s, d, device="cuda") * 2 - 1).half() for _ in range(3)]
    t_sdpa, _ = kiln_gpu.time_kernel(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
    flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    best = None
    tried = []
    for bm, bn, st, th in configs:
        binds = dict(batch=b, heads=h, seq_len=s, dim=d, is_causal=causal, block_M=bm, block_N=bn,
                     num_stages=st, threads=th)
        try:
            c = kiln_gpu.compile_program(kiln_opt, EX("attention/flash_attention_fwd.py"), binds, workdir=workdir)
        except RuntimeError as e:
            tried.append({"config": [bm, bn, st, th], "error": str(e).splitlines()[-1][:160]})
            continue
        O = torch.zeros_like(q)
        c.run([q, k, v, O])
        torch.cuda.synchronize()
        err = float((O.float() - ref).abs().max())
        ms, _ = kiln_gpu.time_kernel(lambda: c.run([q, k, v, O]))
        ok = err < 2e-2
        tried.append({"config": [bm, bn, st, th], "ms": ms, "abs_err": err, "ok": ok})
        if ok and (best is None or ms < best[0]):
            best = (ms, [bm, bn, st, th])
    r = {"kind": "attention", "causal": causal, "sdpa_ms": t_sdpa, "sdpa_tflops": flops / t_sdpa / 1e9,
         "kiln_ms": best[0] if best else None, "kiln_tflops": flops / best[0] / 1e9 if best else None,
         "ratio": t_sdpa / best[0] if best else None, "config": best[1] if best else None, "tried": tried}
    results.append(r)
    print(json.dumps({k2: v2 for k2, v2 in r.items() if k2 != "tried"}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-opt", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="")
    ap.add_argument("--only", default="gemm,llm,bandwidth,attention")
    ap.add_argument("--gemm-configs", default="",
                    help="replace the large-GEMM configs: 'bm,bn,bk,stages,threads;...'")
    args = ap.parse_args()
    if args.gemm_configs:
        GEMM_CONFIGS_LARGE[:] = [tuple(int(x) for x in c.split(",")) for c in args.gemm_configs.split(";")]
    import tempfile

    import torch

    workdir = tempfile.mkdtemp(prefix="kiln_bench_")
    results = []
    only = args.only.split(",")
    if "gemm" in only:
        for dtype in ["float16", "bfloat16"]:
            for n in ([4096] if args.quick else [4096, 8192]):
                gemm_bench(args.kiln_opt, dtype, n, n, n, GEMM_CONFIGS_LARGE, workdir, results)
    if "llm" in only:
        for M in [16, 128, 4096]:
            for N, K in [(4096, 4096), (14336, 4096), (4096, 14336)]:
                cfg = GEMM_CONFIGS_SMALL_M if M <= 32 else GEMM_CONFIGS_MID_M if M <= 256 else GEMM_CONFIGS_LARGE
                gemm_bench(args.kiln_opt, "float16", M, N, K, cfg, workdir, results)
    if "bandwidth" in only:
        variants = {
            "add": [dict(block_M=8, block_N=1024, threads=256), dict(block_M=16, block_N=512, threads=256)],
            "softmax": [dict(block_M=1, block_N=8192, threads=256), dict(block_M=1, block_N=8192, threads=128),
                        dict(block_M=2, block_N=8192, threads=256), dict(block_M=1, block_N=8192, threads=512),
                        dict(block_M=1, block_N=8192, threads=1024), dict(block_M=2, block_N=8192, threads=512)],
            # block_N = N: one tile, so each row is read from memory once.
            "layernorm": [dict(block_M=4, block_N=4096, threads=256), dict(block_M=8, block_N=1024, threads=256),
                          dict(block_M=4, block_N=2048, threads=256), dict(block_M=1, block_N=4096, threads=256),
                          dict(block_M=1, block_N=4096, threads=512), dict(block_M=2, block_N=4096, threads=256),
                          dict(block_M=2, block_N=4096, threads=512), dict(block_M=4, block_N=4096, threads=512)],
            "rmsnorm": [dict(block_M=4, threads=256), dict(block_M=1, threads=128), dict(block_M=2, threads=256)],
        }
        for name, p in [("add", "elementwise/add.py"), ("softmax", "softmax/softmax.py"),
                        ("layernorm", "norm/layernorm.py"), ("rmsnorm", "norm/rmsnorm.py")]:
            bandwidth_bench(args.kiln_opt, name, EX(p), variants[name], workdir, results)
    if "attention" in only:
        cfgs = [(128, 64, 1, 128), (128, 64, 2, 128), (64, 64, 2, 128), (128, 128, 2, 256), (128, 64, 2, 256)]
        for causal in [False, True]:
            attention_bench(args.kiln_opt, causal, cfgs, workdir, results)
    print(f"\n### Kernel benchmarks on {torch.cuda.get_device_name()} (torch {torch.__version__})\n")
    for r in results:
        if r["kind"] == "gemm":
            kt = f"{r['kiln_tflops']:.0f}" if r["kiln_tflops"] else "-"
            ra = f"{r['ratio']:.2f}" if r["ratio"] else "-"
            print(f"| gemm {r['dtype']} {r['M']}x{r['N']}x{r['K']} | {kt} TFLOP/s | cuBLAS {r['torch_tflops']:.0f} | {ra}x | {r['config']} |")
        elif r["kind"] == "bandwidth":
            cfg = " ".join(f"{k}={v}" for k, v in r["binds"].items() if k.startswith(("block", "threads")))
            print(f"| {r['name']} | {r['kiln_gbs']:.0f} GB/s | copy_ {r['copy_gbs']:.0f} | {r['ratio']:.2f}x | {cfg} |")
        else:
            kt = f"{r['kiln_tflops']:.0f}" if r["kiln_tflops"] else "-"
            ra = f"{r['ratio']:.2f}" if r["ratio"] else "-"
            print(f"| attention causal={r['causal']} | {kt} TFLOP/s | SDPA {r['sdpa_tflops']:.0f} | {ra}x | {r['config']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
