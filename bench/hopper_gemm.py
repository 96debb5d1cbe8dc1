#!/usr/bin/env python3
"""Hopper GEMM benchmark of issue 28: the same TileLang source (examples/gemm/gemm.py) with the
same tile config through Kiln's code paths, through TileLang itself and against cuBLAS
(torch.matmul), in one run on one GPU.

Kiln variants (kiln-opt -> cubin through NVRTC, launched through the driver API):
  mma     cuda:sm_90 --gemm=mma: mma.sync + cp.async pipeline (the default until codegen 10)
  cpasync cuda:sm_90 --pipeline=cp.async: wgmma fed by the cp.async pipeline
  tma-ws  cuda:sm_90, the default: wgmma fed by TMA loads, an mbarrier ring and a producer
          warpgroup (built as sm_90a)
  nosplit tma-ws with --split-k=1: without the split Kiln makes by itself where the grid leaves
          half the SMs idle (split-k=auto, the default since codegen 18; not in the default list)
  tma-ws1, tma-ws2  tma-ws with --ws-blocks=1 / 2 (the register plan for that many blocks
          per SM; not in the default list)
  persist tma-ws with --persistent=on: one block per SM walking the output tiles, its
          producer loading the next tile during this one's epilogue (not in the default list)
  cluster tma-ws with --cluster=2: pairs of blocks (a thread-block cluster along grid x) whose
          producers multicast the operand tiles both load (not in the default list)
  tmastore tma-ws with --epilogue=tma: the accumulator through a swizzled shared tile and TMA
          stores; clstore and pstore add it to cluster and persist (not in the default list)
  alt     tma-ws from the kiln-opt given with --kiln-opt-alt (a before/after of a change in
          the same run; not in the default list)
  splitk  tma-ws with --split-k=N (--split-k; the K loop over N blocks per output tile, then a
          reduce kernel, the time that of both kernels launched back to back: decode shapes
          such as M = 16; not in the default list). splitkN (splitk4, splitk16, ...) names
          its count, so several counts can be timed in one run; splitkNf (splitk4f) sums in
          the last block of each tile instead (--split-k-reduce=fused)
  fusedk  tma-ws with --split-k-reduce=fused: Kiln's own split (where it splits) summed by
          the last block of each tile (not in the default list)
TileLang (optional): `fn.compile(**binds)` of the same file with the real tilelang imported;
"not installed" when it cannot be imported, and the rest still runs.

Every Kiln output is checked against torch.matmul (fp32 accumulation, then the output dtype)
before it is timed; a wrong result is reported as such and not timed. Timing: CUDA events
around `--batch` back-to-back launches (arguments and tensor maps prepared once), median of
`--reps`; the variants of a config are timed in `--rounds` interleaved rounds (the order
rotating), and each reports the median of its rounds; TFLOP/s = 2 M N K / time.

    python3 bench/hopper_gemm.py --kiln-opt build/kiln-opt [--quick] [--json out.json]
        [--shapes 4096x4096x4096,...] [--configs 128x256x64s3t256,...] [--dtypes float16,bfloat16]
        [--variants mma,cpasync,tma-ws,tilelang]
"""

import argparse
import ctypes
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import kiln_gpu  # noqa: E402

GEMM = os.path.join(ROOT, "examples", "gemm", "gemm.py")
SHAPES = ["4096x4096x4096", "8192x8192x8192", "4096x14336x4096", "4096x4096x14336",
          "128x14336x4096", "16x4096x4096"]
CONFIGS = ["128x256x64s3t256", "128x128x32s3t128", "64x128x64s4t128", "128x256x64s4t256",
           "256x128x64s3t256"]
VARIANTS = ["mma", "cpasync", "tma-ws", "tilelang"]
ALT_KILN_OPT = [""]
SPLIT_K = [8]


def parse_config(c):
    tile, rest = c.split("s")
    stages, threads = rest.split("t")
    bm, bn, bk = (int(x) for x in tile.split("x"))
    return {"block_M": bm, "block_N": bn, "block_K": bk, "num_stages": int(stages),
            "threads": int(threads)}


def compile_kiln(kiln_opt, variant, binds, workdir):
    arch = "sm_90"
    if variant == "alt":  # the default path of another kiln-opt (--kiln-opt-alt): A/B of a change
        kiln_opt, variant = ALT_KILN_OPT[0], "tma-ws"
    if variant.startswith("splitk"):  # splitk (--split-k's count), splitkN or splitkNf
        count = variant[6:].rstrip("f")
        extra = [f"--split-k={count or SPLIT_K[0]}"]
        if variant.endswith("f"):
            extra.append("--split-k-reduce=fused")
    else:
        extra = {"mma": ["--gemm=mma"], "cpasync": ["--pipeline=cp.async"], "tma-ws": [], "direct": ["--epilogue=direct"],
                 "tma-ws1": ["--ws-blocks=1"], "tma-ws2": ["--ws-blocks=2"],
                 "nosplit": ["--split-k=1"], "fusedk": ["--split-k-reduce=fused"],
                 "persist": ["--persistent=on"],
                 "cluster": ["--cluster=2"], "tmastore": ["--epilogue=tma"],
                 "clstore": ["--cluster=2", "--epilogue=tma"],
                 "pstore": ["--persistent=on", "--epilogue=tma"]}[variant]
    tag = ("alt_" if kiln_opt == ALT_KILN_OPT[0] else "") + variant + "_" + "_".join(f"{k}{v}" for k, v in sorted(binds.items()))
    cubin = os.path.join(workdir, tag + ".cubin")
    launch = os.path.join(workdir, tag + ".json")
    t0 = time.perf_counter()
    r = subprocess.run([kiln_opt, GEMM, *kiln_gpu.bind_args(binds), "--emit=cubin", "--target",
                        f"cuda:{arch}", "-o", cubin, "--launch-json", launch, *extra],
                       capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-2000:])
    with open(launch) as f:
        return kiln_gpu.Compiled(cubin, json.load(f), dt)


