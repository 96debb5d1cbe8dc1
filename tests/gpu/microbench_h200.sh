#!/usr/bin/env bash
# GPU proof of kilnd's micro-benchmarks (docs/tuning.md, "Hardware models"):
#   1. kilnd on a fresh cache lists cuda:0 as "pending";
#   2. a small roller tune on cuda:0 makes it measure: DRAM copy GB/s, L2 read
#      GB/s and mma.sync f16->f32 TFLOP/s appear in `kiln devices --json`;
#   3. torch references from the same run: a copy of a 1 GiB tensor (read +
#      write bytes / time, the same counting as the probe) and, for context
#      only, an fp16 matmul's TFLOP/s (cuBLAS uses wgmma on Hopper, so it is
#      not the mma.sync ceiling);
#   4. kilnd restarted on the same cache lists the values at once
#      (from_cache) and a second roller tune does not measure again (log).
# Exits nonzero on any failure.
#
#   tests/gpu/microbench_h200.sh [BUNDLE_DIR] [OUT_DIR]
# BUNDLE_DIR: a folder from scripts/device_bundle.sh (bin/ and lib/; default
# ./device_bundle). Needs python3 with torch. KILN_PROOF_DEVICE=cpu runs the
# same steps on the CPU device (no torch, no mma; a self-check of the script
# on a machine without a GPU).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bundle=$(cd "${1:-device_bundle}" && pwd) || { echo "no bundle folder" >&2; exit 2; }
out=${2:-$(mktemp -d)}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
dev=${KILN_PROOF_DEVICE:-cuda:0}
cache="$out/cache"
rm -rf "$cache"
pid=
fail() {
  echo "FAIL: $*" >&2
  [ -n "$pid" ] && kill -TERM "$pid" 2> /dev/null
  exit 1
}

start_kilnd() { # $1: log file
  "$bundle/bin/kilnd" --listen 127.0.0.1:0 --cache-dir "$cache" > "$1" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    grep -q 'listening on' "$1" && break
    kill -0 "$pid" 2> /dev/null || { cat "$1" >&2; fail "kilnd exited at start-up"; }
    sleep 0.1
  done
  addr=$(sed -n 's/.*listening on \([^ ]*\) .*/\1/p' "$1" | head -1)
  [ -n "$addr" ] || fail "kilnd printed no address"
}
stop_kilnd() {
  kill -TERM "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  pid=
}
kiln() { "$bundle/bin/kiln" "$@" --server "$addr"; }
# $dev's measured record as "state dram l2 mma from_cache | note".
measured() {
  kiln devices --json | DEV="$dev" python3 -c '
import json, os, sys
for d in json.load(sys.stdin)["devices"]:
    if d["id"] == os.environ["DEV"]:
        m = d.get("measured", {})
        print(m.get("state", ""), m.get("dram_gbs", 0), m.get("l2_gbs", 0),
              m.get("mma_f16_tflops", 0), m.get("from_cache", False), "|", m.get("note", ""))
        break
else:
    print("no-such-device 0 0 0 False |")'
}
tune() { # a small roller tune on $dev
  if [ "$dev" = cpu ]; then
    set -- "$1" "$root/examples/elementwise/add.py" --bind M=64 --bind N=128 --target cpu
  else
    set -- "$1" "$root/examples/gemm/gemm.py" --bind M=1024 --bind N=1024 --bind K=1024 \
      --target cuda:sm_90
  fi
  local n=$1
  shift
  kiln tune "$@" --strategy roller --top-k 2 --device "$dev" --progress never \
    > "$out/tune_$n.txt" 2>&1 || { cat "$out/tune_$n.txt" >&2; fail "tune $n failed"; }
}

[ "$dev" = cpu ] || nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem \
  --format=csv,noheader
start_kilnd "$out/kilnd1.log"
read -r state _ <<< "$(measured)"
echo "fresh cache: $dev measured state = $state"
[ "$state" = pending ] || fail "a fresh cache should list $dev as pending, got '$state'"

t0=$(date +%s.%N)
tune 1
t1=$(date +%s.%N)
read -r state dram l2 mma from_cache _ note <<< "$(measured)"
echo "after the first roller tune ($(python3 -c "print(f'{$t1 - $t0:.1f}')") s, probes included):"
echo "  state=$state dram=$dram GB/s l2=$l2 GB/s mma.sync=$mma TFLOP/s from_cache=$from_cache"
[ -n "$note" ] && echo "  note: $note"
[ "$state" = measured ] || fail "$dev was not fully measured: $state $note"
[ "$from_cache" = False ] || fail "the first measurement came from the cache"
grep -c 'micro-benchmarks starting' "$out/kilnd1.log" | grep -qx 1 ||
  fail "kilnd did not log exactly one micro-benchmark run"
grep 'micro-benchmarks measured' "$out/kilnd1.log"

[ "$dev" = cpu ] || python3 - "$dram" "$mma" << 'EOF' || fail "the torch reference failed"
import sys, torch
dram, mma = float(sys.argv[1]), float(sys.argv[2])
src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
dst = torch.empty_like(src)
def best_ms(fn, n=10):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3): fn()
    best = float("inf")
    for _ in range(n):
        start.record(); fn(); stop.record(); torch.cuda.synchronize()
        best = min(best, start.elapsed_time(stop))
    return best
ms = best_ms(lambda: dst.copy_(src))
torch_gbs = 2 * src.numel() / (ms * 1e-3) / 1e9
a = torch.randn(8192, 8192, dtype=torch.float16, device="cuda")
b = torch.randn(8192, 8192, dtype=torch.float16, device="cuda")
ms = best_ms(lambda: a @ b, 5)
torch_tflops = 2 * 8192**3 / (ms * 1e-3) / 1e12
print(f"DRAM copy, 1 GiB (read+write bytes): kiln probe {dram:8.0f} GB/s   torch copy_ {torch_gbs:8.0f} GB/s"
      f"   ratio {dram / torch_gbs:.3f}")
print(f"tensor: kiln mma.sync m16n8k16 f16->f32 {mma:7.1f} TFLOP/s   torch fp16 matmul 8192^3 "
      f"{torch_tflops:7.1f} TFLOP/s (context only: cuBLAS uses wgmma)")
if not 0.7 <= dram / torch_gbs <= 1.3:
    sys.exit(f"the probe's bandwidth is not within 30% of torch's copy")
EOF
stop_kilnd

start_kilnd "$out/kilnd2.log"
read -r state dram2 l22 mma2 from_cache _ <<< "$(measured)"
echo "restarted kilnd on the same cache: state=$state dram=$dram2 l2=$l22 mma=$mma2 from_cache=$from_cache"
[ "$state" = measured ] && [ "$from_cache" = True ] || fail "the restart did not read the results back"
[ "$dram2" = "$dram" ] && [ "$mma2" = "$mma" ] || fail "the values changed across the restart"
tune 2
if grep -q 'micro-benchmarks starting' "$out/kilnd2.log"; then
  fail "the restarted kilnd measured again"
fi
echo "no re-measurement after the restart (kilnd2.log has no 'micro-benchmarks starting')"
grep 'planned' "$out/kilnd2.log" | tail -1
stop_kilnd
echo "PASS (logs in $out)"
