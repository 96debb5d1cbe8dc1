#!/usr/bin/env python3
"""Narrows down the sm_90a wgmma GEMM failure (docs/benchmarks.md, "Hopper wgmma"):
gemm.py at 4000x4104x4040 with 64x32x16 tiles is wrong on the H200 while the same tiles pass at
the test size and 128x256x64 passes at this size. For tile configs around the failing one this
runs each cubin twice (does the set of bad elements change between runs: a race) and once with
200 KiB of dynamic shared memory (one CTA per SM: does it depend on CTAs sharing an SM), and
prints the count and first rows/columns of bad elements against an fp32 torch matmul.

  LD_LIBRARY_PATH=device_bundle/lib python3 tests/gpu/wgmma_probe.py [KILN_OPT]
"""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, torch, cupy as cp
import kiln_gpu as kg

opt = sys.argv[1] if len(sys.argv) > 1 else "device_bundle/bin/kiln-opt"
M, N, K = 4000, 4104, 4040
torch.manual_seed(0)
A = (torch.rand(M, K, device="cuda") * 2 - 1).half()
B = (torch.rand(K, N, device="cuda") * 2 - 1).half()
ref = (A.float() @ B.float())

def check(c, tag):
    C = c.float()
    bad = ((C - ref).abs() > 1e-2 + 1e-2 * ref.abs())
    n = int(bad.sum())
    rows = torch.nonzero(bad.any(1)).flatten()
    cols = torch.nonzero(bad.any(0)).flatten()
    print(f"{tag}: {n} bad; rows {rows[:6].tolist()}.. ({rows.numel()}), cols {cols[:6].tolist()}.. ({cols.numel()})", flush=True)

for bm, bn, bk, st, th in [(64, 32, 16, 3, 128), (64, 32, 16, 2, 128), (64, 32, 32, 3, 128), (64, 64, 16, 3, 128), (128, 32, 16, 3, 128), (64, 32, 16, 4, 128)]:
    binds = dict(M=M, N=N, K=K, block_M=bm, block_N=bn, block_K=bk, num_stages=st, threads=th)
    try:
        comp = kg.compile_program(opt, "examples/gemm/gemm.py", binds, arch="sm_90a")
    except Exception as e:
        print(binds, "compile failed", str(e)[-200:]); continue
    fn = comp.function()
    smem = comp.launch["dynamic_smem_bytes"]
    grid = tuple(int(g) for g in comp.launch["grid"]); block = tuple(comp.launch["block"])
    tag = f"{bm}x{bn}x{bk} st{st} smem{smem}"
    for rep in range(2):
        C = torch.zeros(M, N, device="cuda", dtype=torch.half)
        comp.run([A, B, C]); torch.cuda.synchronize(); check(C, tag + f" run{rep}")
    big = 200 * 1024
    fn.max_dynamic_shared_size_bytes = big
    C = torch.zeros(M, N, device="cuda", dtype=torch.half)
    args = (np.uint64(A.data_ptr()), np.uint64(B.data_ptr()), np.uint64(C.data_ptr()))
    fn(grid, block, args, shared_mem=big); torch.cuda.synchronize(); check(C, tag + " 1 CTA/SM")
