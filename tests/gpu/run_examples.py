#!/usr/bin/env python3
"""Runs every example on the GPU through Kiln (source -> NVRTC cubin -> launch) and checks it.

For each example: the `# kiln: test-bind` size (small, ragged), the `# kiln: bind` size
(realistic), and the dtype variants the examples claim (bf16 and tf32 GEMMs). Outputs are
compared with torch (GEMMs, attention) or the example's NumPy ref_program. Prints a Markdown
table; exit status 1 if any case fails.

    python3 tests/gpu/run_examples.py --kiln-opt build/kiln-opt [--only gemm] [--arch sm_90a] [--json out.json]
"""

import argparse
import glob
import json
import math
import os
import sys
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kiln_gpu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def torch_refs():
    import torch
    import torch.nn.functional as F

    return {
        "gemm": lambda A, B: A.double() @ B.double(),
        "gemm_transposed_b": lambda A, B: A.float() @ B.float().T,
        "gemm_relu": lambda A, B, bias: torch.relu(A.float() @ B.float() + bias.float()),
        "gemm_splitk": lambda A, B: A.double() @ B.double(),
        "batched_gemm": lambda A, B: torch.bmm(A.float(), B.float()),
        "gemm_int8": lambda A, B: A.double() @ (B.double() if B.shape[0] == A.shape[1] else B.double().T),
        "flash_attention_fwd": lambda Q, K, V, causal=True: F.scaled_dot_product_attention(
            Q.float(), K.float(), V.float(), is_causal=causal
        ),
    }


# Extra dtype cases: (example stem, binds added to the bind line)
VARIANTS = [
    ("gemm", {"M": 4000, "N": 4104, "K": 4040}),  # ragged at a realistic size
    ("flash_attention_fwd", {"is_causal": False, "seq_len": 1000}),
    ("gemm", {"dtype": "bfloat16"}),
    # tf32 tensor cores (4-byte elements: a smaller tile keeps shared memory in bounds)
    ("gemm", {"dtype": "float32", "block_N": 128, "block_K": 32, "num_stages": 3}),
    ("gemm_transposed_b", {"dtype": "bfloat16"}),
    ("gemm_int8", {"transpose_B": True, "N": 4104}),
    # a row over all 16 warps (butterfly + one partial per warp), and one-tile layernorm rows
    ("softmax", {"block_M": 1, "block_N": 8192, "threads": 512}),
    ("layernorm", {"block_M": 2, "block_N": 4096, "threads": 512}),
    # float64 has no tensor instruction: the scalar multiply-add path
    ("gemm", {"dtype": "float64", "accum_dtype": "float64", "block_M": 64, "block_N": 64, "block_K": 16,
              "num_stages": 2, "threads": 128}),
]


def tolerance(dtype, k_hint):
    # Relative to the largest reference magnitude: 16-bit outputs round at 2^-8..2^-11;
    # tf32 products carry 10-bit mantissas.
    return {"float16": 1e-2, "bfloat16": 2e-2, "float32": 5e-3, "float64": 1e-6}.get(dtype, 0)


def compare(got, want, dtype):
    got = got.astype(np.float64)
    want = want.astype(np.float64)
    # Relative to the output's own peak (not to 1), so outputs far below 1 (softmax rows) are
    # checked as closely as outputs of order 1.
    peak = float(np.nanmax(np.abs(want))) if want.size else 0.0
    scale = peak if peak > 0 else 1.0
    tol = tolerance(dtype, None) * scale
    err = np.abs(got - want)
    nan_ok = np.isnan(got) & np.isnan(want)
    inf_ok = np.isinf(want) & (got == want)
    bad = ~((err <= tol) | nan_ok | inf_ok)
    max_err = float(np.nanmax(np.where(nan_ok | inf_ok, 0, err))) if err.size else 0.0
    return int(bad.sum()), max_err / scale


