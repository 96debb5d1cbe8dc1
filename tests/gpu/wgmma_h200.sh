#!/usr/bin/env bash
# The sm_90a wgmma GEMM path on the H200, for the lead to run from the repo root:
#   bash tests/gpu/wgmma_h200.sh [device_bundle]
# Needs the bundle's kiln-opt (device_bundle/bin, libraries in device_bundle/lib), torch and
# cupy; no network. Steps (each prints its own result; exit status 1 if any failed):
#   1. the CPU emulation of the sm_90a program vs NumPy (kiln-run --lower-for), if kiln-run is
#      in the bundle;
#   2. tests/gpu/wgmma_bench.py: gemm.py at 4096^3 and 8192^3 for several configs, sm_90a
#      (wgmma) and sm_90 (mma.sync), checked against torch.matmul and timed next to it;
#   3. tests/gpu/run_examples.py --only gemm --arch sm_90a: every GEMM example at its test and
#      realistic sizes through the wgmma path (fallbacks to mma.sync where wgmma cannot tile).
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=${1:-device_bundle}
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
opt="$bundle/bin/kiln-opt"
run="$bundle/bin/kiln-run"
[ -x "$opt" ] || { echo "no $opt" >&2; exit 2; }
rc=0
if [ -x "$run" ]; then
  echo "== 1. sm_90a program on the CPU emulation and on the GPU (kiln-run --check)"
  for t in "--target cpu --lower-for cuda:sm_90a --gemm wgmma" "--target cuda:0 --arch sm_90a --gemm wgmma"; do
    "$run" examples/gemm/gemm.py --test-bind $t --check --quiet && echo "PASS gemm.py test-bind $t" \
      || { echo "FAIL gemm.py test-bind $t"; rc=1; }
  done
fi
echo "== 2. wgmma vs mma.sync vs cuBLAS"
python3 tests/gpu/wgmma_bench.py --kiln-opt "$opt" --sizes 4096,8192 || rc=1
echo "== 3. GEMM examples through the wgmma path"
python3 tests/gpu/run_examples.py --kiln-opt "$opt" --only gemm --arch sm_90a || rc=1
exit $rc
