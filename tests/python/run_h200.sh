#!/usr/bin/env bash
# The Python client on a GPU machine (the H200: Ubuntu 24.04, torch, cupy, cuda-python,
# grpcio 1.84, protobuf 7 system-wide, no network). No pip install: clients/python goes
# on PYTHONPATH. Starts kilnd from the carried binaries (via tests/python/conftest.py)
# and runs
#   1. test_gpu.py: the GEMM example vs torch.matmul, flash attention vs torch's
#      scaled_dot_product_attention (causal and not), a side stream, >48 KiB of dynamic
#      shared memory, cupy arrays, each way of reaching the driver that is installed,
#      and a "[kiln-timing]" line: the 4096^3 GEMM next to torch.matmul;
#   2. when pytest and a host C++ compiler are there: the CPU-target suite (client,
#      @kiln.jit vs NumPy, generated-code checks) under this machine's grpcio/protobuf.
# Exits non-zero when anything that ran failed, or when no GPU test could run.
#
#   KILN_BIN_DIR=device_bundle/bin tests/python/run_h200.sh      (the default KILN_BIN_DIR)
# KILN_BIN_DIR holds kilnd, kiln-worker and kiln; its ../lib is put on LD_LIBRARY_PATH.
# PYTHON picks the interpreter (default python3).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=$(cd "${KILN_BIN_DIR:-$repo/device_bundle/bin}" 2>/dev/null && pwd) || {
  echo "run_h200: no ${KILN_BIN_DIR:-$repo/device_bundle/bin}; set KILN_BIN_DIR" >&2; exit 2; }
[ -x "$bin/kilnd" ] || { echo "run_h200: $bin has no kilnd" >&2; exit 2; }
export KILN_BIN_DIR="$bin"
export LD_LIBRARY_PATH="$bin/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$repo/clients/python:$here${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
python=${PYTHON:-python3}
cd "$here"

"$python" - <<'PY' || exit 2
import sys
import grpc, google.protobuf, numpy
import kiln
print(f"run_h200: python {sys.version.split()[0]}, grpcio {grpc.__version__}, "
      f"protobuf {google.protobuf.__version__}, numpy {numpy.__version__}, kiln from {kiln.__file__}")
try:
    import torch
    print(f"run_h200: torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}"
          + (f" ({torch.cuda.get_device_name()})" if torch.cuda.is_available() else ""))
except ImportError as e:
    print(f"run_h200: no torch: {e}")
PY
"$bin/kilnd" --version || { echo "run_h200: $bin/kilnd does not run (LD_LIBRARY_PATH?)" >&2; exit 2; }

have_pytest=0
"$python" -c "import pytest" 2>/dev/null && have_pytest=1
status=0

echo "== 1. test_gpu.py (torch on CUDA)"
if [ "$have_pytest" = 1 ]; then
  out=$(mktemp)
  "$python" -m pytest -p no:cacheprovider -v -rs test_gpu.py 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then status=1; fi
  # Everything skipped (no torch or no GPU) is a failure here: this is the GPU proof.
  if ! grep -qE "[0-9]+ passed" "$out"; then echo "run_h200: no GPU test passed"; status=1; fi
  rm -f "$out"
else
  echo "(pytest is not installed: tests/python/mini_pytest.py runs test_gpu.py)"
  "$python" mini_pytest.py test_gpu.py || status=1
fi

echo "== 2. CPU-target suite under this machine's grpcio/protobuf"
if [ "$have_pytest" = 0 ]; then
  echo "skipped: no pytest here"
elif ! command -v c++ >/dev/null 2>&1; then
  echo "skipped: no host C++ compiler (c++), which kilnd's CPU target needs"
else
  "$python" -m pytest -p no:cacheprovider -q -rs test_client.py test_jit_cpu.py \
    test_proto_fresh.py || status=1
fi

if [ "$status" -eq 0 ]; then echo "run_h200: PASS"; else echo "run_h200: FAIL"; fi
exit "$status"