def run_case(kiln_opt, path, binds, refs, workdir, arch="sm_90"):
    import torch

    stem = os.path.splitext(os.path.basename(path))[0]
    mod = kiln_gpu.load_example_module(path)
    n_in = kiln_gpu.num_inputs(mod)
    compiled = kiln_gpu.compile_program(kiln_opt, path, binds, arch=arch, workdir=workdir)
    tensors = kiln_gpu.make_tensors(compiled.launch, n_in)
    compiled.run(tensors)
    torch.cuda.synchronize()
    ms, _ = kiln_gpu.time_kernel(lambda: compiled.run(tensors), warmup=2, reps=10)
    # Re-run on fresh outputs: timing repeated the launch (split-K accumulates).
    for t in tensors[n_in:]:
        t.zero_()
    compiled.run(tensors)
    torch.cuda.synchronize()
    inputs, outputs = tensors[:n_in], tensors[n_in:]
    is_causal = str(binds.get("is_causal", "True")) == "True"
    if stem in refs:
        with torch.no_grad():
            want = refs[stem](*inputs, causal=is_causal) if stem == "flash_attention_fwd" else refs[stem](*inputs)
        wants = [want.double().cpu().numpy()]
    else:
        res = mod.ref_program(*[t.float().cpu().numpy().astype(np.float64 if t.dtype == torch.float64 else np.float32)
                                if t.dtype == torch.bfloat16 else t.cpu().numpy() for t in inputs])
        wants = list(res) if isinstance(res, tuple) else [res]
    total_bad, worst = 0, 0.0
    for out, want, arg in zip(outputs, wants, compiled.launch["args"][n_in:]):
        got = out.float().cpu().numpy() if out.dtype == torch.bfloat16 else out.cpu().numpy()
        bad, err = compare(got, np.asarray(want, dtype=np.float64), arg["dtype"])
        total_bad += bad
        worst = max(worst, err)
    return {
        "example": os.path.relpath(path, ROOT),
        "binds": " ".join(f"{k}={v}" for k, v in binds.items()),
        "ok": total_bad == 0,
        "mismatches": total_bad,
        "max_rel_err": worst,
        "kernel_ms": ms,
        "compile_s": compiled.compile_s,
        "smem": compiled.launch["dynamic_smem_bytes"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-opt", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--sizes", default="test-bind,bind")
    ap.add_argument("--json", default="")
    ap.add_argument("--arch", default="sm_90", help="CUDA architecture (sm_90a: the wgmma path)")
    args = ap.parse_args()
    import tempfile

    import torch

    refs = torch_refs()
    workdir = tempfile.mkdtemp(prefix="kiln_examples_")
    cases = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*", "*.py"))):
        stem = os.path.splitext(os.path.basename(path))[0]
        if args.only and args.only not in path:
            continue
        for size in args.sizes.split(","):
            binds = kiln_gpu.read_bind_line(path, size)
            cases.append((path, binds))
            for vstem, extra in VARIANTS:
                if vstem == stem:
                    cases.append((path, {**binds, **extra}))
    results = []
    for path, binds in cases:
        try:
            r = run_case(args.kiln_opt, path, binds, refs, workdir, args.arch)
        except Exception as e:  # a failing case is reported, the others still run
            r = {"example": os.path.relpath(path, ROOT), "binds": " ".join(f"{k}={v}" for k, v in binds.items()),
                 "ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0][:200]}
            traceback.print_exc()
        results.append(r)
        print(json.dumps(r), flush=True)
    dev = torch.cuda.get_device_name()
    print(f"\n### Examples on {dev}\n")
    print("| example | bindings | result | max rel. error | kernel ms | source→cubin s |")
    print("|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['example']} | {r['binds']} | **ERROR** {r['error']} | | | |")
            continue
        verdict = "pass" if r["ok"] else f"**FAIL** ({r['mismatches']} elements)"
        print(f"| {r['example']} | {r['binds']} | {verdict} | {r['max_rel_err']:.2e} | {r['kernel_ms']:.4f} | {r['compile_s']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    failed = [r for r in results if not r.get("ok")]
    print(f"\n{len(results) - len(failed)}/{len(results)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
