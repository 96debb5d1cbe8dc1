#!/usr/bin/env bash
# Explicit warp specialization (T.ws, T.alloc_barrier, T.tma_copy, mbarriers) on a Hopper GPU:
# Kiln's examples/warp_specialize/ GEMMs with --check against their ref_program, and TileLang's
# examples/warp_specialize/ kernels (unchanged; no ref_program) against A @ B, each as the
# sm_90a program (TMA + wgmma) and the sm_90 one (plain copies + mma.sync), at a ragged size,
# 1024^3 and a larger one.
#   bash tests/gpu/warp_specialize_gpu.sh BUNDLE_DIR [TILELANG_WS_DIR]
# BUNDLE_DIR holds bin/kiln-run (scripts/device_bundle.sh); TILELANG_WS_DIR the TileLang files
# (default BUNDLE_DIR/tl; skipped when absent). Exit status: the number of failures.
set -u
bundle=$1
tl=${2:-$bundle/tl}
here=$(cd "$(dirname "$0")/../.." && pwd)
run=$bundle/bin/kiln-run
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
sizes=("--test-bind"
       "--bind M=1024 --bind N=1024 --bind K=1024 --bind block_M=128 --bind block_N=128 --bind block_K=64"
       "--bind M=4000 --bind N=2056 --bind K=1032 --bind block_M=128 --bind block_N=128 --bind block_K=64")
for arch in "sm_90a --gemm wgmma" "sm_90 --gemm mma"; do
  for f in gemm_ws_barrier gemm_ws_ring gemm_ws_split_n gemm_ws_staged; do
    for b in "${sizes[@]}"; do
      # The split kernel gives each warpgroup half of block_N.
      [ "$f" = gemm_ws_split_n ] && b=${b//block_N=128/block_N=256}
      echo "== $f --arch $arch $b"
      # shellcheck disable=SC2086
      "$run" "$here/examples/warp_specialize/$f.py" $b --target cuda:0 --arch $arch --check \
        | grep -E "kernel:|check:" || fail=$((fail + 1))
    done
  done
  for f in barrierpipe_stage2 copy_0_gemm_1 copy_1_gemm_0 copy_gemm_0_1 softpipe_stage2; do
    src=$tl/example_warp_specialize_gemm_$f.py
    if [ ! -f "$src" ]; then
      echo "== TileLang $f: skipped ($src not found)"
      continue
    fi
    for mnk in "200 136 200" "1024 1024 1024" "4096 4096 4096"; do
      read -r m n k <<<"$mnk"
      echo "== TileLang $f --arch $arch M=$m N=$n K=$k"
      # shellcheck disable=SC2086
      "$run" "$src" --bind block_M=128 --bind block_N=128 --bind block_K=64 --bind M="$m" \
        --bind N="$n" --bind K="$k" --target cuda:0 --arch $arch --save A="$tmp/a.npy" \
        --save B="$tmp/b.npy" --save C="$tmp/c.npy" | grep "kernel:" &&
        python3 "$here/tests/support/check_matmul_npy.py" "$tmp/a.npy" "$tmp/b.npy" "$tmp/c.npy" ||
        fail=$((fail + 1))
    done
  done
done
echo "failures: $fail"
exit "$fail"
