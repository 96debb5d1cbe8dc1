#!/usr/bin/env bash
# Issue 28's GPU checks in one device call (a Hopper GPU: H100/H200), in order of what they
# unblock:
#   1. the tensor-map launch paths: tests/gpu/tensor_map_gpu_test.cc (kiln-run's and
#      kiln-worker's launch of a hand-written TMA copy) and the Python client's backends
#      (tests/python/test_gpu.py -k tensor_map);
#   2. the TMA + warp-specialized GEMM loop (Hopper's default since codegen 10) for
#      correctness: tests/gpu/wgmma_probe.py over its tile configs at a ragged size (each cubin
#      twice, and once at one CTA per SM);
#   3. its speed: bench/hopper_gemm.py (mma.sync, wgmma+cp.async, wgmma+TMA-WS, TileLang
#      when tilelang_bundle/ is carried, cuBLAS), --quick unless FULL=1;
#   4. the explicit T.ws / T.tma_copy examples: tests/gpu/warp_specialize_gpu.sh.
# The bundle (scripts/device_bundle.sh) must hold kiln-opt, kiln-run and, for step 1,
# gpu_tensor_map_gpu_test (build/tests/); kilnd, kiln-worker and kiln for the client test.
#   bash tests/gpu/hopper_check.sh [BUNDLE_DIR] [OUT_DIR]
# Exit status: the number of steps that failed.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$(cd "${1:-$here/device_bundle}" && pwd)
out=${2:-$(mktemp -d)}
mkdir -p "$out"
fail=0
quick=(--quick)
[ "${FULL:-0}" = 1 ] && quick=()
step() { echo; echo "=== $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader

step "1a. tensor maps: kiln-run and kiln-worker launch paths"
if [ -x "$bundle/bin/gpu_tensor_map_gpu_test" ]; then
  timeout 120 "$bundle/bin/gpu_tensor_map_gpu_test" 2>&1 | tail -15 || fail=$((fail + 1))
else
  echo "skipped: no $bundle/bin/gpu_tensor_map_gpu_test in the bundle"
fi
step "1b. tensor maps: the Python client's driver backends"
if [ -x "$bundle/bin/kilnd" ]; then
  (cd "$here/tests/python" && KILN_BIN_DIR="$bundle/bin" PYTHONPATH="$here/clients/python:$here/tests/python" \
    timeout 180 python3 -m pytest -q -x test_gpu.py -k tensor_map 2>&1 | tail -8) || fail=$((fail + 1))
else
  echo "skipped: no kilnd in the bundle"
fi

step "2. TMA + warp-specialized wgmma: correctness sweep"
timeout 400 python3 "$here/tests/gpu/wgmma_probe.py" \
  "$bundle/bin/kiln-opt" "${quick[@]}" 2>&1 | tail -30 ||
  fail=$((fail + 1))

step "3. speed against TileLang and cuBLAS"
if [ -f "$here/tilelang_bundle/tilelang.tar.xz" ]; then
  mkdir -p /tmp/tl && tar -xJf "$here/tilelang_bundle/tilelang.tar.xz" -C /tmp/tl
fi
PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 500 python3 "$here/bench/hopper_gemm.py" \
  --kiln-opt "$bundle/bin/kiln-opt" "${quick[@]}" \
  --json "$out/hopper_gemm.json" 2>&1 | tail -40 || fail=$((fail + 1))

step "4. explicit warp specialization examples"
if [ -x "$bundle/bin/kiln-run" ]; then
  timeout 300 bash "$here/tests/gpu/warp_specialize_gpu.sh" "$bundle" 2>&1 | tail -30 ||
    fail=$((fail + 1))
else
  echo "skipped: no kiln-run in the bundle"
fi
echo
echo "hopper_check: $fail step(s) failed; results in $out"
exit "$fail"
