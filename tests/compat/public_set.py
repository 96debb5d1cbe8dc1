#!/usr/bin/env python3
"""Issue 30's public set: the 18 kernels of the ten TileLang example files, unchanged,
compiled by kiln-run as the sm_90 thread program (wgmma, TMA, warp specialization where
the program takes them) on the CPU target and checked against NumPy references
(tests/support/check_*_npy.py). Sizes are small and mostly not multiples of the tiles, so
that the partial-tile guards run too.

  public_set.py --examples DIR --kiln-run PATH [--work DIR] [--target-args ...] [--python P]

Prints one line per kernel and `public set: N/18 match NumPy`; exit 0 when all 18 match,
1 otherwise, 77 (ctest's skip code) when DIR does not exist (CI clones only this
repository; TileLang's examples sit beside the checkout). Standard library only; the
checkers need NumPy."""
import argparse
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(HERE, "..", "support")

GEMV = "--bind N=128 --bind K=1024"  # N a multiple of BLOCK_N: the examples do not guard rows
GEMV_SAVES = {"B": "a", "A": "x", "C": "o"}  # check_gemv_npy.py's o = a @ x
MATMUL = "--bind M=200 --bind N=136 --bind K=96 --bind block_M=128 --bind block_N=128 --bind block_K=32"

# (file, entry, bindings, {param: saved name}, {param: (shape, dtype) given as zeros},
#  checker and its arguments ({dir} is the kernel's folder)).
CASES = [
    ("gemm/example_gemm.py", "matmul", MATMUL, {"A": "A", "B": "B", "C": "C"}, {},
     ["check_public_npy.py", "matmul", "{dir}"]),
    ("quickstart.py", "matmul", MATMUL, {"A": "A", "B": "B", "C": "C"}, {},
     ["check_public_npy.py", "relu_matmul", "{dir}"]),
    ("elementwise/example_elementwise_add.py", "elementwise_add",
     "--bind M=100 --bind N=72 --bind block_M=32 --bind block_N=32 --bind threads=128 "
     "--bind in_dtype=float32 --bind out_dtype=float32", {"A": "A", "B": "B", "C": "C"}, {},
     ["check_public_npy.py", "add", "{dir}"]),
    ("norm/rms_norm.py", "rms_norm", "--bind M=20 --bind N=1000 --bind blk_m=1",
     {"A": "a", "B": "b"}, {}, ["check_rms_norm_npy.py", "{dir}"]),
    ("norm/rms_norm.py", "rms_norm_splitk",
     "--bind M=20 --bind N=1000 --bind blk_m=1 --bind blk_k=512", {"A": "a", "B": "b"}, {},
     ["check_rms_norm_npy.py", "{dir}"]),
    ("norm/layernorm.py", "_layernorm_fwd",
     "--bind N=64 --bind D=300 --bind in_dtype=float16 --bind out_dtype=float16",
     {n: n for n in ("X", "gamma", "beta", "Y", "Mean", "Rstd")}, {},
     ["check_public_npy.py", "layernorm_fwd", "{dir}"]),
    ("norm/layernorm.py", "_layernorm_bwd", "--bind N=64 --bind D=300 --bind in_dtype=float16",
     {n: n for n in ("X", "DY", "gamma", "Mean", "Rstd", "DX", "DGamma", "DBeta")},
     {"DGamma": ((300,), "float32"), "DBeta": ((300,), "float32")},
     ["check_layernorm_bwd_npy.py", "{dir}"]),
    ("online_softmax/online_softmax.py", "softmax_kernel", "", {"X": "X", "Y": "Y"}, {},
     ["check_public_npy.py", "softmax", "{dir}"]),
    ("gemv/example_gemv.py", "naive_gemv", GEMV + " --bind BLOCK_N=128 --bind BLOCK_K=128",
     GEMV_SAVES, {}, ["check_gemv_npy.py", "{dir}"]),
    ("gemv/example_gemv.py", "naive_splitk_gemv", GEMV + " --bind BLOCK_N=32 --bind BLOCK_K=32",
     GEMV_SAVES, {}, ["check_gemv_npy.py", "{dir}"]),
    ("gemv/example_gemv.py", "splitk_gemv",
     GEMV + " --bind BLOCK_N=32 --bind BLOCK_K=32 --bind reduce_threads=32", GEMV_SAVES, {},
     ["check_gemv_npy.py", "{dir}"]),
    ("gemv/example_gemv.py", "splitk_gemv_vectorized",
     GEMV + " --bind BLOCK_N=2 --bind reduce_threads=32", GEMV_SAVES, {},
     ["check_gemv_npy.py", "{dir}"]),
    ("gemv/example_gemv.py", "splitk_gemv_vectorized_tvm",
     GEMV + " --bind BLOCK_N=2 --bind reduce_threads=32", GEMV_SAVES, {},
     ["check_gemv_npy.py", "{dir}"]),
    ("gemv/example_gemv.py", "gemv_alloc_reducer", "--bind M=200 --bind N=328",
     {"a": "a", "x": "x", "o": "o"}, {}, ["check_gemv_npy.py", "{dir}"]),
    ("gemv/example_gemv.py", "get_autotuned_kernel",
     GEMV + " --bind BLOCK_N=2 --bind reduce_threads=4", GEMV_SAVES, {},
     ["check_gemv_npy.py", "{dir}"]),
    ("flash_attention/example_mha_fwd_bhsd.py", "flashattn",
     "--bind batch=1 --bind heads=2 --bind seq_q=200 --bind seq_kv=264 --bind dim=64 "
     "--bind is_causal=True --bind block_M=64 --bind block_N=64 --bind num_stages=2 "
     "--bind threads=128", {"Q": "Q", "K": "K", "V": "V", "Output": "Output"}, {},
     ["check_mha_fwd_npy.py", "{dir}", "causal"]),
    ("gemm_splitk/example_tilelang_gemm_splitk.py", "matmul",
     "--bind M=200 --bind N=136 --bind K=256 --bind block_M=128 --bind block_N=128 "
     "--bind block_K=32 --bind split_k=4", {"A": "A", "B": "B", "C": "C"},
     {"C": ((200, 136), "float32")}, ["check_public_npy.py", "matmul", "{dir}"]),
    ("convolution/example_convolution.py", "convolution",
     "--bind N=2 --bind C=16 --bind H=8 --bind W=8 --bind F=128 --bind K=3 --bind S=1 "
     "--bind D=1 --bind P=1 --bind block_M=64 --bind block_N=32 --bind block_K=16 "
     "--bind num_stages=2 --bind threads=128",
     {"data": "data", "kernel": "kernel", "out": "out"}, {},
     ["check_convolution_npy.py", "{dir}", "1", "1", "1"]),
]