class PreparedLaunch:
    """A program's launches (its kernels in order, with the workspaces it needs) with their
    arguments (and tensor maps) encoded once."""

    def __init__(self, compiled, tensors):
        import torch

        self.drv = kiln_gpu._CudaDriver.get()
        self.launch = compiled.launch
        compiled.handle()  # loads the module
        self.keep, base = [], []
        # Arguments: parameters, then one pointer per workspace (zero-filled once: the
        # programs timed here write a workspace before they read it), then a kernel's own
        # tensor maps.
        workspaces = [torch.zeros([int(d) for d in w["shape"]], device="cuda",
                                  dtype=kiln_gpu.torch_dtype(w["dtype"]))
                      for w in compiled.launch.get("workspaces", [])]
        for t in list(tensors) + workspaces:
            v = ctypes.c_uint64(t.data_ptr())
            self.keep.append(v)
            base.append(ctypes.addressof(v))
        self.keep.append(workspaces)
        self.kernels = []
        for k in [compiled.launch] + list(compiled.launch.get("next_kernels", [])):
            fn = compiled._module.get_function(k["symbol"])
            smem = int(k.get("dynamic_smem_bytes", 0))
            if smem > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = smem
            ptr = getattr(fn, "ptr", None)
            handle = int(ptr if ptr is not None else fn.kernel.ptr)
            params = list(base)
            if k.get("tensor_maps"):
                view = kiln_gpu.Compiled(compiled.cubin_path, k, 0.0)
                for m, e in zip(k["tensor_maps"], view.tensor_map_encodings(tensors)):
                    buf, address = self.drv.encode_tensor_map(m.get("name", str(m["arg"])), e)
                    self.keep.append(buf)
                    params.append(address)
            argv = (ctypes.c_void_p * len(params))(*params)
            self.keep.append(argv)
            self.kernels.append((k["symbol"], handle, [int(g) for g in k["grid"]],
                                 list(k["block"]), smem, argv))

    def __call__(self, stream):
        for symbol, handle, grid, block, smem, argv in self.kernels:
            code = self.drv.launch(handle, *grid, *block, smem, stream, argv, None)
            if code != 0:
                raise RuntimeError(self.drv.error(f"cuLaunchKernel({symbol})", code))


def time_it(run, torch, batch, reps):
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(batch):
            run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / batch / 1e3)
    return statistics.median(times)


def time_rounds(runs, torch, rounds, batch, reps):
    """{name: seconds} for each of `runs` (name: callable): `rounds` interleaved rounds, the order
    rotating each round, so that clocks and heat drifting over a run weigh on every one alike;
    the median of the rounds."""
    samples = {v: [] for v in runs}
    order = list(runs)
    for r in range(rounds):
        k = r % max(1, len(order))
        for v in order[k:] + order[:k]:
            samples[v].append(time_it(runs[v], torch, batch, reps))
    return {v: statistics.median(ts) for v, ts in samples.items()}


def load_tilelang_module():
    try:
        import tilelang  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        return None, f"not installed ({type(e).__name__}: {str(e)[:200]})"
    spec = importlib.util.spec_from_file_location("kiln_example_gemm", GEMM)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, tilelang.__version__


