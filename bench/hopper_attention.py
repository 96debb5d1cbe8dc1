#!/usr/bin/env python3
"""Hopper attention benchmark (issues 28 and 29): the same TileLang sources with the same
bindings through Kiln and through TileLang itself, against torch, in one run on one GPU.

Kernels (each file unchanged):
  mha      TileLang's flash_attention/example_mha_fwd_bhsd.py (entry flashattn), b8 h16
           s4096 d128 fp16, causal and not; torch peer: scaled_dot_product_attention
  kiln_fa  Kiln's examples/attention/flash_attention_fwd.py, same shapes and peer
  flashmla TileLang's warp_specialize/example_warp_specialize_flashmla.py (entry flashattn):
           MLA decode, batch 132, 128 heads, one KV head of 512 + 64 (rope) dims, 8192 keys;
           no torch peer (the reference is torch softmax attention, only checked)
Variants:
  kiln     kiln-opt --target cuda:sm_90 (Hopper's default path)
  alt      the default path of the kiln-opt given with --kiln-opt-alt (a before/after of a
           change in one run)
  overlap  kiln-opt --ws-overlap=on: the next tile's QK^T and this tile's PV in flight
           together while the softmax runs (FlashAttention-3's intra-warpgroup overlap)
  kiln-mma kiln-opt --gemm=mma: mma.sync for every gemm, which is what a program with a
           register A operand (P V) got before wgmma's register form (codegen 17)
  tilelang the real tilelang, compiling the same file (`tilelang.jit`'s form, or
           tilelang.compile of the factory's prim_func); "not installed" when it cannot be
           imported, and the rest still runs

Every output is checked against the torch reference before it is timed; a wrong result is
reported as such and not timed. Timing: CUDA events around `--batch` back-to-back launches,
median of `--reps`, in `--rounds` interleaved rounds with the order rotating (median of the
rounds). TFLOP/s counts the two gemms: 4 b h s^2 d (half of it when causal) for attention,
2 b h s (dim + pe_dim) + 2 b h s dim for MLA decode.

    python3 bench/hopper_attention.py --kiln-opt build/kiln-opt [--kernels mha,kiln_fa,flashmla]
        [--variants kiln,kiln-mma,tilelang] [--json out.json]
    python3 bench/hopper_attention.py --kiln-opt build/kiln-opt --compile-only   # no GPU needed
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import kiln_gpu  # noqa: E402

TL_EXAMPLES = os.environ.get("KILN_TILELANG_EXAMPLES",
                             os.path.join(ROOT, "..", "shared", "tilelang-a35008a", "examples"))


def mha_case(path, entry, causal, tl_form):
    b, h, s, d = 8, 16, 4096, 128
    cfg = dict(block_M=128, block_N=128, num_stages=2, threads=256)
    if entry == "flashattn":
        binds = dict(batch=b, heads=h, seq_q=s, seq_kv=s, dim=d, is_causal=causal, **cfg)
    else:
        binds = dict(batch=b, heads=h, seq_len=s, dim=d, is_causal=causal, **cfg)
    return {
        "name": f"{os.path.basename(path)[:-3]} causal={causal}", "path": path, "entry": entry,
        "binds": binds, "tl_form": tl_form, "flops": 4.0 * b * h * s * s * d * (0.5 if causal else 1.0),
        "shapes": [("Q", [b, h, s, d]), ("K", [b, h, s, d]), ("V", [b, h, s, d])],
        "outputs": [("Output", [b, h, s, d])], "causal": causal,
    }


def mla_case():
    b, h, s, dim, pe = 132, 128, 8192, 512, 64
    binds = dict(batch=b, heads=h, kv_head_num=1, seqlen_kv=s, dim=dim, pe_dim=pe, block_N=64,
                 block_H=64, num_split=1)
    return {
        "name": "flashmla", "entry": "flashattn", "binds": binds, "tl_form": "jit",
        "path": os.path.join(TL_EXAMPLES, "warp_specialize", "example_warp_specialize_flashmla.py"),
        "flops": 2.0 * b * h * s * (dim + pe) + 2.0 * b * h * s * dim,
        "shapes": [("Q", [b, h, dim]), ("Q_pe", [b, h, pe]), ("KV", [b, s, 1, dim]),
                   ("K_pe", [b, s, 1, pe])],
        # glse and Output_partial are the split path's; num_split = 1 leaves them alone.
        "outputs": [("glse", [b, h, 1]), ("Output_partial", [b, h, 1, dim]), ("Output", [b, h, dim])],
    }


def cases(kernels):
    out = []
    for k in kernels:
        for causal in (False, True):
            if k == "mha":
                out.append(mha_case(os.path.join(TL_EXAMPLES, "flash_attention", "example_mha_fwd_bhsd.py"),
                                    "flashattn", causal, "jit"))
            if k == "kiln_fa":
                out.append(mha_case(os.path.join(ROOT, "examples", "attention", "flash_attention_fwd.py"),
                                    "flash_attention_fwd", causal, "factory"))
        if k == "flashmla":
            out.append(mla_case())
    return out


ALT_KILN_OPT = [""]  # --kiln-opt-alt


def compile_kiln(kiln_opt, case, variant, workdir):
    extra = {"kiln": [], "kiln-mma": ["--gemm=mma"], "alt": [],
             "overlap": ["--ws-overlap=on"]}[variant]
    if variant == "alt":  # the default path of another kiln-opt (--kiln-opt-alt): A/B of a change
        kiln_opt = ALT_KILN_OPT[0]
    tag = f"{variant}_{len(os.listdir(workdir))}"
    cubin, launch = os.path.join(workdir, tag + ".cubin"), os.path.join(workdir, tag + ".json")
    t0 = time.perf_counter()
    r = subprocess.run([kiln_opt, case["path"], "--entry", case["entry"],
                        *kiln_gpu.bind_args(case["binds"]), "--emit=cubin", "--target", "cuda:sm_90",
                        "-o", cubin, "--launch-json", launch, *extra], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-2000:])
    with open(launch) as f:
        return kiln_gpu.Compiled(cubin, json.load(f), dt)


def reference(case, ins):
    import torch
    import torch.nn.functional as F

    if case["name"] == "flashmla":
        q, q_pe, kv, k_pe = (t.float() for t in ins)
        d = case["binds"]
        scale = (1.0 / (d["dim"] + d["pe_dim"])) ** 0.5
        out = torch.empty(q.shape, device="cuda")
        for b in range(q.shape[0]):  # one batch at a time: the scores of all are 4 GiB
            s = (q[b] @ kv[b, :, 0].T + q_pe[b] @ k_pe[b, :, 0].T) * scale
            out[b] = torch.softmax(s, dim=-1) @ kv[b, :, 0]
        return out
    q, k, v = ins
    return F.scaled_dot_product_attention(q, k, v, is_causal=case["causal"]).float()


def load_tilelang(path):
    import tilelang  # noqa: F401

    spec = importlib.util.spec_from_file_location("bench_tl_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-opt", required=True)
    ap.add_argument("--kernels", default="mha,kiln_fa,flashmla")
    ap.add_argument("--variants", default="kiln,kiln-mma,tilelang")
    ap.add_argument("--kiln-opt-alt", default="",
                    help="another kiln-opt, timed as variant 'alt' (its default path)")
    ap.add_argument("--batch", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compile-only", action="store_true",
                    help="only compile the Kiln variants and print their compile times (no GPU)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    variants = args.variants.split(",")
    ALT_KILN_OPT[0] = args.kiln_opt_alt
    if "alt" in variants and not args.kiln_opt_alt:
        ap.error("variant 'alt' needs --kiln-opt-alt")
    workdir = tempfile.mkdtemp(prefix="hopper_attention_")
    todo = cases(args.kernels.split(","))
    if args.compile_only:
        for case in todo:
            for v in (x for x in variants if x != "tilelang"):
                try:
                    c = compile_kiln(args.kiln_opt, case, v, workdir)
                except RuntimeError as e:
                    print(f"{case['name']} {v}: ERR({str(e).splitlines()[0][-160:]})")
                    continue
                print(f"{case['name']} {v}: compiled in {c.compile_s:.2f} s, block {c.launch['block']}, "
                      f"{len(c.launch.get('tensor_maps', []))} tensor maps")
        return

    import torch
    from hopper_gemm import PreparedLaunch, time_rounds

    try:
        import tilelang

        tl_version = tilelang.__version__
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        tl_version = f"not installed ({type(e).__name__}: {str(e)[:200]})"
        variants = [v for v in variants if v != "tilelang"]
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, TileLang: {tl_version}")
    stream = torch.cuda.current_stream().cuda_stream
    results = []
    for case in todo:
        torch.manual_seed(0)
        ins = [(torch.randn(shape, device="cuda") * 0.5).half() for _, shape in case["shapes"]]
        ref = reference(case, ins)
        out, runs = {}, {}

        def check(v, got):
            err = float((got.float() - ref).abs().max())
            ok = bool(torch.allclose(got.float(), ref, rtol=2e-2, atol=2e-2))
            out[v] = {"max_abs_err": err}
            if not ok:
                out[v]["error"] = f"wrong result (max abs err {err:.3g})"
            return ok

        for v in variants:
            try:
                if v == "tilelang":
                    mod = load_tilelang(case["path"])
                    t0 = time.perf_counter()
                    if case["tl_form"] == "jit":
                        kern = getattr(mod, case["entry"])(**case["binds"])
                        ct = time.perf_counter() - t0
                        extra = [torch.zeros(s, device="cuda", dtype=torch.float16)
                                 for _, s in case["outputs"][:-1]]
                        res = kern(*ins, *extra)
                        if check(v, res):
                            runs[v] = (lambda kern=kern, extra=extra: kern(*ins, *extra))
                    else:
                        kern = tilelang.compile(getattr(mod, case["entry"])(**case["binds"]))
                        ct = time.perf_counter() - t0
                        o = torch.zeros(case["outputs"][-1][1], device="cuda", dtype=torch.float16)
                        kern(*ins, o)
                        if check(v, o):
                            runs[v] = (lambda kern=kern, o=o: kern(*ins, o))
                    out[v]["compile_s"] = ct
                    continue
                comp = compile_kiln(args.kiln_opt, case, v, workdir)
                outs = [torch.zeros(s, device="cuda", dtype=torch.float16) for _, s in case["outputs"]]
                run = PreparedLaunch(comp, ins + outs)
                run(stream)
                torch.cuda.synchronize()
                if check(v, outs[-1]):
                    runs[v] = (lambda run=run: run(stream))
                out[v]["compile_s"] = comp.compile_s
            except Exception as e:  # noqa: BLE001
                out.setdefault(v, {})["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        if "causal" in case:
            q, k, vv = ins
            runs["sdpa"] = lambda: torch.nn.functional.scaled_dot_product_attention(
                q, k, vv, is_causal=case["causal"])
        for v, t in time_rounds(runs, torch, args.rounds, args.batch, args.reps).items():
            out.setdefault(v, {}).update(ms=t * 1e3, tflops=case["flops"] / t / 1e12)
        cells = []
        for v in list(variants) + (["sdpa"] if "sdpa" in out else []):
            o = out.get(v, {})
            cells.append(f"{v} {o['tflops']:.0f}" if "tflops" in o else f"{v} ERR({o.get('error', '?')[:120]})")
        if "tflops" in out.get("kiln", {}) and "tflops" in out.get("tilelang", {}):
            cells.append(f"kiln/tilelang {out['kiln']['tflops'] / out['tilelang']['tflops']:.2f}")
        print(f"{case['name']}: " + " | ".join(cells), flush=True)
        results.append({"case": case["name"], "binds": case["binds"], "variants": out})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "tilelang": tl_version,
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
