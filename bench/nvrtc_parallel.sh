#!/usr/bin/env bash
# How NVRTC builds scale on this host: one kiln-opt build alone, then N at once as separate
# processes (kilnd builds them as threads of one process; compare with a sweep's "compiled ...
# ms=" log lines). Usage: bench/nvrtc_parallel.sh [BIN_DIR] (default build/; a device bundle's
# bin/ works with its lib/ on LD_LIBRARY_PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}
now() { date +%s.%N; }
gemm="examples/gemm/gemm.py --bind M=16 --bind N=14336 --bind K=4096 --bind block_M=16
  --bind block_N=256 --bind block_K=128 --bind num_stages=3 --bind threads=128"
attn="examples/attention/flash_attention_fwd.py --bind batch=4 --bind heads=32 --bind seq_len=4096
  --bind dim=128 --bind is_causal=True --bind block_M=128 --bind block_N=32 --bind num_stages=2
  --bind threads=128"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2086
"$bin/kiln-opt" $gemm --emit=cubin --target cuda:sm_90 -o "$out/warm.cubin" # NVRTC loaded once
for name in gemm attn; do
  if [ "$name" = gemm ]; then prog=$gemm; else prog=$attn; fi
  for n in 1 1 4 10 16; do
    s=$(now)
    for i in $(seq "$n"); do
      # shellcheck disable=SC2086
      "$bin/kiln-opt" $prog --emit=cubin --target cuda:sm_90 -o "$out/$i.cubin" &
    done
    wait
    e=$(now)
    awk -v n="$n" -v name="$name" -v s="$s" -v e="$e" \
      'BEGIN { printf "%s: %2d builds at once: %.3f s\n", name, n, e - s }'
  done
done
echo "cpus: $(nproc)"