def markdown_table(results):
    """Rows shape x config; per dtype: Kiln's default (tma-ws) / TileLang, their ratio, cuBLAS."""
    dtypes = list(dict.fromkeys(r["dtype"] for r in results))
    head = "| shape | config |" + "".join(
        f" {d}: Kiln / TileLang | ratio | cuBLAS |" for d in dtypes)
    lines = [head, "|" + "---|" * (2 + 3 * len(dtypes))]
    rows = {}
    for r in results:
        for cfg, o in r["configs"].items():
            rows.setdefault((r["shape"], cfg), {})[r["dtype"]] = o
    for (shape, cfg), per in rows.items():
        cells = [shape, cfg]
        for d in dtypes:
            o = per.get(d, {})
            k = o.get("tma-ws", {}).get("tflops")
            t = o.get("tilelang", {}).get("tflops")
            c = o.get("cublas", {}).get("tflops")
            fmt = lambda x: f"{x:.0f}" if x else "-"  # noqa: E731
            ratio = f"**{k / t:.2f}**" if k and t and k >= t else (f"{k / t:.2f}" if k and t else "-")
            cells += [f"{fmt(k)} / {fmt(t)}", ratio, fmt(c)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-opt", required=True)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kiln-opt-alt", default="",
                    help="another kiln-opt, timed as variant 'alt' (its default path)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved timing rounds per config (median of the rounds)")
    ap.add_argument("--split-k", type=int, default=8,
                    help="the splits of variant 'splitk' (kiln-opt --split-k)")
    ap.add_argument("--quick", action="store_true", help="4096^3 fp16, two configs")
    ap.add_argument("--json", default="")
    ap.add_argument("--markdown", default="",
                    help="also write a table: Kiln tma-ws / TileLang (ratio), cuBLAS, per dtype")
    args = ap.parse_args()
    ALT_KILN_OPT[0] = args.kiln_opt_alt
    SPLIT_K[0] = args.split_k
    if args.quick:
        args.shapes, args.configs, args.dtypes = "4096x4096x4096", "128x256x64s3t256,128x128x32s3t128", "float16"

    import torch

    workdir = tempfile.mkdtemp(prefix="hopper_gemm_")
    variants = args.variants.split(",")
    tl_mod, tl_version = (None, "not requested")
    if "tilelang" in variants:
        tl_mod, tl_version = load_tilelang_module()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, TileLang: {tl_version}")
    stream = torch.cuda.current_stream().cuda_stream
    results = []
    for dtype in args.dtypes.split(","):
        tdt = kiln_gpu.torch_dtype(dtype)
        for shape in args.shapes.split(","):
            M, N, K = (int(x) for x in shape.split("x"))
            torch.manual_seed(0)
            A = (torch.randn(M, K, device="cuda") * 0.1).to(tdt)
            B = (torch.randn(K, N, device="cuda") * 0.1).to(tdt)
            ref = torch.matmul(A.float(), B.float()).to(tdt)
            flops = 2.0 * M * N * K
            t_cublas = time_it(lambda: torch.matmul(A, B), torch, args.batch, args.reps)
            row = {"dtype": dtype, "shape": shape, "cublas_tflops": flops / t_cublas / 1e12,
                   "configs": {}}
            print(f"\n{dtype} {shape}: cuBLAS {row['cublas_tflops']:.0f} TFLOP/s")
            for cfg in args.configs.split(","):
                binds = {"M": M, "N": N, "K": K, **parse_config(cfg), "dtype": dtype}
                out, runs = {}, {}
                # Compile and check every variant first, then time them in interleaved
                # rounds (the order rotating each round), so that clocks and heat drifting
                # over the run weigh on every variant alike.
                for v in variants:
                    if v == "tilelang":
                        if tl_mod is None:
                            out[v] = {"error": tl_version}
                            continue
                        try:
                            t0 = time.perf_counter()
                            kern = tl_mod.gemm.compile(**{k: val for k, val in binds.items()
                                                          if k != "dtype"},
                                                       dtype=dtype)
                            ct = time.perf_counter() - t0
                            C = kern(A, B)
                            ok = torch.allclose(C.float(), ref.float(), rtol=2e-2, atol=2e-2)
                            if not ok:
                                out[v] = {"error": "wrong result", "compile_s": ct}
                                continue
                            out[v] = {"compile_s": ct}
                            runs[v] = (lambda kern=kern: kern(A, B))
                        except Exception as e:  # noqa: BLE001
                            out[v] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
                        continue
                    try:
                        comp = compile_kiln(args.kiln_opt, v, binds, workdir)
                        C = torch.empty(M, N, device="cuda", dtype=tdt)
                        C.fill_(float("nan"))
                        run = PreparedLaunch(comp, [A, B, C])
                        run(stream)
                        torch.cuda.synchronize()
                        ok = torch.allclose(C.float(), ref.float(), rtol=2e-2, atol=2e-2)
                        info = {"compile_s": comp.compile_s, "block": comp.launch["block"][0],
                                "tma": bool(comp.launch.get("tensor_maps"))}
                        if not ok:
                            bad = (~torch.isclose(C.float(), ref.float(), rtol=2e-2,
                                                  atol=2e-2)).sum().item()
                            out[v] = {**info, "error": f"wrong result ({bad} of {M * N} differ)"}
                            continue
                        out[v] = info
                        runs[v] = (lambda run=run: run(stream))
                    except Exception as e:  # noqa: BLE001
                        out[v] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
                runs["cublas"] = lambda: torch.matmul(A, B)
                for v, t in time_rounds(runs, torch, args.rounds, args.batch, args.reps).items():
                    out.setdefault(v, {})["tflops"] = flops / t / 1e12
                row["configs"][cfg] = out
                cells = [f"cuBLAS {out['cublas']['tflops']:.0f}"]
                for v in variants:
                    o = out[v]
                    cells.append(f"{v} {o['tflops']:.0f}" if "tflops" in o else f"{v} ERR({o['error'][:80]})")
                print(f"  {cfg}: " + " | ".join(cells), flush=True)
            results.append(row)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown_table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tilelang": tl_version, "device": torch.cuda.get_device_name(),
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
