#!/usr/bin/env python3
"""Correctness sweep of the sm_90a wgmma GEMM path over tile configs, on the GPU.

The wgmma main loop's bugs showed up only for some tiles at large ragged sizes (many k-tiles,
several CTAs per SM; docs/benchmarks.md, "Hopper wgmma"), so this runs gemm.py at
4000x4104x4040 (fp16, and bf16 for a subset) for every config of a small grid of block_M,
block_N, block_K, num_stages and threads: each cubin twice (a race shows up as a changing set of
bad elements) and once with 200 KiB of dynamic shared memory (one CTA per SM), against an fp32
torch matmul. Prints one line per config and a PASS/FAIL summary; exit status 1 on any failure.

  LD_LIBRARY_PATH=device_bundle/lib python3 tests/gpu/wgmma_probe.py [KILN_OPT] [--quick]
"""
import concurrent.futures
import itertools
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import kiln_gpu as kg

args = [a for a in sys.argv[1:] if not a.startswith("--")]
opt = args[0] if args else "device_bundle/bin/kiln-opt"
quick = "--quick" in sys.argv
M, N, K = 4000, 4104, 4040

configs = []
for bm, bn, bk, st in itertools.product((64, 128), (32, 64, 128, 256), (16, 32, 64), (2, 3, 4)):
    for th in ((128,) if bm == 64 else (128, 256)):
        configs.append(dict(block_M=bm, block_N=bn, block_K=bk, num_stages=st, threads=th,
                            dtype="float16"))
for bm, bn, bk, st in ((64, 32, 16, 3), (128, 128, 64, 3), (128, 256, 64, 4)):
    configs.append(dict(block_M=bm, block_N=bn, block_K=bk, num_stages=st,
                        threads=256 if bm == 128 else 128, dtype="bfloat16"))
if quick:
    configs = configs[::7]
only = os.environ.get("KILN_PROBE_ONLY")  # a regex over the config tags below
if only:
    import re
    configs = [c for c in configs if re.search(
        only, "{block_M}x{block_N}x{block_K} st{num_stages} thr{threads} {dtype}".format(**c))]

work = tempfile.mkdtemp(prefix="kiln_wgmma_probe_")


def compile_one(c):
    binds = dict(M=M, N=N, K=K, **c)
    try:
        return c, kg.compile_program(opt, "examples/gemm/gemm.py", binds, arch="sm_90a",
                                     workdir=work), None
    except Exception as e:  # a config the target cannot hold is not a wrong result
        return c, None, str(e).strip().splitlines()[-1][-160:]


torch.manual_seed(0)
inputs = {}
for dt in ("float16", "bfloat16"):
    tdt = getattr(torch, dt)
    A = (torch.rand(M, K, device="cuda") * 2 - 1).to(tdt)
    B = (torch.rand(K, N, device="cuda") * 2 - 1).to(tdt)
    inputs[dt] = (A, B, A.float() @ B.float())


def bad_count(C, ref):
    return int(((C.float() - ref).abs() > 1e-2 + 1e-2 * ref.abs()).sum())


failed = passed = skipped = 0
with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
    for c, comp, err in pool.map(compile_one, configs):
        tag = "{block_M}x{block_N}x{block_K} st{num_stages} thr{threads} {dtype}".format(**c)
        if comp is None:
            skipped += 1
            print(f"{tag}: not compiled ({err})", flush=True)
            continue
        A, B, ref = inputs[c["dtype"]]
        t0 = time.perf_counter()
        counts = []
        for _ in range(2):
            C = torch.zeros(M, N, device="cuda", dtype=A.dtype)
            comp.run([A, B, C])
            torch.cuda.synchronize()
            counts.append(bad_count(C, ref))
        fn = comp.function()
        big = 200 * 1024
        fn.max_dynamic_shared_size_bytes = big
        C = torch.zeros(M, N, device="cuda", dtype=A.dtype)
        comp.run([A, B, C], smem=big)  # with the kernel's tensor maps, where it has them
        torch.cuda.synchronize()
        counts.append(bad_count(C, ref))
        ok = not any(counts)
        took = time.perf_counter() - t0
        passed += ok
        failed += not ok
        print(f"{tag}: {'PASS' if ok else 'FAIL'} bad elements {counts[0]}, {counts[1]}, "
              f"one CTA/SM {counts[2]} ({took:.1f} s)", flush=True)
print(f"wgmma sweep at {M}x{N}x{K}: {passed} passed, {failed} failed, {skipped} not compiled: "
      f"{'PASS' if failed == 0 and passed > 0 else 'FAIL'}")
sys.exit(1 if failed or not passed else 0)
