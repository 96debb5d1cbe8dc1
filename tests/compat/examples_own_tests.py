#!/usr/bin/env python3
"""Issue 30's last bar: TileLang's examples' own tests with Kiln in place of TileLang. Each
file runs as `__main__` (its own main() and assertions, as `python FILE` would) in a child
process with kiln.install_tilelang_shim(), its kernels compiled by the kilnd at --server and
launched on torch tensors; a file passes when it exits 0 within --timeout seconds.

  examples_own_tests.py --examples DIR --server HOST:PORT [--public | FILE...] [--json OUT]

--public runs the ten files of the public set; FILEs are paths relative to DIR. Prints one
line per file (PASS, or FAIL with the last line of its error) and the count; exit 0 when
every file passed. Needs a GPU, torch and the kiln package (clients/python) importable."""
import argparse
import json
import os
import subprocess
import sys
import time

PUBLIC_SET = (
    "gemm/example_gemm.py", "quickstart.py", "elementwise/example_elementwise_add.py",
    "norm/rms_norm.py", "norm/layernorm.py", "online_softmax/online_softmax.py",
    "gemv/example_gemv.py", "flash_attention/example_mha_fwd_bhsd.py",
    "gemm_splitk/example_tilelang_gemm_splitk.py", "convolution/example_convolution.py",
)

CHILD = r"""
import os, runpy, sys
import kiln
kiln.set_default_client(kiln.Client(os.environ["KILN_SERVER"], timeout=600))
assert kiln.install_tilelang_shim(), "the real TileLang is importable: the shim stays off"
path = sys.argv[1]
sys.argv = [path]
sys.path.insert(0, os.path.dirname(path))
runpy.run_path(path, run_name="__main__")
"""


def last_error(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    for l in reversed(lines):
        if "Error" in l or "error" in l or "Exception" in l or l.startswith("assert"):
            return l.strip()
    return lines[-1].strip() if lines else "(no output)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--public", action="store_true")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args(argv)
    files = list(PUBLIC_SET) if args.public else args.files
    if not files:
        ap.error("give --public or FILEs")
    env = dict(os.environ, KILN_SERVER=args.server)
    results, passed = [], 0
    for rel in files:
        path = os.path.join(os.path.abspath(args.examples), rel)
        start = time.monotonic()
        try:
            run = subprocess.run([sys.executable, "-c", CHILD, path], cwd=os.path.dirname(path),
                                 env=env, capture_output=True, text=True, timeout=args.timeout)
            ok, cause = run.returncode == 0, last_error(run.stderr or run.stdout)
        except subprocess.TimeoutExpired:
            ok, cause = False, f"timed out after {args.timeout:.0f} s"
        seconds = time.monotonic() - start
        passed += ok
        results.append({"file": rel, "passed": ok, "seconds": round(seconds, 1),
                        "cause": None if ok else cause})
        print(f"{'PASS' if ok else 'FAIL'} {rel} ({seconds:.1f} s)" + ("" if ok else f": {cause}"))
    print(f"examples' own tests: {passed}/{len(files)} pass")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"passed": passed, "files": results}, f, indent=1)
    return 0 if passed == len(files) else 1


if __name__ == "__main__":
    sys.exit(main())
