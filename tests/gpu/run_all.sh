#!/usr/bin/env bash
# GPU verification of the code generator: runs every example through Kiln on
# the attached GPU (test and realistic sizes, all claimed dtypes), checks each
# against torch / its NumPy reference, then the kernel benchmarks.
#   tests/gpu/run_all.sh [KILN_OPT] [OUT_DIR] [--full]
# KILN_OPT defaults to build/kiln-opt; on a machine without Kiln's build
# dependencies use a folder made by scripts/device_bundle.sh
# (LD_LIBRARY_PATH=<bundle>/lib). Needs python3 with torch and cupy.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kiln_opt=${1:-$root/build/kiln-opt}
out=${2:-$(mktemp -d)}
mode=${3:---quick}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 "$here/run_examples.py" --kiln-opt "$kiln_opt" --json "$out/examples.json" 2>&1 |
  grep -v '^{' | tail -60
status=${PIPESTATUS[0]}
bench_args=()
[ "$mode" = "--full" ] || bench_args+=(--quick)
python3 "$root/bench/gpu_kernels.py" --kiln-opt "$kiln_opt" "${bench_args[@]}" \
  --json "$out/bench.json" 2>&1 | grep -v '^{' | tail -40
exit "$status"