def write_zeros(path, shape, dtype):
    """A .npy of zeros without NumPy (version 1.0 header, little-endian)."""
    descr = {"float32": "<f4", "float16": "<f2"}[dtype]
    count = 1
    for s in shape:
        count *= s
    shape_text = "(%s)" % "".join("%d, " % s for s in shape).rstrip(" ")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        f.write(bytes(count * int(descr[-1])))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", required=True)
    ap.add_argument("--kiln-run", required=True)
    ap.add_argument("--work", default="public_set")
    ap.add_argument("--target-args", default="--target cpu --lower-for cuda:sm_90")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the Python (with NumPy) that runs the checkers")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.examples):
        print("skipped: %s not found (TileLang's examples sit beside the checkout)" %
              args.examples)
        return 77
    matched = 0
    for n, (rel, entry, binds, saves, zeros, check) in enumerate(CASES):
        d = os.path.abspath(os.path.join(args.work, "%02d_%s" % (n, entry)))
        os.makedirs(d, exist_ok=True)
        cmd = [args.kiln_run, os.path.join(args.examples, rel), "--entry", entry, "--quiet"]
        cmd += shlex.split(args.target_args) + shlex.split(binds)
        for name, (shape, dtype) in zeros.items():
            path = os.path.join(d, name + ".zero.npy")
            write_zeros(path, shape, dtype)
            cmd += ["--input", "%s=%s" % (name, path)]
        for param, saved in saves.items():
            cmd += ["--save", "%s=%s" % (param, os.path.join(d, saved + ".npy"))]
        start = time.monotonic()
        run = subprocess.run(cmd, capture_output=True, text=True)
        ok = run.returncode == 0
        out = run.stdout + run.stderr
        if ok:
            chk = [args.python, os.path.join(SUPPORT, check[0])] + \
                  [a.format(dir=d) for a in check[1:]]
            res = subprocess.run(chk, capture_output=True, text=True)
            ok = res.returncode == 0
            out = res.stdout + res.stderr
        matched += ok
        print("%s %s %s (%.1f s)" % ("PASS" if ok else "FAIL", rel, entry,
                                     time.monotonic() - start))
        if not ok:
            print("  " + shlex.join(cmd))
            print("  " + out.strip().replace("\n", "\n  "))
    print("public set: %d/%d match NumPy" % (matched, len(CASES)))
    return 0 if matched == len(CASES) else 1


if __name__ == "__main__":
    sys.exit(main())
